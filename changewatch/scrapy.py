"""Scrapy integration: a duplicate filter and a downloader middleware (the ``scrapy`` extra).

Two settings make a Scrapy project changewatch-aware (docs/scrapy.md)::

    DUPEFILTER_CLASS = "changewatch.scrapy.ChangewatchDupeFilter"
    DOWNLOADER_MIDDLEWARES = {"changewatch.scrapy.ChangewatchMiddleware": 580}
    CHANGEWATCH_SEEN_URL = "redis://127.0.0.1:6379/0?kind=bloom&key=myspider&capacity=10000000"
    CHANGEWATCH_DATABASE_URL = "postgresql+psycopg://crawler@db/changewatch"

:class:`ChangewatchDupeFilter` (:mod:`changewatch.scrapy_dupefilter`) answers "already
scheduled?" from any seen-set (:func:`changewatch.seen.open_seen_set`), so a crawl can use a
Bloom filter of a few bits per URL, persist it in ``JOBDIR``, share it between processes
through Redis, let entries age out, and schedule finally-failed requests again next crawl
(with :class:`ChangewatchFailureMiddleware` for download errors).
:class:`ChangewatchMiddleware` calls :meth:`ChangeWatch.should_parse
<changewatch.watch.ChangeWatch.should_parse>` on every HTML response and drops the
unchanged ones before the spider parses them.

This is an edge module: it reads Scrapy settings (Scrapy's configuration, not the process
environment; unset ``CHANGEWATCH_*`` settings fall back to :mod:`changewatch.config`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse

from changewatch.config import load_canon_policy
from changewatch.errors import ChangewatchError, ConfigError
from changewatch.scrapy_dupefilter import (
    DEFAULT_FAILURE_MIDDLEWARE_ORDER,
    DUPEFILTER_KEYS,
    JOBDIR_SEEN_FILE,
    URL_KEYED_METHODS,
    ChangewatchDupeFilter,
    ChangewatchFailureMiddleware,
    reported_setting_errors,
    request_failed,
    request_key,
    retry_url_for,
    seen_url_for,
)
from changewatch.values import Decision

if TYPE_CHECKING:  # loaded by the middleware only: a dupefilter process never needs the store
    from changewatch.watch import ChangeWatch

__all__ = [
    "DEFAULT_FAILURE_MIDDLEWARE_ORDER",
    "DEFAULT_MIDDLEWARE_ORDER",
    "DUPEFILTER_KEYS",
    "HTML_MEDIA_TYPES",
    "JOBDIR_SEEN_FILE",
    "URL_KEYED_METHODS",
    "ChangewatchDupeFilter",
    "ChangewatchFailureMiddleware",
    "ChangewatchMiddleware",
    "UnchangedResponse",
    "decision_meta",
    "request_failed",
    "request_key",
    "retry_url_for",
    "seen_url_for",
]

log = logging.getLogger("changewatch.scrapy")

#: Media types the middleware fingerprints; every other response passes untouched.
HTML_MEDIA_TYPES = frozenset({"text/html", "application/xhtml+xml"})

#: The middleware's place in ``DOWNLOADER_MIDDLEWARES``: below HttpCompressionMiddleware
#: (590) and RedirectMiddleware (600), so it sees decompressed bodies and final pages.
DEFAULT_MIDDLEWARE_ORDER = 580

OnUnchanged = Literal["drop", "pass"]


# -- the downloader middleware -------------------------------------------------------------


class UnchangedResponse(IgnoreRequest):
    """Raised for a response whose page did not change; ``.decision`` is the meta dict.

    A subclass of :class:`scrapy.exceptions.IgnoreRequest`: Scrapy does not log it, and a
    request's ``errback`` receives it (``failure.check(UnchangedResponse)``).
    """

    def __init__(self, url: str, decision: Mapping[str, Any]) -> None:
        self.url = url
        self.decision = dict(decision)
        super().__init__(f"unchanged since the last crawl: {url}")


def decision_meta(decision: Decision) -> dict[str, Any]:
    """A decision as ``response.meta["changewatch"]``: plain JSON types, picklable.

    >>> from changewatch.values import Decision
    >>> d = Decision("minor", "http://a.example/", b"\\x01" * 16, b"\\x02" * 32, 7, distance=2)
    >>> decision_meta(d)["kind"], decision_meta(d)["distance"], decision_meta(d)["parse"]
    ('minor', 2, True)
    """
    return {
        "kind": decision.kind,
        "parse": bool(decision),
        "distance": decision.distance,
        "duplicate_of": decision.duplicate_of,
        "version": decision.version,
        "path": decision.path,
        "url": decision.url,
        "url_digest": decision.url_digest.hex(),
        "content_sha256": decision.content_sha256.hex(),
        "simhash": decision.simhash,
        "chrome_changed": decision.chrome_changed,
        "links_changed": decision.links_changed,
        "redirect_to": decision.redirect_to,
    }


def _media_type(response: Any) -> str | None:
    raw = response.headers.get(b"Content-Type")
    if not raw:
        return None
    return str(raw.decode("latin-1").partition(";")[0].strip().lower())


def _header(response: Any, name: bytes) -> str | None:
    raw = response.headers.get(name)
    return raw.decode("latin-1") if raw else None


#: request.meta key marking a request sent with validators from the store.
_CONDITIONAL_META = "changewatch_conditional"


class ChangewatchMiddleware:
    """Downloader middleware: ``should_parse`` on every HTML response, unchanged ones dropped.

    A ``200`` response to a ``GET`` (without a body) whose ``Content-Type`` is ``text/html``
    or ``application/xhtml+xml`` (without a ``Content-Type``: a Scrapy ``HtmlResponse``) is
    decided; every other response passes untouched, as does a request with
    ``meta["dont_changewatch"]``. The store keys pages by URL, so the answer to a POST is not
    recorded as a version of the page at its URL. The decision goes
    into ``response.meta["changewatch"]`` (:func:`decision_meta`). An ``unchanged`` page
    raises :class:`UnchangedResponse` (``CHANGEWATCH_UNCHANGED = "drop"``, the default) or
    passes with its decision attached (``"pass"``). An ``unchanged`` page whose set of
    outlinks changed (``links_changed``: its navigation gained a link to a new page) passes
    all the same, marked ``parse: False, links_changed: True``, so that the spider can follow
    its links without parsing it (``CHANGEWATCH_LINKS_CHANGED = "pass"``, the default;
    ``"drop"`` drops it like any unchanged page). A redirect stub (``path`` ``"redirect"``: a
    meta refresh to another URL, ``redirect_to``) is never dropped, so that Scrapy's
    ``MetaRefreshMiddleware`` or the spider can follow it; ``changewatch/redirect`` counts it.

    Failing open: when the store fails (or the page is too large, or its URL cannot be
    canonicalised) the response passes with ``meta["changewatch"] = {"kind": None,
    "parse": True, "error": "…"}``, ``changewatch/errors`` counts it, and the first such
    error is logged as a warning (later ones at debug). A crawl never loses pages because
    the change store is down; it only parses more than it needed to.

    ``should_parse`` blocks the reactor for one store round trip (docs/scrapy.md has the
    figures); ``CHANGEWATCH_THREADED = True`` runs it in the reactor's thread pool instead.

    Conditional GET (``CHANGEWATCH_CONDITIONAL_GET = True``; off by default): every GET of a
    stored page is sent with ``If-None-Match`` / ``If-Modified-Since`` from the validators the
    store kept (one store read per request, unless the request already carries either header
    or has ``meta["dont_changewatch"]``), and a ``304 Not Modified`` answer to such a request
    is recorded as ``unchanged`` (``path`` ``"not-modified"``) and dropped or passed like any
    unchanged page. The ``ETag`` and ``Last-Modified`` of every decided response are stored
    whether or not the option is on.
    """

    def __init__(
        self,
        watch: ChangeWatch,
        *,
        stats: Any = None,
        on_unchanged: OnUnchanged = "drop",
        threaded: bool = False,
        close_watch: bool = True,
        conditional_get: bool = False,
        on_links_changed: OnUnchanged = "pass",
    ) -> None:
        if on_unchanged not in ("drop", "pass"):
            raise ConfigError(
                f"CHANGEWATCH_UNCHANGED must be 'drop' or 'pass', got {on_unchanged!r}"
            )
        if on_links_changed not in ("drop", "pass"):
            raise ConfigError(
                f"CHANGEWATCH_LINKS_CHANGED must be 'drop' or 'pass', got {on_links_changed!r}"
            )
        self.on_links_changed = on_links_changed
        self.watch = watch
        self.stats = stats
        self.on_unchanged = on_unchanged
        self.threaded = threaded
        self.conditional_get = conditional_get
        self._close_watch = close_watch
        self._warned = False

    @classmethod
    @reported_setting_errors
    def from_crawler(cls, crawler: Any) -> ChangewatchMiddleware:
        """Build a :class:`ChangeWatch` from the crawler's ``CHANGEWATCH_*`` settings."""
        from changewatch.watch import ChangeWatch

        settings = crawler.settings
        overrides: dict[str, Any] = {"seen_url": "memory:"}  # should_parse needs no seen-set
        if settings.get("CHANGEWATCH_DATABASE_URL"):
            overrides["database_url"] = settings.get("CHANGEWATCH_DATABASE_URL")
        if settings.get("CHANGEWATCH_MINOR_DISTANCE") is not None:
            overrides["minor_distance"] = settings.getint("CHANGEWATCH_MINOR_DISTANCE")
        if settings.get("CHANGEWATCH_MAX_PAGE_BYTES") is not None:
            overrides["max_page_bytes"] = settings.getint("CHANGEWATCH_MAX_PAGE_BYTES")
        if settings.get("CHANGEWATCH_URL_POLICY"):
            overrides["url_policy"] = settings.get("CHANGEWATCH_URL_POLICY")
        if settings.get("CHANGEWATCH_CANON_POLICY"):
            path = settings.get("CHANGEWATCH_CANON_POLICY")
            overrides["canon_policy"] = load_canon_policy(path)
        middleware = cls(
            ChangeWatch.from_env(**overrides),
            stats=crawler.stats,
            on_unchanged=settings.get("CHANGEWATCH_UNCHANGED") or "drop",
            threaded=settings.getbool("CHANGEWATCH_THREADED"),
            conditional_get=settings.getbool("CHANGEWATCH_CONDITIONAL_GET"),
            on_links_changed=settings.get("CHANGEWATCH_LINKS_CHANGED") or "pass",
        )
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def spider_closed(self) -> None:
        """Release the store's connections."""
        if self._close_watch:
            self.watch.close()

    def process_response(self, request: Any, response: Any, spider: Any = None) -> Any:
        """Decide an HTML response; return it, or raise :class:`UnchangedResponse`."""
        if not self._wants(request, response):
            return response
        kwargs = self._should_parse_kwargs(response)
        if self.threaded:
            return self._decide_in_thread(request, response, kwargs)
        return self._apply(request, response, self._decide(response, kwargs))

    def process_request(self, request: Any, spider: Any = None) -> None:
        """With conditional GET on, add the stored validators to a GET of a stored page."""
        if not self.conditional_get or request.meta.get("dont_changewatch"):
            return
        if request.method.upper() != "GET" or request.body:
            return
        if b"If-None-Match" in request.headers or b"If-Modified-Since" in request.headers:
            return  # the spider chose its own validators
        try:
            headers = self.watch.conditional_headers(request.url)
        except ChangewatchError as exc:
            self._failed(request, exc)
            return
        if headers:
            for name, value in headers.items():
                request.headers[name] = value
            request.meta[_CONDITIONAL_META] = True
            self._inc("changewatch/conditional")

    def _wants(self, request: Any, response: Any) -> bool:
        if request.meta.get("dont_changewatch"):
            return False
        if response.status == 304:
            return bool(request.meta.get(_CONDITIONAL_META))  # validators we sent
        if response.status != 200:
            return False
        if request.method.upper() not in URL_KEYED_METHODS or request.body:
            return False  # the store keys pages by URL; a form's answer is not "the page"
        media = _media_type(response)
        if media is None:
            return isinstance(response, HtmlResponse)
        return media in HTML_MEDIA_TYPES

    @staticmethod
    def _should_parse_kwargs(response: Any) -> dict[str, Any]:
        """What of the response ``should_parse`` takes beside the URL and the body."""
        return {
            "content_type": _header(response, b"Content-Type"),
            "etag": _header(response, b"ETag"),
            "last_modified": _header(response, b"Last-Modified"),
        }

    def _decide(self, response: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            if response.status == 304:
                self._inc("changewatch/not_modified")
                decision = self.watch.should_parse(
                    response.url,
                    None,
                    status=304,
                    etag=kwargs["etag"],
                    last_modified=kwargs["last_modified"],
                )
            else:
                decision = self.watch.should_parse(response.url, response.body, **kwargs)
        except ChangewatchError as exc:
            return self._failed(response, exc)
        return decision_meta(decision)

    async def _decide_in_thread(self, request: Any, response: Any, kwargs: dict[str, Any]) -> Any:
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet.threads import deferToThread

        meta = await maybe_deferred_to_future(deferToThread(self._decide, response, kwargs))
        return self._apply(request, response, meta)

    def _apply(self, request: Any, response: Any, meta: dict[str, Any]) -> Any:
        # response.meta is request.meta once the engine ties them; not yet in a middleware.
        request.meta["changewatch"] = meta
        kind = meta["kind"]
        if kind is None:
            return response
        self._inc(f"changewatch/{kind}")
        if kind == "new" and meta["duplicate_of"] is not None:
            self._inc("changewatch/new/duplicate")
        if kind == "unchanged" and meta.get("redirect_to"):
            # A redirect stub: never dropped, so that Scrapy's MetaRefreshMiddleware (or the
            # spider) follows it to the page it names, which may be new.
            self._inc("changewatch/redirect")
            return response
        if kind == "unchanged" and meta.get("links_changed"):
            self._inc("changewatch/links_changed")
            if self.on_links_changed == "pass":
                return response  # marked parse: False, for its new links
        if kind == "unchanged" and self.on_unchanged == "drop":
            self._inc("changewatch/dropped")
            raise UnchangedResponse(response.url, meta)
        return response

    def _failed(self, response: Any, exc: ChangewatchError) -> dict[str, Any]:
        self._inc("changewatch/errors")
        self._inc(f"changewatch/errors/{type(exc).__name__}")
        level = logging.DEBUG if self._warned else logging.WARNING
        self._warned = True
        log.log(
            level,
            "changewatch could not decide %s (%s); passing it to the spider",
            response.url,
            exc,
            exc_info=level == logging.WARNING,
        )
        return {"kind": None, "parse": True, "error": f"{type(exc).__name__}: {exc}"}

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)
