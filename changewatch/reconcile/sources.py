"""The sitemap source of a reconcile run: discover and walk each site with the safe fetcher.

:class:`WalkSource` adapts :func:`changewatch.sitemaps.walk.walk` (robots.txt discovery,
index recursion, limits, SSRF checks) to the :class:`~changewatch.reconcile.values.SitemapSource`
the reconciliation streams from. Each ``SITE_OR_SITEMAP_URL`` argument is walked on its own,
so completeness is known per argument: a host is *complete* — its vanished pages may be
reported — only if every argument naming it was discovered and walked without an error, a
limit hit or a time limit passing.

Two time limits bound a run against sites that answer slowly on purpose (a server dripping
a byte a second holds each fetch to its total timeout, and an index may list 1,000
sitemaps): ``host_time_limit`` — wall time spent on one host's arguments, discovery and
walk, including reconciling their entries as they stream — and ``run_time_limit`` for the
whole walk. When one passes, the fetch in progress stops, nothing more of the host (or the
run) is fetched, and each host cut short is incomplete, with the error saying which limit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from ada_url import URL

from changewatch.errors import InvalidURLError, SitemapError
from changewatch.reconcile.plan import site_host
from changewatch.reconcile.values import SitemapProblem, WalkOutcome
from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.model import Cutoff, Limits, SitemapURL
from changewatch.sitemaps.netguard import check_url
from changewatch.sitemaps.robots import discover_site
from changewatch.sitemaps.walk import SitemapFetched, WalkReport, is_site_url, walk
from changewatch.urls import CanonPolicy

__all__ = ["DEFAULT_HOST_TIME_LIMIT_S", "DEFAULT_RUN_TIME_LIMIT_S", "WalkSource"]

#: Parser skip reasons that are no skipped page: a kept entry's unreadable lastmod, and a
#: document cut short or followed by junk (errors of the walk, reported as such).
_KEPT_OR_CUT: Final = frozenset({"bad lastmod", "junk after document", "truncated"})

#: Wall time one host's discovery and walk may take (30 minutes: 1,000 sitemaps at under
#: 2 s each, about what a large site's full walk takes; docs/reconcile.md).
DEFAULT_HOST_TIME_LIMIT_S: Final = 1800.0
#: Wall time the walks of one run may take together (2 hours).
DEFAULT_RUN_TIME_LIMIT_S: Final = 7200.0


class WalkSource:
    """Every page the sitemaps of ``arguments`` list, walked through ``client``.

    ``on_sitemap(url, urls)`` is called after each sitemap is read (for a progress display).
    ``host_time_limit`` and ``run_time_limit`` (seconds, ``None``: no limit) are measured on
    the client's clock (``client.clock``).
    """

    def __init__(
        self,
        arguments: Sequence[str],
        client: SafeClient,
        *,
        limits: Limits,
        canon_policy: CanonPolicy | None = None,
        on_sitemap: Callable[[str, int], None] | None = None,
        host_time_limit: float | None = DEFAULT_HOST_TIME_LIMIT_S,
        run_time_limit: float | None = DEFAULT_RUN_TIME_LIMIT_S,
    ) -> None:
        for name, value in (
            ("host_time_limit", host_time_limit),
            ("run_time_limit", run_time_limit),
        ):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive seconds or None, got {value!r}")
        self.host_time_limit = host_time_limit
        self.run_time_limit = run_time_limit
        self._spent: dict[str, float] = {}
        self._run_cutoff: Cutoff | None = None
        self.arguments = list(arguments)
        self._client = client
        self._limits = limits
        self._canon = canon_policy
        self._on_sitemap = on_sitemap
        self._hosts = {argument: site_host(argument, canon_policy) for argument in arguments}
        self._incomplete: set[str] = set()
        self._errors: list[SitemapProblem] = []
        self._sitemaps: Counter[str] = Counter()
        self._skipped_entries: Counter[str] = Counter()
        #: Entries and sitemaps the walks skipped, by reason.
        self.skipped: Counter[str] = Counter()

    @property
    def start_hosts(self) -> frozenset[str]:
        """The hosts of the arguments, known before the walk starts."""
        return frozenset(self._hosts.values())

    def entries(self) -> Iterator[SitemapURL]:
        """Walk each argument in turn and yield its pages."""
        clock = self._client.clock
        if self.run_time_limit is not None:
            self._run_cutoff = Cutoff(
                clock() + self.run_time_limit,
                f"the run's time limit of {self.run_time_limit:g} s",
            )
        for argument in self.arguments:
            host = self._hosts[argument]
            cutoff = self._cutoff(host)
            if cutoff is not None and clock() >= cutoff.at:
                self._fail(host, SitemapProblem(argument, f"not walked: {cutoff.name} passed"))
                continue
            began = clock()
            try:
                yield from self._walk(argument, host, cutoff)
            finally:
                self._spent[host] = self._spent.get(host, 0.0) + clock() - began

    def _cutoff(self, host: str) -> Cutoff | None:
        """The earlier of the host's and the run's time limit, for the next argument of host."""
        cutoffs = [] if self._run_cutoff is None else [self._run_cutoff]
        if self.host_time_limit is not None:
            left = self.host_time_limit - self._spent.get(host, 0.0)
            cutoffs.append(
                Cutoff(
                    self._client.clock() + left,
                    f"the host's time limit of {self.host_time_limit:g} s",
                )
            )
        return min(cutoffs, key=lambda cutoff: cutoff.at, default=None)

    def _fail(self, host: str, problem: SitemapProblem) -> None:
        self._errors.append(problem)
        self._incomplete.add(host)

    def _walk(self, argument: str, host: str, cutoff: Cutoff | None) -> Iterator[SitemapURL]:
        """Discover (a site) and walk one argument; record its errors and completeness."""
        try:
            if is_site_url(argument):
                found = discover_site(argument, self._client, cutoff=cutoff)
                for url, message in found.errors:
                    self._fail(host, SitemapProblem(url, message))
                starts = list(found.sitemaps)
                allowed = frozenset({URL(check_url(argument)).hostname})
            else:
                starts, allowed = [check_url(argument)], frozenset()
        except (SitemapError, InvalidURLError, ValueError) as exc:
            self._fail(host, SitemapProblem(argument, str(exc).removeprefix(f"{argument}: ")))
            return
        if not starts:
            return
        walking = walk(
            starts,
            self._client,
            limits=self._limits,
            progress=self._progress,
            allowed_hosts=allowed,
            cutoff=cutoff,
        )
        yield from walking
        report = walking.report
        self._sitemaps[host] += len(report.sitemaps)
        self._skipped_entries[host] += sum(
            n
            for done in report.sitemaps
            if done.kind != "sitemapindex"  # an index's skips are child sitemaps, not pages
            for reason, n in done.skipped.items()
            if reason not in _KEPT_OR_CUT
        )
        self.skipped.update(report.skipped)
        for url, message in report.errors:
            self._fail(host, SitemapProblem(url, message.removeprefix(f"{url}: ")))

    def outcome(self) -> WalkOutcome:
        """Start hosts, the complete ones, every error and the sitemaps read per host."""
        hosts = frozenset(self._hosts.values())
        return WalkOutcome(
            start_hosts=hosts,
            complete_hosts=hosts - self._incomplete,
            errors=tuple(self._errors),
            sitemaps=dict(self._sitemaps),
            skipped_entries={h: n for h, n in self._skipped_entries.items() if n},
        )

    def _progress(self, fetched: SitemapFetched, report: WalkReport) -> None:
        del report
        if self._on_sitemap is not None:
            self._on_sitemap(fetched.final_url, fetched.urls)
