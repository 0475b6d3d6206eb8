"""The demo job: crawl the bundled site twice, changing it in between, and report every decision.

:func:`run_demo` is the whole job on the embedded default (a SQLite file and file seen-sets in
a working directory), offline: the site is served on ``127.0.0.1``. It returns a
:class:`DemoReport`; rendering it is the CLI's business.

The crawler is a plain breadth-first crawler, as a user of changewatch would write one:
``mark_seen`` before enqueueing a URL, fetch, ``should_parse``, and extract links only from
pages that need parsing — an unchanged page's links are the ones already known. Each crawl has
its own seen-set, since the seen-set answers "already queued in *this* crawl"; the second
crawl starts from the home page plus every page the first one stored, as a re-crawl does.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urldefrag, urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser

from changewatch.demo.site import HOME_PATH, DemoServer, Site, changed_site, first_site
from changewatch.errors import ChangewatchError, ConfigError
from changewatch.observe import Observer
from changewatch.values import Version
from changewatch.watch import ChangeWatch

__all__ = [
    "DEMO_FETCH_TIMEOUT_S",
    "DEMO_MAX_PAGES",
    "OUTCOMES",
    "CrawlReport",
    "DemoReport",
    "PageHistory",
    "PageOutcome",
    "run_demo",
]

#: Seconds to wait for the local demo site.
DEMO_FETCH_TIMEOUT_S = 10.0
#: A crawl stops after this many fetches (the bundled site has ten pages).
DEMO_MAX_PAGES = 100
#: Every outcome a fetched page can have: the four decisions, and ``gone`` for a 404.
OUTCOMES = ("new", "unchanged", "minor", "changed", "gone")


@dataclass(frozen=True, slots=True)
class PageOutcome:
    """One fetch of a crawl: the HTTP status and what changewatch decided.

    ``kind`` is the decision's kind, or ``"gone"`` when the page answered 404 (then there
    is no decision). ``duplicate_of`` is the path of another page with the same content;
    ``decided_by`` is the decision's ``path`` (raw, normalised, simhash or new); ``change``
    says what the demo did to the page before this crawl.
    """

    path: str
    url: str
    status: int
    kind: str
    distance: int | None
    duplicate_of: str | None
    decided_by: str | None
    size: int
    change: str


@dataclass(frozen=True, slots=True)
class CrawlReport:
    """One crawl of the site, in fetch order."""

    number: int
    title: str
    pages: tuple[PageOutcome, ...]

    def counts(self) -> dict[str, int]:
        """Pages per outcome, every outcome listed (in :data:`OUTCOMES` order)."""
        return {kind: sum(p.kind == kind for p in self.pages) for kind in OUTCOMES}


@dataclass(frozen=True, slots=True)
class PageHistory:
    """The stored versions of one page after the demo, oldest first."""

    path: str
    url: str
    versions: tuple[Version, ...]


@dataclass(frozen=True, slots=True)
class DemoReport:
    """Everything the demo did: where, the two crawls, and the history of edited pages."""

    workdir: Path
    database_url: str
    site_url: str
    crawls: tuple[CrawlReport, ...]
    histories: tuple[PageHistory, ...]

    def kinds(self) -> set[str]:
        """Every outcome that occurred in any crawl."""
        return {p.kind for crawl in self.crawls for p in crawl.pages}


def run_demo(
    workdir: Path,
    *,
    progress: Callable[[str], None] | None = None,
    observer: Observer | None = None,
) -> DemoReport:
    """Serve the bundled site, crawl it, change it, crawl it again; return the report.

    ``workdir`` must be empty or absent; it receives ``cw.db`` (the SQLite store) and one
    seen-set file per crawl. ``progress`` is called with a line before each step;
    ``observer`` is handed to both crawls' watches (metrics, see :mod:`changewatch.observe`).
    """
    say = progress or (lambda _line: None)
    workdir = _prepare_workdir(workdir)
    database_url = f"sqlite:///{workdir / 'cw.db'}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # local: no proxy
    with DemoServer(first_site()) as server:
        base = server.base_url
        home = base + HOME_PATH
        say(f"demo site served at {base}")

        say(f"crawl 1: {home}")
        with ChangeWatch(database_url, _seen_url(workdir, 1), observer=observer) as watch:
            first = _crawl(watch, opener, base, [home], server.site)
        known = [p.url for p in first if p.status == 200]

        server.site = changed_site()
        say("changed the site: noise everywhere, an edit, a rewrite, a page added, one removed")

        say(f"crawl 2: {home} and the {len(known)} known pages")
        with ChangeWatch(database_url, _seen_url(workdir, 2), observer=observer) as watch:
            second = _crawl(watch, opener, base, [home, *known], server.site)
            histories = tuple(
                PageHistory(p.path, p.url, tuple(watch.history(p.url)))
                for p in second
                if p.kind in ("minor", "changed")
            )
    return DemoReport(
        workdir=workdir,
        database_url=database_url,
        site_url=base,
        crawls=(
            CrawlReport(1, "first crawl", tuple(first)),
            CrawlReport(2, "second crawl, after the site changed", tuple(second)),
        ),
        histories=histories,
    )


def _prepare_workdir(workdir: Path) -> Path:
    workdir = workdir.resolve()
    if workdir.exists():
        if not workdir.is_dir():
            raise ConfigError(f"demo directory {workdir} is not a directory")
        if any(workdir.iterdir()):
            raise ConfigError(f"demo directory {workdir} is not empty")
    try:
        workdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create demo directory {workdir}: {exc.strerror}") from exc
    return workdir


def _seen_url(workdir: Path, crawl: int) -> str:
    return "file:" + quote(str(workdir / f"crawl-{crawl}.seen"))


def _crawl(
    watch: ChangeWatch,
    opener: urllib.request.OpenerDirector,
    base: str,
    seeds: Iterable[str],
    site: Site,
) -> list[PageOutcome]:
    """Breadth-first crawl of ``base`` from ``seeds``; one outcome per fetched URL."""
    queue: deque[str] = deque(url for url in seeds if watch.mark_seen(url))
    outcomes: list[PageOutcome] = []
    while queue and len(outcomes) < DEMO_MAX_PAGES:
        url = queue.popleft()
        path = url[len(base) :] or "/"
        status, body, content_type = _fetch(opener, url)
        change = site.changes.get(path, "")
        if status != 200:
            kind = "gone" if status in (404, 410) else f"http {status}"
            outcomes.append(PageOutcome(path, url, status, kind, None, None, None, 0, change))
            continue
        decision = watch.should_parse(url, body, content_type=content_type)
        duplicate = decision.duplicate_of
        if duplicate is not None and duplicate.startswith(base):
            duplicate = duplicate[len(base) :]
        outcomes.append(
            PageOutcome(
                path,
                url,
                status,
                decision.kind,
                decision.distance,
                duplicate,
                decision.path,
                len(body),
                change,
            )
        )
        if decision:  # parse only what changed; an unchanged page's links are known
            queue.extend(link for link in _links(url, body, base) if watch.mark_seen(link))
    return outcomes


def _fetch(opener: urllib.request.OpenerDirector, url: str) -> tuple[int, bytes, str | None]:
    """GET ``url``: status, body and ``Content-Type`` (an HTTP error status is an answer)."""
    try:
        with opener.open(url, timeout=DEMO_FETCH_TIMEOUT_S) as response:
            return int(response.status), response.read(), response.headers.get("Content-Type")
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, b"", exc.headers.get("Content-Type")
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ChangewatchError(f"demo: fetching {url} failed: {reason}") from exc


def _links(url: str, body: bytes, base: str) -> list[str]:
    """Absolute same-site links of a page, fragments dropped, in document order."""
    host = urlsplit(base).netloc
    links = []
    for node in LexborHTMLParser(body.decode("utf-8", "replace")).css("a[href]"):
        href = node.attributes.get("href")
        if not href:
            continue
        link = urldefrag(urljoin(url, href.strip())).url
        parts = urlsplit(link)
        if parts.scheme == "http" and parts.netloc == host:
            links.append(link)
    return links
