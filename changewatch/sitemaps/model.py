"""Values shared by the sitemap parser, the fetcher and the reconciliation job."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from changewatch.errors import ConfigError

#: What a document turned out to be.
SitemapKind = Literal["urlset", "sitemapindex", "text", "rss", "atom"]


@dataclass(frozen=True, slots=True)
class SitemapURL:
    """One page listed by a sitemap or feed."""

    #: Absolute http(s) URL as listed (whitespace trimmed, XML escapes decoded).
    loc: str
    #: The entry's ``lastmod`` (or feed date) as timezone-aware UTC, if it had a valid one.
    lastmod: datetime | None
    #: URL of the sitemap that listed it.
    sitemap: str


@dataclass(frozen=True, slots=True)
class ChildSitemap:
    """One sitemap listed by a sitemap index."""

    loc: str
    lastmod: datetime | None
    #: URL of the index that listed it.
    sitemap: str


@dataclass(frozen=True, slots=True)
class Cutoff:
    """A moment after which a walk starts no request and every wait ends, and what it is.

    ``at`` is on the fetching client's monotonic clock (``SafeClient.clock``); ``name`` is
    how the errors it causes say what passed (``"the host's time limit of 1800 s"``).
    """

    at: float
    name: str


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits enforced while streaming; every one is configurable.

    The defaults are the sitemaps.org protocol's limits (50,000 URLs and 50 MiB per
    sitemap, after decompression) plus guards against decompression bombs and runaway
    index trees.
    """

    max_urls: int = 50_000
    max_bytes: int = 52_428_800
    #: Largest decompressed/compressed size ratio tolerated for a gzip body.
    max_ratio: int = 100
    #: Deepest chain of sitemap indexes followed (the root sitemap is depth 0).
    max_depth: int = 5
    #: Most sitemaps fetched for one site in one run.
    max_sitemaps: int = 1_000
    max_redirects: int = 5

    def __post_init__(self) -> None:
        for name in ("max_urls", "max_bytes", "max_ratio", "max_depth", "max_sitemaps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"sitemap limit {name} must be a positive integer, got {value!r}")
        if not isinstance(self.max_redirects, int) or not 0 <= self.max_redirects <= 20:
            raise ConfigError(
                f"sitemap limit max_redirects must be an integer 0..20, got {self.max_redirects!r}"
            )
