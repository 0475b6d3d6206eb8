"""Sitemaps: a streaming, hostile-input-safe parser and a safe fetcher.

``model`` holds the values every part shares; ``parse`` is pure (bytes in, entries out);
``fetch``, ``robots`` and ``walk`` do the network I/O (SSRF checks, robots.txt discovery and
when it cannot be trusted, index recursion under limits and a time cutoff).
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
