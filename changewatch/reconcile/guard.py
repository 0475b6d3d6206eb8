"""The shrink guard: when a complete walk's listing is too small to believe — pure, no I/O.

A walk can finish without an error and still be wrong: an empty ``urlset`` from a generator
that failed half-way, an index listing only itself, a child sitemap that came back empty, a
CDN serving a stale copy. Taken at its word, such a listing reports most of a host's stored
pages *vanished* — the finding users delete, alert and re-crawl on. :func:`shrink_verdict`
says when the listing is suspect, and the job then withholds the host's vanished pages
(unless the user forces them):

* the sitemaps list **no page** of the host while it has stored pages;
* more than ``max_share`` of the host's stored pages would **newly** vanish: not counting
  the pages the host's last accepted run already reported vanished (pages a site removed
  long ago that the user keeps stored do not trip the guard run after run);
* the host's listing **shrank** by more than ``max_share`` since its last accepted run
  (``reconcile_hosts``: the last run whose vanished pages were computed).

The share rules apply from ``min_pages`` stored (or previously listed) pages: on a host of
three pages one removal is a third. docs/reconcile.md ("The shrink guard") justifies the
defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from changewatch.errors import ConfigError

__all__ = [
    "DEFAULT_GUARD_MIN_PAGES",
    "DEFAULT_MAX_VANISHED_SHARE",
    "HostHistory",
    "ShrinkGuard",
    "shrink_verdict",
]

#: Largest share of a host's stored pages that may newly vanish in one run (20%).
DEFAULT_MAX_VANISHED_SHARE: Final = 0.2
#: Hosts with fewer stored (or previously listed) pages are judged by the empty rule only.
DEFAULT_GUARD_MIN_PAGES: Final = 10


@dataclass(frozen=True, slots=True)
class ShrinkGuard:
    """How much of a host may vanish in one run before the listing is not believed."""

    max_share: float = DEFAULT_MAX_VANISHED_SHARE
    min_pages: int = DEFAULT_GUARD_MIN_PAGES

    def __post_init__(self) -> None:
        share = self.max_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ConfigError(f"shrink guard max_share must be in (0, 1], got {share!r}")
        pages = self.min_pages
        if isinstance(pages, bool) or not isinstance(pages, int) or pages < 0:
            raise ConfigError(f"shrink guard min_pages must be an integer >= 0, got {pages!r}")


@dataclass(frozen=True, slots=True)
class HostHistory:
    """The host's last accepted run (its vanished pages were computed), from
    ``reconcile_hosts``."""

    run_id: int
    #: Distinct pages the host's sitemaps listed then (missing + stale + fresh).
    listed: int


def shrink_verdict(
    guard: ShrinkGuard,
    *,
    stored: int,
    listed: int,
    vanished: int,
    newly: int | None = None,
    previous: HostHistory | None = None,
) -> str | None:
    """Why a host's ``vanished`` count must not be believed, or ``None`` when it may be.

    ``stored``: the host's stored pages; ``listed``: distinct pages of the host its sitemaps
    listed (missing + stale + fresh); ``vanished``: stored pages none of them listed;
    ``newly``: those of them the ``previous`` accepted run did not report vanished (all of
    them when omitted).

    >>> guard = ShrinkGuard()
    >>> shrink_verdict(guard, stored=20, listed=0, vanished=20)
    'the sitemaps list no page of the host: all 20 stored pages would vanish'
    >>> shrink_verdict(guard, stored=100, listed=95, vanished=5) is None
    True
    >>> shrink_verdict(guard, stored=100, listed=50, vanished=50)
    '50 of 100 stored pages (50%) would vanish, more than the shrink guard allows (20%)'
    >>> shrink_verdict(guard, stored=100, listed=50, vanished=50, newly=5,
    ...                previous=HostHistory(run_id=7, listed=55)) is None
    True
    >>> print(shrink_verdict(guard, stored=100, listed=50, vanished=5,
    ...                      previous=HostHistory(run_id=7, listed=100))[:50])
    the listing shrank from 100 pages (run 7) to 50 (-
    """
    if vanished <= 0:
        return None
    if listed == 0:
        return f"the sitemaps list no page of the host: all {stored} stored pages would vanish"
    limit = f"more than the shrink guard allows ({guard.max_share:.0%})"
    new = vanished if newly is None else newly
    if stored >= guard.min_pages and new > guard.max_share * stored:
        since = "" if new == vanished or previous is None else f" since run {previous.run_id}"
        return f"{new} of {stored} stored pages ({new / stored:.0%}) would vanish{since}, {limit}"
    if (
        previous is not None
        and previous.listed >= guard.min_pages
        and listed < (1 - guard.max_share) * previous.listed
    ):
        drop = (listed - previous.listed) / previous.listed
        return (
            f"the listing shrank from {previous.listed} pages (run {previous.run_id}) to "
            f"{listed} ({drop:.0%}), {limit}"
        )
    return None
