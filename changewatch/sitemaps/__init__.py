"""Sitemaps: a streaming, hostile-input-safe parser and a safe fetcher.

``model`` holds the values every part shares; ``parse`` is pure (bytes in, entries out);
``fetch`` and ``walk`` do the network I/O (robots.txt discovery, index recursion, SSRF checks).
"""

from changewatch.sitemaps.model import ChildSitemap, Limits, SitemapKind, SitemapURL

__all__ = ["ChildSitemap", "Limits", "SitemapKind", "SitemapURL"]
