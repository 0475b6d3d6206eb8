"""Discover a site's sitemaps and walk them: robots.txt, index recursion, a report.

:func:`discover` reads the ``Sitemap:`` lines of a site's robots.txt (falling back to
``/sitemap.xml``); :func:`walk` fetches sitemaps through a
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

from ada_url import URL, join_url

from changewatch.errors import SitemapError, UnsafeURLError
from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.model import ChildSitemap, Limits, SitemapKind, SitemapURL
from changewatch.sitemaps.netguard import character_refusal, check_url
from changewatch.sitemaps.parse import SitemapParser

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

#: robots.txt is read up to this size (RFC 9309 §2.5: parse at least 500 kibibytes).
ROBOTS_MAX_BYTES = 512_000

_SITEMAP_KEYS = frozenset({"sitemap", "sitemaps", "site-map", "site map"})
_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


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


def robots_sitemaps(body: bytes, base: str) -> list[str]:
    """The sitemap URLs a robots.txt lists, in order, without repeats.

    ``Sitemap:`` lines are matched case-insensitively anywhere in the file, in or out of
    groups (RFC 9309 §2.2.4); ``site-map``/``sitemaps`` typos and a bare absolute URL on
    a line of its own are accepted as crawler-commons does. Relative URLs are resolved
    against ``base`` (the robots.txt URL); comments (``#`` to the end of the line) and
    unusable URLs are dropped. A UTF-8 or UTF-16 byte-order mark is honoured.

    >>> robots_sitemaps(b"User-agent: *\\nSITEMAP : /a.xml # main\\n", "https://x.org/robots.txt")
    ['https://x.org/a.xml']
    """
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            text = body[len(bom) :].decode(encoding, "replace")
            break
    else:
        text = body.decode("utf-8", "replace")
    found: list[str] = []
    for line in text.splitlines():
        line = line.partition("#")[0].strip()
        key, colon, value = line.partition(":")
        key = key.strip().lower()
        if colon and key in _SITEMAP_KEYS:
            candidate = value.strip()
        elif line.lower().startswith(("http://", "https://")) and " " not in line:
            candidate = line
        else:
            continue
        if not candidate or character_refusal(candidate) is not None:
            continue
        try:
            url = check_url(join_url(base, candidate))
        except (ValueError, UnsafeURLError):
            continue
        if url not in found:
            found.append(url)
    return found


def discover(site_url: str, client: SafeClient) -> list[str]:
    """The sitemaps of the site at ``site_url``: its robots.txt's, else ``/sitemap.xml``.

    Any robots.txt failure (4xx, 5xx, network, refused) falls back to ``/sitemap.xml``;
    whatever then fails is reported by :func:`walk`.
    """
    site = URL(check_url(site_url))
    origin = f"{site.protocol}//{site.host}"
    robots = f"{origin}/robots.txt"
    body = bytearray()
    try:
        with client.stream(robots) as response:
            final = response.final_url
            for piece in response.iter_bytes():
                body += piece
                if len(body) >= ROBOTS_MAX_BYTES:
                    del body[ROBOTS_MAX_BYTES:]
                    break
    except SitemapError:
        return [f"{origin}/sitemap.xml"]
    return robots_sitemaps(bytes(body), final) or [f"{origin}/sitemap.xml"]


def starts_for(argument: str, client: SafeClient) -> tuple[list[str], frozenset[str]]:
    """``(start sitemaps, hosts their entries may be on)`` for a ``SITE_OR_SITEMAP_URL``.

    A site is discovered through its robots.txt; its host is allowed for every sitemap
    found there, so cross-host sitemaps listed in robots.txt (sitemaps.org "Sitemaps &
    Cross Submits") are honoured. A sitemap URL stands for itself.
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
    #: ``sitemap_seen`` for a sitemap already read this run, ``sitemap_off_host``).
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
    ) -> None:
        self.report = WalkReport()
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
            self.report.skipped["sitemap_off_host"] += 1
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
            url, max_bytes=limits.max_bytes, max_ratio=limits.max_ratio
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
                entries = parser.close() if piece is None else parser.feed(piece)
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
) -> SitemapWalk:
    """Fetch the ``starts`` sitemaps and every sitemap their indexes list; yield pages.

    Breadth-first; each sitemap URL is fetched at most once per walk (an index listing
    itself, A→B→A cycles and redirects onto a sitemap already read are skipped); indexes
    nest at most ``limits.max_depth`` deep and at most ``limits.max_sitemaps`` sitemaps
    are fetched. A sitemap that fails (fetch error, refused URL, parse error, limit) is
    recorded in ``report.errors`` and the walk goes on. A child sitemap must be on the
    host of the index that lists it, of its start sitemap, or in ``allowed_hosts``.

    Returns a :class:`SitemapWalk`: iterate it for the pages, then read its ``report``.
    """
    return SitemapWalk(
        starts,
        client,
        limits=limits or Limits(),
        progress=progress,
        allowed_hosts=allowed_hosts,
    )
