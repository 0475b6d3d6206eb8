"""Scrapy integration: a duplicate filter and a downloader middleware (the ``scrapy`` extra).

Two settings make a Scrapy project changewatch-aware (docs/scrapy.md)::

    DUPEFILTER_CLASS = "changewatch.scrapy.ChangewatchDupeFilter"
    DOWNLOADER_MIDDLEWARES = {"changewatch.scrapy.ChangewatchMiddleware": 580}
    CHANGEWATCH_SEEN_URL = "redis://127.0.0.1:6379/0?kind=bloom&key=myspider&capacity=10000000"
    CHANGEWATCH_DATABASE_URL = "postgresql+psycopg://crawler@db/changewatch"

:class:`ChangewatchDupeFilter` answers "already scheduled?" from any seen-set
(:func:`changewatch.seen.open_seen_set`), so a crawl can use a Bloom filter of a few bits per
URL, persist it in ``JOBDIR``, or share it between processes through Redis.
:class:`ChangewatchMiddleware` calls :meth:`ChangeWatch.should_parse
<changewatch.watch.ChangeWatch.should_parse>` on every HTML response and drops the
unchanged ones before the spider parses them.

This is an edge module: it reads Scrapy settings (Scrapy's configuration, not the process
environment; unset ``CHANGEWATCH_*`` settings fall back to :mod:`changewatch.config`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.utils.job import job_dir
from scrapy.utils.request import RequestFingerprinter, referer_str

from changewatch.config import load_canon_policy
from changewatch.errors import (
    ChangewatchError,
    ConfigError,
    InvalidURLError,
    SeenSetUnavailableError,
)
from changewatch.seen import SeenSet, open_seen_set
from changewatch.urls import CanonPolicy, url_digest
from changewatch.values import Decision

if TYPE_CHECKING:  # loaded by the middleware only: a dupefilter process never needs the store
    from changewatch.watch import ChangeWatch

__all__ = [
    "DEFAULT_MIDDLEWARE_ORDER",
    "HTML_MEDIA_TYPES",
    "JOBDIR_SEEN_FILE",
    "URL_KEYED_METHODS",
    "ChangewatchDupeFilter",
    "ChangewatchMiddleware",
    "UnchangedResponse",
    "decision_meta",
    "request_key",
    "seen_url_for",
]

log = logging.getLogger("changewatch.scrapy")

#: Methods whose requests are keyed by the canonical URL alone (when they carry no body).
URL_KEYED_METHODS = frozenset({"GET"})

#: Media types the middleware fingerprints; every other response passes untouched.
HTML_MEDIA_TYPES = frozenset({"text/html", "application/xhtml+xml"})

#: Name of the seen-set file in ``JOBDIR`` when ``CHANGEWATCH_SEEN_URL`` names no file.
JOBDIR_SEEN_FILE = "changewatch.seen"

#: The middleware's place in ``DOWNLOADER_MIDDLEWARES``: below HttpCompressionMiddleware
#: (590) and RedirectMiddleware (600), so it sees decompressed bodies and final pages.
DEFAULT_MIDDLEWARE_ORDER = 580

# Prefix of the keys of non-GET requests: they never equal a URL digest by construction
# of the input (a URL digest hashes a canonical URL, which cannot start with a NUL byte).
_REQUEST_KEY_PREFIX = b"\x00changewatch-scrapy-request-v1\x00"

OnUnchanged = Literal["drop", "pass"]
OnSeenError = Literal["raise", "assume-new"]


# -- keys ----------------------------------------------------------------------------------


def request_key(
    request: Any, fingerprinter: Any, policy: CanonPolicy | None = None
) -> tuple[bytes, str]:
    """The 16-byte seen-set key of a Scrapy request, and how it was made.

    A ``GET`` without a body is keyed by :func:`changewatch.urls.url_digest` of its URL
    (``"url"``): the same key ``ChangeWatch.mark_seen`` and the snapshot store use, so
    tracking parameters, parameter order, default ports and the other canonicalisation rules
    merge URLs that name one page. Every other request (``POST``, ``HEAD``, a ``GET`` with a
    body) is keyed by blake2b-128 over its method, Scrapy's request fingerprint and the
    SHA-256 of its body (``"request"``): a POST's identity is its body — two searches sent
    to one URL are two requests — and URL canonicalisation must never merge them. The body
    digest is added on top of the fingerprint so a custom ``REQUEST_FINGERPRINTER_CLASS``
    that ignores bodies still keeps different forms apart. ``HEAD`` is kept apart from
    ``GET`` so that a HEAD probe does not filter the GET that follows it.

    A URL changewatch cannot canonicalise (``data:``, ``file:``, ``ftp:``, a malformed host)
    falls back to the request key (``"invalid_url"``): Scrapy can fetch it, so it is still
    deduplicated, by Scrapy's own identity of the request.
    """
    method = request.method.upper()
    body = request.body or b""
    how = "request"
    if method in URL_KEYED_METHODS and not body:
        try:
            return url_digest(request.url, policy), "url"
        except InvalidURLError:
            how = "invalid_url"
    hasher = hashlib.blake2b(_REQUEST_KEY_PREFIX, digest_size=16)
    hasher.update(method.encode("ascii", "replace") + b"\x00")
    hasher.update(fingerprinter.fingerprint(request))
    hasher.update(hashlib.sha256(body).digest())
    return hasher.digest(), how


def _canon_policy(settings: Any) -> CanonPolicy | None:
    path = settings.get("CHANGEWATCH_CANON_POLICY")
    return load_canon_policy(path) if path else None


def seen_url_for(settings: Any) -> str:
    """The seen-set URL for a crawl: ``CHANGEWATCH_SEEN_URL``, placed in ``JOBDIR`` if fileless.

    Unset: ``file:JOBDIR/changewatch.seen`` (an exact set) when ``JOBDIR`` is set, else
    ``memory:``. A ``file:`` URL without a path (``file:?kind=bloom&capacity=…``) gets
    ``JOBDIR/changewatch.seen``; without ``JOBDIR`` that is a :class:`ConfigError`.
    """
    configured = str(settings.get("CHANGEWATCH_SEEN_URL") or "")
    directory = job_dir(settings)
    if not configured:
        return f"file:{Path(directory) / JOBDIR_SEEN_FILE}" if directory else "memory:"
    scheme, _, rest = configured.partition(":")
    if scheme == "file" and rest.partition("?")[0] in ("", "//"):
        if not directory:
            raise ConfigError(
                f"CHANGEWATCH_SEEN_URL {configured!r} names no file, and JOBDIR is not set "
                "to put one in"
            )
        query = rest.partition("?")[2]
        return f"file:{Path(directory) / JOBDIR_SEEN_FILE}" + (f"?{query}" if query else "")
    return configured


# -- the duplicate filter ------------------------------------------------------------------


class ChangewatchDupeFilter:
    """``DUPEFILTER_CLASS`` backed by a changewatch seen-set.

    ``request_seen`` adds the request's key (:func:`request_key`) to the seen-set in one
    check-and-set step, so of several processes sharing a Redis seen-set exactly one
    schedules a URL. ``dont_filter`` requests are never filtered nor added (Scrapy's
    scheduler skips the filter for them; the check here covers direct callers).

    Stats: ``changewatch/dupefilter/new`` (scheduled), ``…/filtered`` (dropped as seen; Scrapy's
    own ``dupefilter/filtered`` too), ``…/by_request`` (keyed by the request, not the URL),
    ``…/invalid_url`` (URL changewatch cannot canonicalise, keyed by the request instead),
    ``…/errors`` (seen-set unreachable and ``CHANGEWATCH_SEEN_ON_ERROR = "assume-new"``).
    """

    def __init__(
        self,
        seen: SeenSet,
        *,
        stats: Any = None,
        fingerprinter: Any = None,
        canon_policy: CanonPolicy | None = None,
        debug: bool = False,
        on_seen_error: OnSeenError = "raise",
    ) -> None:
        self.seen = seen
        self.stats = stats
        self.fingerprinter = fingerprinter or RequestFingerprinter()
        self.canon_policy = canon_policy
        self.debug = debug
        self.on_seen_error = on_seen_error
        self.logdupes = True
        self._warned_invalid = False
        self._warned_error = False
        self.logger = logging.getLogger(__name__)

    @classmethod
    def from_crawler(cls, crawler: Any) -> ChangewatchDupeFilter:
        """Build from the crawler's settings, stats and request fingerprinter."""
        settings = crawler.settings
        on_error: OnSeenError = settings.get("CHANGEWATCH_SEEN_ON_ERROR") or "raise"
        if on_error not in ("raise", "assume-new"):
            raise ConfigError(
                f"CHANGEWATCH_SEEN_ON_ERROR must be 'raise' or 'assume-new', got {on_error!r}"
            )
        return cls(
            open_seen_set(seen_url_for(settings)),
            stats=crawler.stats,
            fingerprinter=crawler.request_fingerprinter,
            canon_policy=_canon_policy(settings),
            debug=settings.getbool("DUPEFILTER_DEBUG"),
            on_seen_error=on_error,
        )

    def open(self) -> None:
        """Nothing to do: the seen-set was opened (and a JOBDIR file read) on construction."""

    def close(self, reason: str) -> None:
        """Persist (file seen-sets: an atomic save into JOBDIR) and release the seen-set."""
        self.seen.close()

    def request_seen(self, request: Any) -> bool:
        """True when the request was scheduled before (drop it); else record it, False."""
        if request.dont_filter:
            return False
        key, how = request_key(request, self.fingerprinter, self.canon_policy)
        if how != "url":
            self._inc("changewatch/dupefilter/by_request")
        if how == "invalid_url":
            self._inc("changewatch/dupefilter/invalid_url")
            if not self._warned_invalid:
                self._warned_invalid = True
                self.logger.warning(
                    "URL %s cannot be canonicalised; deduplicating it (and any like it) by "
                    "Scrapy's request fingerprint",
                    request.url,
                )
        try:
            new = self.seen.add(key)
        except SeenSetUnavailableError as exc:
            if self.on_seen_error == "raise":
                raise
            self._inc("changewatch/dupefilter/errors")
            level = logging.DEBUG if self._warned_error else logging.WARNING
            self._warned_error = True
            self.logger.log(level, "seen-set unavailable (%s); scheduling %s", exc, request)
            return False
        self._inc("changewatch/dupefilter/new" if new else "changewatch/dupefilter/filtered")
        return not new

    def log(self, request: Any, spider: Any) -> None:
        """Log a filtered request as RFPDupeFilter does: the first one, or all with DEBUG."""
        if self.debug:
            self.logger.debug(
                "Filtered duplicate request: %(request)s (referer: %(referer)s)",
                {"request": request, "referer": referer_str(request)},
                extra={"spider": spider},
            )
        elif self.logdupes:
            self.logger.debug(
                "Filtered duplicate request: %(request)s - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)",
                {"request": request},
                extra={"spider": spider},
            )
            self.logdupes = False
        self._inc("dupefilter/filtered")

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)


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
    passes with its decision attached (``"pass"``).

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
    ) -> None:
        if on_unchanged not in ("drop", "pass"):
            raise ConfigError(
                f"CHANGEWATCH_UNCHANGED must be 'drop' or 'pass', got {on_unchanged!r}"
            )
        self.watch = watch
        self.stats = stats
        self.on_unchanged = on_unchanged
        self.threaded = threaded
        self.conditional_get = conditional_get
        self._close_watch = close_watch
        self._warned = False

    @classmethod
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
