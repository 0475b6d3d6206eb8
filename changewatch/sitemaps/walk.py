"""Walk a site's sitemaps: index recursion, limits, a time cutoff, a report.

Discovery (robots.txt) is :mod:`changewatch.sitemaps.robots` (``discover`` and
``robots_sitemaps`` are importable from here too); :func:`walk` fetches sitemaps through a
:class:`~changewatch.sitemaps.fetch.SafeClient`, streams them through the parser, follows
sitemap indexes (depth-limited, each sitemap fetched once per run, at most
``Limits.max_sitemaps``) and yields every listed page. Its :class:`WalkReport` tells the
reconciler what was fetched, what was skipped and why, and whether the walk was complete:
a host whose sitemaps failed must not have pages reported as vanished.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from ada_url import URL

from changewatch.errors import SitemapError, UnsafeURLError
from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.model import ChildSitemap, Cutoff, Limits, SitemapKind, SitemapURL
from changewatch.sitemaps.netguard import check_url
from changewatch.sitemaps.parse import SitemapParser
from changewatch.sitemaps.robots import ROBOTS_MAX_BYTES, discover, robots_sitemaps

__all__ = [
    "ROBOTS_MAX_BYTES",
    "SitemapFetched",
    "SitemapWalk",
    "WalkReport",
    "discover",
    "is_site_url",
    "robots_sitemaps",
    "starts_for",
    "walk",
]


#: Skip reasons of the parser that lose no entry: the entry was kept (its date was bad), or
#: the document had ended (junk after it), or is reported as an error already (truncated).
_NOT_LOST = frozenset({"bad lastmod", "junk after document", "truncated"})


def _message(url: str, error: SitemapError) -> str:
    """The error's text without a leading repeat of ``url`` (kept when it names another)."""
    text = str(error)
    return text.removeprefix(f"{url}: ")


def _host(url: str) -> str:
    return URL(url).hostname


def _host_name(name: str) -> str:
    """A host name as URLs carry it: lower case, IDNA, IPv4 dotted."""
    try:
        return URL(f"http://{name}/").hostname
    except ValueError:
        return name.lower()


def is_site_url(url: str) -> bool:
    """Whether a ``SITE_OR_SITEMAP_URL`` argument names a site (path ``/`` or empty).

    >>> is_site_url("https://example.com"), is_site_url("https://example.com/")
    (True, True)
    >>> is_site_url("https://example.com/sitemap.xml")
    False
    """
    return URL(check_url(url)).pathname in ("", "/")


def starts_for(argument: str, client: SafeClient) -> tuple[list[str], frozenset[str]]:
    """``(start sitemaps, hosts their entries may be on)`` for a ``SITE_OR_SITEMAP_URL``.

    A site is discovered through its robots.txt; its host is allowed for every sitemap
    found there, so cross-host sitemaps listed in robots.txt (sitemaps.org "Sitemaps &
    Cross Submits") are honoured. A sitemap URL stands for itself. Raises
    :class:`~changewatch.errors.FetchError` when the site's sitemaps cannot be known
    (:func:`~changewatch.sitemaps.robots.discover`).
    """
    if is_site_url(argument):
        return discover(argument, client), frozenset({_host(check_url(argument))})
    return [check_url(argument)], frozenset()


@dataclass(frozen=True, slots=True)
class SitemapFetched:
    """One sitemap read to its end."""

    url: str
    final_url: str
    kind: SitemapKind
    depth: int
    urls: int
    children: int
    bytes_in: int
    bytes_out: int
    skipped: dict[str, int]


@dataclass(slots=True)
class WalkReport:
    """What a walk fetched, skipped and failed at."""

    sitemaps: list[SitemapFetched] = field(default_factory=list)
    #: Skipped entries and sitemaps by reason (the parsers' reasons plus the walker's:
    #: ``sitemap_seen`` for a sitemap already read this run, ``sitemap_off_host`` for a
    #: child on another host, which is also an error: its pages are unknown).
    skipped: Counter[str] = field(default_factory=Counter)
    #: ``(sitemap URL, message)`` for every sitemap that failed or was not fetched.
    errors: list[tuple[str, str]] = field(default_factory=list)
    urls: int = 0

    @property
    def complete(self) -> bool:
        """True when every sitemap found was read to its end (no error, no limit hit)."""
        return not self.errors


