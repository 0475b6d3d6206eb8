"""The sitemap source of a reconcile run: discover and walk each site with the safe fetcher.

:class:`WalkSource` adapts :func:`changewatch.sitemaps.walk.walk` (robots.txt discovery,
index recursion, limits, SSRF checks) to the :class:`~changewatch.reconcile.values.SitemapSource`
the reconciliation streams from. Each ``SITE_OR_SITEMAP_URL`` argument is walked on its own,
so completeness is known per argument: a host is *complete* — its vanished pages may be
reported — only if every argument naming it was walked without an error or a limit hit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence

from changewatch.errors import InvalidURLError, SitemapError
from changewatch.reconcile.plan import site_host
from changewatch.reconcile.values import SitemapProblem, WalkOutcome
from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.model import Limits, SitemapURL
from changewatch.sitemaps.walk import SitemapFetched, WalkReport, starts_for, walk
from changewatch.urls import CanonPolicy

__all__ = ["WalkSource"]


class WalkSource:
    """Every page the sitemaps of ``arguments`` list, walked through ``client``.

    ``on_sitemap(url, urls)`` is called after each sitemap is read (for a progress display).
    """

    def __init__(
        self,
        arguments: Sequence[str],
        client: SafeClient,
        *,
        limits: Limits,
        canon_policy: CanonPolicy | None = None,
        on_sitemap: Callable[[str, int], None] | None = None,
    ) -> None:
        self.arguments = list(arguments)
        self._client = client
        self._limits = limits
        self._canon = canon_policy
        self._on_sitemap = on_sitemap
        self._hosts = {argument: site_host(argument, canon_policy) for argument in arguments}
        self._incomplete: set[str] = set()
        self._errors: list[SitemapProblem] = []
        self._sitemaps: Counter[str] = Counter()
        #: Entries and sitemaps the walks skipped, by reason.
        self.skipped: Counter[str] = Counter()

    @property
    def start_hosts(self) -> frozenset[str]:
        """The hosts of the arguments, known before the walk starts."""
        return frozenset(self._hosts.values())

    def entries(self) -> Iterator[SitemapURL]:
        """Walk each argument in turn and yield its pages."""
        for argument in self.arguments:
            host = self._hosts[argument]
            try:
                starts, allowed = starts_for(argument, self._client)
            except (SitemapError, InvalidURLError, ValueError) as exc:
                self._errors.append(
                    SitemapProblem(argument, str(exc).removeprefix(f"{argument}: "))
                )
                self._incomplete.add(host)
                continue
            walking = walk(
                starts,
                self._client,
                limits=self._limits,
                progress=self._progress,
                allowed_hosts=allowed,
            )
            yield from walking
            report = walking.report
            self._sitemaps[host] += len(report.sitemaps)
            self.skipped.update(report.skipped)
            self._errors.extend(
                SitemapProblem(url, message.removeprefix(f"{url}: "))
                for url, message in report.errors
            )
            if not report.complete:
                self._incomplete.add(host)

    def outcome(self) -> WalkOutcome:
        """Start hosts, the complete ones, every error and the sitemaps read per host."""
        hosts = frozenset(self._hosts.values())
        return WalkOutcome(
            start_hosts=hosts,
            complete_hosts=hosts - self._incomplete,
            errors=tuple(self._errors),
            sitemaps=dict(self._sitemaps),
        )

    def _progress(self, fetched: SitemapFetched, report: WalkReport) -> None:
        del report
        if self._on_sitemap is not None:
            self._on_sitemap(fetched.final_url, fetched.urls)
