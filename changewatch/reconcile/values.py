"""The values of a sitemap reconciliation: sources, walk outcomes, stored pages, findings,
per-host results — pure, no I/O.

Shared by the job (:mod:`changewatch.reconcile.job`, which computes them), its sources
(:mod:`changewatch.reconcile.sources`), the store's queries
(:mod:`changewatch.store.reconcile`) and the command line (which prints them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from changewatch.sitemaps.model import SitemapURL

__all__ = [
    "Finding",
    "HostResult",
    "LastmodTrust",
    "ReconcileResult",
    "SitemapProblem",
    "SitemapSource",
    "StaticSource",
    "StoredPage",
    "Verdict",
    "WalkOutcome",
]

Verdict = Literal["agrees", "ahead", "behind"]


@dataclass(frozen=True, slots=True)
class StoredPage:
    """What the store holds of one listed page."""

    url_digest: bytes
    host: str
    last_seen: datetime
    last_changed: datetime
    version_count: int
    #: ``last_seen`` of the version before the current one (``None`` for a first version):
    #: the last fetch that still saw the old content.
    previous_last_seen: datetime | None


@dataclass(frozen=True, slots=True)
class Finding:
    """One row of ``reconcile_findings``."""

    kind: str
    host: str
    #: The URL as the URL-storage policy allows (``None`` under ``none``).
    url: str | None
    url_digest: bytes
    sitemap_lastmod: datetime | None = None
    stored_last_seen: datetime | None = None
    sitemap: str | None = None


@dataclass(slots=True)
class LastmodTrust:
    """Counts of lastmod verdicts (:mod:`changewatch.reconcile.plan`) over a host's entries;
    ``trust`` is agrees/comparable."""

    agrees: int = 0
    ahead: int = 0
    behind: int = 0

    @property
    def comparable(self) -> int:
        """Entries whose ``lastmod`` the history could judge."""
        return self.agrees + self.ahead + self.behind

    @property
    def trust(self) -> float | None:
        """Share of comparable entries whose ``lastmod`` agrees; ``None`` with none to judge.

        >>> LastmodTrust(agrees=3, ahead=1).trust
        0.75
        """
        return self.agrees / self.comparable if self.comparable else None

    def add(self, verdict: Verdict | None) -> None:
        """Count one verdict (``None`` is not counted)."""
        if verdict is not None:
            setattr(self, verdict, getattr(self, verdict) + 1)


@dataclass(frozen=True, slots=True)
class SitemapProblem:
    """A sitemap (or robots.txt) that could not be read, and why."""

    sitemap: str
    error: str


@dataclass(frozen=True, slots=True)
class WalkOutcome:
    """What a sitemap source reports once its entries are exhausted."""

    #: Hosts of the starting URLs; every one gets a row in the result, even with no entry.
    start_hosts: frozenset[str]
    #: Hosts whose every walk completed without an error: vanished is computed for these.
    complete_hosts: frozenset[str]
    errors: tuple[SitemapProblem, ...] = ()
    #: Sitemaps read per host of the starting URLs.
    sitemaps: dict[str, int] = field(default_factory=dict)
    #: Page entries the sitemap parser skipped per host of the starting URLs (an off-host or
    #: malformed ``<loc>``, a missing one): counted in the host's ``invalid`` like entries
    #: whose URL fails canonicalisation.
    skipped_entries: dict[str, int] = field(default_factory=dict)


class SitemapSource(Protocol):
    """Where the entries come from: a walk of sites' sitemaps, or a list in tests."""

    def entries(self) -> Iterator[SitemapURL]:
        """Every listed page, streamed."""
        ...

    def outcome(self) -> WalkOutcome:
        """Completeness and errors; valid once :meth:`entries` is exhausted."""
        ...


@dataclass(slots=True)
class StaticSource:
    """A :class:`SitemapSource` over entries already in hand (tests, other tools)."""

    listed: Sequence[SitemapURL]
    start_hosts: frozenset[str]
    complete_hosts: frozenset[str] | None = None
    errors: tuple[SitemapProblem, ...] = ()

    def entries(self) -> Iterator[SitemapURL]:
        """The entries as given."""
        return iter(self.listed)

    def outcome(self) -> WalkOutcome:
        """Every start host complete unless ``complete_hosts`` says otherwise."""
        complete = self.start_hosts if self.complete_hosts is None else self.complete_hosts
        return WalkOutcome(self.start_hosts, complete, self.errors)


@dataclass(slots=True)
class HostResult:
    """The reconciliation of one host."""

    host: str
    listed: int = 0
    missing: int = 0
    stale: int = 0
    fresh: int = 0
    vanished: int = 0
    #: Entries skipped: their URL failed canonicalisation, or the sitemap parser refused the
    #: entry (an off-host, malformed or missing ``<loc>``).
    invalid: int = 0
    #: Entries skipped because the same canonical URL was listed before.
    duplicates: int = 0
    sitemaps: int = 0
    vanished_checked: bool = False
    trust: LastmodTrust = field(default_factory=LastmodTrust)
    errors: list[SitemapProblem] = field(default_factory=list)
    #: Stored pages of the host, counted when its vanished pages were considered (``None``
    #: for a host whose walk was incomplete: they were not counted).
    stored: int | None = None
    #: Why vanished was not computed (``None`` when it was): the walk was incomplete, a time
    #: limit passed, or the shrink guard (:mod:`changewatch.reconcile.guard`) tripped.
    vanished_withheld: str | None = None
    #: What the shrink guard found, also when ``force_vanished`` overrode it.
    shrink: str | None = None

    @property
    def distinct_listed(self) -> int:
        """Distinct pages of the host its sitemaps listed (each is missing, stale or fresh)."""
        return self.missing + self.stale + self.fresh

    def counts(self) -> dict[str, int]:
        """The four totals of this host."""
        return {
            "missing": self.missing,
            "stale": self.stale,
            "vanished": self.vanished,
            "fresh": self.fresh,
        }


@dataclass(slots=True)
class ReconcileResult:
    """The reconciliation of every host of a run."""

    hosts: dict[str, HostResult]
    errors: list[SitemapProblem]
    #: ``complete``, ``failed`` (a site yielded nothing readable) or ``interrupted``.
    status: str = "complete"
    run_id: int | None = None
    #: The URL-storage policy; under ``none`` vanished pages are known by digest only.
    url_policy: str = "full"

    def totals(self) -> dict[str, int]:
        """``missing``, ``stale``, ``vanished`` and ``fresh`` over every host."""
        sums = dict.fromkeys(("missing", "stale", "vanished", "fresh"), 0)
        for host in self.hosts.values():
            for kind, n in host.counts().items():
                sums[kind] += n
        return sums