class SitemapWalk(Iterator[SitemapURL]):
    """The iterator :func:`walk` returns; ``report`` fills in as it runs."""

    def __init__(
        self,
        starts: Iterable[str],
        client: SafeClient,
        *,
        limits: Limits,
        progress: Callable[[SitemapFetched, WalkReport], None] | None,
        allowed_hosts: Iterable[str],
        cutoff: Cutoff | None = None,
    ) -> None:
        self.report = WalkReport()
        self._cutoff = cutoff
        self._client = client
        self._limits = limits
        self._progress = progress
        self._extra_hosts = frozenset(_host_name(name) for name in allowed_hosts)
        self._queue: deque[tuple[str, int, frozenset[str]]] = deque()
        self._seen: set[str] = set()
        for start in starts:
            self._enqueue(start, 0, self._extra_hosts, parent=None)
        self._entries = self._run()

    def __next__(self) -> SitemapURL:
        return next(self._entries)

    def _enqueue(self, url: str, depth: int, hosts: frozenset[str], parent: str | None) -> None:
        try:
            url = check_url(url)
        except UnsafeURLError as exc:
            self.report.errors.append((url, _message(url, exc)))
            return
        if url in self._seen:
            self.report.skipped["sitemap_seen"] += 1
            return
        if parent is not None and hosts and _host(url) not in hosts:
            # sitemaps.org: an index lists sitemaps of its own host. Not fetched (a site may
            # not make us read another's), but the pages it lists are unknown, not absent.
            # (The parser, given the same hosts, normally skips such a child first.)
            self.report.skipped["sitemap_off_host"] += 1
            self.report.errors.append(
                (
                    url,
                    f"not fetched: a child sitemap on another host than the index {parent} "
                    "that lists it (sitemaps.org: an index lists sitemaps of its own host; "
                    "list it in the site's robots.txt to vouch for it); its pages are unknown",
                )
            )
            return
        self._seen.add(url)
        if depth > self._limits.max_depth:
            self.report.errors.append(
                (url, f"not fetched: index nesting deeper than max_depth {self._limits.max_depth}")
            )
            return
        self._queue.append((url, depth, hosts))

    def _run(self) -> Iterator[SitemapURL]:
        fetched = 0
        while self._queue:
            url, depth, hosts = self._queue.popleft()
            cutoff = self._cutoff
            if cutoff is not None and self._client.clock() >= cutoff.at:
                self.report.errors.append(
                    (
                        url,
                        f"not fetched: {cutoff.name} passed ({len(self._queue) + 1} sitemaps left)",
                    )
                )
                self._queue.clear()
                break
            if fetched >= self._limits.max_sitemaps:
                self.report.errors.append(
                    (
                        url,
                        f"not fetched: max_sitemaps {self._limits.max_sitemaps} reached "
                        f"({len(self._queue) + 1} sitemaps left)",
                    )
                )
                self._queue.clear()
                break
            fetched += 1
            try:
                yield from self._read(url, depth, hosts)
            except SitemapError as exc:
                self.report.errors.append((url, _message(url, exc)))

    def _read(self, url: str, depth: int, hosts: frozenset[str]) -> Iterator[SitemapURL]:
        limits = self._limits
        with self._client.stream(
            url, max_bytes=limits.max_bytes, max_ratio=limits.max_ratio, cutoff=self._cutoff
        ) as response:
            final = response.final_url
            if final != url and final in self._seen:
                self.report.skipped["sitemap_seen"] += 1
                return
            self._seen.add(final)
            allowed = hosts | {_host(url), _host(final)}
            parser = SitemapParser(
                final,
                limits=limits,
                allowed_hosts=allowed,
                content_type=response.content_type,
                gzipped=False if response.gzip_decoded else None,
            )
            urls = children = 0
            pieces = response.iter_bytes()
            while True:
                piece = next(pieces, None)
                entries = parser.close() if piece is None else parser.feed_iter(piece)
                for entry in entries:
                    if isinstance(entry, ChildSitemap):
                        children += 1
                        self._enqueue(entry.loc, depth + 1, allowed, parent=final)
                    else:
                        urls += 1
                        self.report.urls += 1
                        yield entry
                if piece is None:
                    break
        assert parser.kind is not None  # close() raises when no kind was found
        done = SitemapFetched(
            url=url,
            final_url=final,
            kind=parser.kind,
            depth=depth,
            urls=urls,
            children=children,
            bytes_in=parser.bytes_in,
            bytes_out=parser.bytes_out,
            skipped=dict(parser.skipped),
        )
        self.report.sitemaps.append(done)
        self.report.skipped.update(parser.skipped)
        lost = {reason: n for reason, n in parser.skipped.items() if reason not in _NOT_LOST}
        if parser.kind == "sitemapindex" and lost:  # a child never read lists unknown pages
            reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(lost.items()))
            note = (
                " (sitemaps.org: an index lists sitemaps of its own host; a robots.txt "
                "Sitemap: line vouches for another)"
                if "off-host" in lost
                else ""
            )
            self.report.errors.append(
                (
                    url,
                    f"{sum(lost.values())} of its child sitemaps not read ({reasons}): the "
                    f"pages they list are unknown{note}",
                )
            )
        if parser.truncated:  # entries before the break were yielded; absence means nothing
            detail = _message(url, parser.error) if parser.error else "the document breaks off"
            self.report.errors.append((url, f"truncated: {detail}"))
        if self._progress is not None:
            self._progress(done, self.report)


def walk(
    starts: Iterable[str],
    client: SafeClient,
    *,
    limits: Limits | None = None,
    progress: Callable[[SitemapFetched, WalkReport], None] | None = None,
    allowed_hosts: Iterable[str] = (),
    cutoff: Cutoff | None = None,
) -> SitemapWalk:
    """Fetch the ``starts`` sitemaps and every sitemap their indexes list; yield pages.

    Breadth-first; each sitemap URL is fetched at most once per walk (an index listing
    itself, A→B→A cycles and redirects onto a sitemap already read are skipped); indexes
    nest at most ``limits.max_depth`` deep and at most ``limits.max_sitemaps`` sitemaps
    are fetched. A sitemap that fails (fetch error, refused URL, parse error, limit) is
    recorded in ``report.errors`` and the walk goes on. A child sitemap must be on the
    host of the index that lists it, of its start sitemap, or in ``allowed_hosts``; one on
    another host is not fetched, and is an error. After ``cutoff`` no sitemap is fetched
    and the one being read stops: both are errors (``TimeLimitError`` for the one read).

    Returns a :class:`SitemapWalk`: iterate it for the pages, then read its ``report``.
    """
    return SitemapWalk(
        starts,
        client,
        limits=limits or Limits(),
        progress=progress,
        allowed_hosts=allowed_hosts,
        cutoff=cutoff,
    )
