"""Sitemaps: a streaming, hostile-input-safe parser and a safe fetcher.

``model`` holds the values every part shares; ``parse`` is pure (bytes in, entries out);
``fetch`` and ``walk`` do the network I/O (robots.txt discovery, index recursion, SSRF checks).
"""

from changewatch.sitemaps.model import ChildSitemap, Limits, SitemapKind, SitemapURL
from changewatch.sitemaps.parse import ParsedSitemap, SitemapParser, parse_lastmod, parse_sitemap

__all__ = [
    "ChildSitemap",
    "Limits",
    "ParsedSitemap",
    "SitemapKind",
    "SitemapParser",
    "SitemapURL",
    "parse_lastmod",
    "parse_sitemap",
]
