"""The Scrapy duplicate filter on a changewatch seen-set (re-exported by :mod:`changewatch.scrapy`).

``DUPEFILTER_CLASS = "changewatch.scrapy.ChangewatchDupeFilter"`` answers "already scheduled?"
from any seen-set (:func:`changewatch.seen.open_seen_set`): a Bloom filter of a few bits per
URL, persisted in ``JOBDIR``, shared through Redis, ageing, or routed.

Keys (:func:`request_key`, setting ``CHANGEWATCH_DUPEFILTER_KEY``):

``"auto"`` (default)
    a bodyless GET is keyed by its canonical URL (:func:`changewatch.urls.url_digest`) when
    the project's request fingerprinter is Scrapy's own ``RequestFingerprinter``; with any
    other ``REQUEST_FINGERPRINTER_CLASS`` every request is keyed by that fingerprinter, which
    may add meaning to a request (API parameters, browser arguments, headers) or remove some
    (case-insensitive paths) that canonicalisation knows nothing of;
``"url"``
    canonical-URL keying for bodyless GETs whatever the fingerprinter (explicit choice);
``"fingerprint"``
    the fingerprinter for every request, even with Scrapy's default.

Failed requests (``CHANGEWATCH_FORGET_FAILED``, default on): a request whose final response
has a status in ``CHANGEWATCH_FORGET_STATUSES`` (default: ``RETRY_HTTP_CODES``) — seen through
the ``response_received`` signal, after ``RetryMiddleware`` gave up — or whose download failed
after its retries (:class:`ChangewatchFailureMiddleware`, a downloader middleware at 540, just
before ``RetryMiddleware``) is forgotten in an exact seen-set, or recorded in a small exact
*retry set* beside a Bloom filter (``CHANGEWATCH_RETRY_SEEN_URL``, default derived from the
seen-set URL), so the next crawl schedules it again. Within the crawl that saw it fail it
stays filtered (no refetch loop).
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from scrapy import signals
from scrapy.utils.job import job_dir
from scrapy.utils.request import RequestFingerprinter, referer_str

from changewatch.config import load_canon_policy
from changewatch.errors import ConfigError, InvalidURLError, SeenSetUnavailableError
from changewatch.seen import RoutedSeenSet, SeenSet, open_seen_set
from changewatch.urls import CanonPolicy, url_digest

__all__ = [
    "DEFAULT_FAILURE_MIDDLEWARE_ORDER",
    "DUPEFILTER_KEYS",
    "JOBDIR_SEEN_FILE",
    "URL_KEYED_METHODS",
    "ChangewatchDupeFilter",
    "ChangewatchFailureMiddleware",
    "request_failed",
    "request_key",
    "retry_url_for",
    "seen_url_for",
]

#: Methods whose requests are keyed by the canonical URL alone (when they carry no body).
URL_KEYED_METHODS = frozenset({"GET"})
#: Name of the seen-set file in ``JOBDIR`` when ``CHANGEWATCH_SEEN_URL`` names no file.
JOBDIR_SEEN_FILE = "changewatch.seen"
#: ``CHANGEWATCH_DUPEFILTER_KEY`` values.
DUPEFILTER_KEYS = ("auto", "url", "fingerprint")
#: The failure middleware's place: below RetryMiddleware (550), so it sees what it gave up on.
DEFAULT_FAILURE_MIDDLEWARE_ORDER = 540
#: Signal sent by :class:`ChangewatchFailureMiddleware` (``request``, ``reason``).
request_failed = object()

# Prefix of the keys of requests keyed by the fingerprinter: they never equal a URL digest by
# construction of the input (a URL digest hashes a canonical URL, which cannot start with NUL).
_REQUEST_KEY_PREFIX = b"\x00changewatch-scrapy-request-v1\x00"

OnSeenError = Literal["raise", "assume-new"]

_T = TypeVar("_T")


def reported_setting_errors(build: Callable[..., _T]) -> Callable[..., _T]:
    """Wrap a ``from_crawler``: a :class:`ConfigError` (a changewatch setting that cannot
    work) is logged as one ERROR line naming it before it propagates — Scrapy would otherwise
    bury it under ``RuntimeError: Engine slot not assigned`` while shutting the engine down."""

    @functools.wraps(build)
    def wrapper(*args: Any, **kwargs: Any) -> _T:
        try:
            return build(*args, **kwargs)
        except ConfigError as exc:
            logging.getLogger("changewatch.scrapy").error(
                "changewatch setting error, the crawl cannot start: %s", exc
            )
            raise

    return wrapper


KeyBy = Literal["url", "fingerprint"]


# -- keys ----------------------------------------------------------------------------------


def request_key(
    request: Any, fingerprinter: Any, policy: CanonPolicy | None = None, *, by: KeyBy = "url"
) -> tuple[bytes, str]:
    """The 16-byte seen-set key of a Scrapy request, and how it was made.

    With ``by="url"``, a ``GET`` without a body is keyed by
    :func:`changewatch.urls.url_digest` of its URL (``"url"``): the key ``ChangeWatch.mark_seen``
    and the snapshot store use, so tracking parameters, parameter order, default ports and the
    other canonicalisation rules merge URLs that name one page. Every other request (``POST``,
    ``HEAD``, a ``GET`` with a body), and every request with ``by="fingerprint"``, is keyed by
    blake2b-128 over its method, the fingerprinter's fingerprint and the SHA-256 of its body
    (``"request"``, or ``"fingerprint"`` for a bodyless GET keyed so): a POST's identity is its
    body — two searches sent to one URL are two requests — and URL canonicalisation must never
    merge them. The body digest is added on top of the fingerprint so a custom fingerprinter
    that ignores bodies still keeps different forms apart. ``HEAD`` is kept apart from ``GET``
    so that a HEAD probe does not filter the GET that follows it.

    A URL changewatch cannot canonicalise (``data:``, ``file:``, ``ftp:``, a malformed host)
    falls back to the request key (``"invalid_url"``): Scrapy can fetch it, so it is still
    deduplicated, by Scrapy's own identity of the request.
    """
    method = request.method.upper()
    body = request.body or b""
    how = "request"
    if method in URL_KEYED_METHODS and not body:
        if by == "fingerprint":
            how = "fingerprint"
        else:
            try:
                return url_digest(request.url, policy), "url"
            except InvalidURLError:
                how = "invalid_url"
    hasher = hashlib.blake2b(_REQUEST_KEY_PREFIX, digest_size=16)
    hasher.update(method.encode("ascii", "replace") + b"\x00")
    hasher.update(fingerprinter.fingerprint(request))
    hasher.update(hashlib.sha256(body).digest())
    return hasher.digest(), how


def key_by(setting: str, fingerprinter: Any) -> KeyBy:
    """What ``CHANGEWATCH_DUPEFILTER_KEY`` means with this fingerprinter."""
    if setting not in DUPEFILTER_KEYS:
        raise ConfigError(
            f"CHANGEWATCH_DUPEFILTER_KEY must be one of {', '.join(DUPEFILTER_KEYS)}, "
            f"got {setting!r}"
        )
    if setting == "auto":
        return "url" if type(fingerprinter) is RequestFingerprinter else "fingerprint"
    return "url" if setting == "url" else "fingerprint"


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


def retry_url_for(settings: Any, seen_url: str) -> str:
    """The retry set's URL: ``CHANGEWATCH_RETRY_SEEN_URL``, or one beside the seen-set.

    ``memory:…`` → ``memory:``; ``file:PATH…`` → ``file:PATH.retry``; ``redis…://…key=K…`` →
    the same server, ``kind=set&key=K:retry`` (timeouts and TLS kept).

    >>> retry_url_for({}, "redis://h:6379/0?kind=bloom&key=crawl&capacity=10&timeout=2")
    'redis://h:6379/0?kind=set&key=crawl%3Aretry&timeout=2'
    """
    configured = settings.get("CHANGEWATCH_RETRY_SEEN_URL")
    if configured:
        return str(configured)
    from urllib.parse import parse_qsl, urlencode

    base, _, query = seen_url.partition("?")
    scheme = base.partition(":")[0].lower()
    if scheme == "memory":
        return "memory:"
    if scheme == "file":
        return f"{base}.retry"
    options = dict(parse_qsl(query))
    kept: dict[str, str] = {k: options[k] for k in ("timeout", "replay_s") if k in options}
    key = options.get("key", "changewatch:seen")
    query_out: dict[str, str] = {"kind": "set", "key": f"{key}:retry", **kept}
    return f"{base}?{urlencode(query_out)}"


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
    ``…/errors`` (seen-set unreachable and ``CHANGEWATCH_SEEN_ON_ERROR = "assume-new"``),
    ``…/forgotten`` (finally failed: forgotten, or recorded in the retry set; also per
    reason, ``…/forgotten/503``, ``…/forgotten/TimeoutError``) and ``…/retried`` (failed in an
    earlier crawl, found in the retry set and scheduled again).
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
        key: str = "auto",
        retry: SeenSet | None = None,
        forget_statuses: frozenset[int] = frozenset(),
    ) -> None:
        self.seen = seen
        self.stats = stats
        self.fingerprinter = fingerprinter or RequestFingerprinter()
        self.canon_policy = canon_policy
        self.debug = debug
        self.on_seen_error = on_seen_error
        self.key_by = key_by(key, self.fingerprinter)
        self.retry = retry
        self.forget_statuses = forget_statuses
        self.logdupes = True
        self._warned_invalid = False
        self._warned_error = False
        self._failed: set[bytes] = set()  # failed in this crawl: stay filtered until it ends
        self._retryable = self._retry_members()
        self.logger = logging.getLogger("changewatch.scrapy")

    @classmethod
    @reported_setting_errors
    def from_crawler(cls, crawler: Any) -> ChangewatchDupeFilter:
        """Build from the crawler's settings, stats and request fingerprinter."""
        settings = crawler.settings
        on_error: OnSeenError = settings.get("CHANGEWATCH_SEEN_ON_ERROR") or "raise"
        if on_error not in ("raise", "assume-new"):
            raise ConfigError(
                f"CHANGEWATCH_SEEN_ON_ERROR must be 'raise' or 'assume-new', got {on_error!r}"
            )
        forget = settings.getbool("CHANGEWATCH_FORGET_FAILED", True)
        named = settings.get("CHANGEWATCH_FORGET_STATUSES")
        statuses = settings.getlist(
            "RETRY_HTTP_CODES" if named is None else "CHANGEWATCH_FORGET_STATUSES"
        )
        try:
            codes = frozenset(int(s) for s in statuses) if forget else frozenset()
        except (TypeError, ValueError):
            raise ConfigError(
                f"CHANGEWATCH_FORGET_STATUSES must be HTTP status codes, got {statuses!r}"
            ) from None
        key = str(settings.get("CHANGEWATCH_DUPEFILTER_KEY") or "auto")
        key_by(key, crawler.request_fingerprinter)  # refuse a bad value before opening
        seen_url = seen_url_for(settings)
        seen = open_seen_set(seen_url)
        retry = None
        try:
            if forget and not _exact(seen):
                retry = open_seen_set(retry_url_for(settings, seen_url))
        except BaseException:
            seen.close()
            raise
        dupefilter = cls(
            seen,
            stats=crawler.stats,
            fingerprinter=crawler.request_fingerprinter,
            canon_policy=_canon_policy(settings),
            debug=settings.getbool("DUPEFILTER_DEBUG"),
            on_seen_error=on_error,
            key=key,
            retry=retry,
            forget_statuses=codes,
        )
        if forget:
            crawler.signals.connect(dupefilter.response_received, signal=signals.response_received)
            crawler.signals.connect(dupefilter.request_failed, signal=request_failed)
        return dupefilter

    def open(self) -> None:
        """Nothing to do: the seen-set was opened (and a JOBDIR file read) on construction."""

    def close(self, reason: str) -> None:
        """Persist (file seen-sets: an atomic save into JOBDIR) and release the seen-sets."""
        try:
            self.seen.close()
        finally:
            if self.retry is not None:
                self.retry.close()

    def _key(self, request: Any) -> tuple[bytes, str]:
        return request_key(request, self.fingerprinter, self.canon_policy, by=self.key_by)

    def request_seen(self, request: Any) -> bool:
        """True when the request was scheduled before (drop it); else record it, False."""
        if request.dont_filter:
            return False
        key, how = self._key(request)
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
        if key in self._failed:
            self._inc("changewatch/dupefilter/filtered")
            return True
        try:
            new = self._route(request).add(key)
            if not new and key in self._retryable:
                new = self._retry_now(key)
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

    # -- failed requests -------------------------------------------------------------------

    def _route(self, request: Any) -> Any:
        """The seen-set a request's key goes to (a routed set: by the request's URL)."""
        if isinstance(self.seen, RoutedSeenSet):
            try:
                return self.seen.routes[self.seen.route_of(request.url)]
            except InvalidURLError:
                return self.seen.routes["bloom"]
        return self.seen

    def _retry_members(self) -> set[bytes]:
        """The retry set's keys at the start of this crawl (those may be scheduled again)."""
        members = getattr(self.retry, "members", None)
        return set(members()) if members is not None else set()

    def _retry_now(self, key: bytes) -> bool:
        """Take a key that failed in an earlier crawl out of the retry set; True: schedule it."""
        self._retryable.discard(key)
        assert self.retry is not None
        taken = bool(self.retry.forget(key))  # type: ignore[attr-defined]
        if taken:  # of several processes sharing the retry set, one schedules it
            self._inc("changewatch/dupefilter/retried")
        return taken

    def response_received(self, response: Any, request: Any, spider: Any = None) -> None:
        """A final response (after retries): forget the request if its status is a failure."""
        if response.status in self.forget_statuses:
            self.forget_failed(request, str(response.status))

    def request_failed(self, request: Any, reason: str, spider: Any = None) -> None:
        """:data:`request_failed` (from :class:`ChangewatchFailureMiddleware`)."""
        self.forget_failed(request, reason)

    def forget_failed(self, request: Any, reason: str) -> None:
        """Let the next crawl schedule a request that finally failed; this one keeps it seen.

        Exact seen-set (or the exact route): the key is forgotten. Bloom: it is added to the
        retry set. A seen-set that is unreachable then is logged and the request stays seen.
        """
        if request.dont_filter:
            return
        key, _ = self._key(request)
        if key in self._failed:
            return
        route = self._route(request)
        try:
            if _exact(route):
                route.forget(key)
            elif self.retry is not None:
                self.retry.add(key)
            else:
                return
        except SeenSetUnavailableError as exc:
            self.logger.warning("could not forget failed request %s: %s", request, exc)
            return
        self._failed.add(key)
        self._inc("changewatch/dupefilter/forgotten")
        self._inc(f"changewatch/dupefilter/forgotten/{reason}")

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


def _exact(seen: Any) -> bool:
    """Whether a seen-set can forget one key (an exact one)."""
    return bool(getattr(seen, "exact", False)) and hasattr(seen, "forget")


class ChangewatchFailureMiddleware:
    """Downloader middleware: tells the dupefilter of downloads that failed after retries.

    ``DOWNLOADER_MIDDLEWARES = {"changewatch.scrapy.ChangewatchFailureMiddleware": 540}``:
    below ``RetryMiddleware`` (550), so ``process_exception`` runs only for exceptions it gave
    up on (or does not retry). It sends :data:`request_failed` with the exception's class name;
    :class:`ChangewatchDupeFilter` forgets the request. Statuses need no middleware.
    """

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler

    @classmethod
    @reported_setting_errors
    def from_crawler(cls, crawler: Any) -> ChangewatchFailureMiddleware:
        """Keep the crawler, to send the signal."""
        return cls(crawler)

    def process_exception(self, request: Any, exception: BaseException, spider: Any = None) -> None:
        """Signal the failure; let the exception go on (the request's errback, the log)."""
        self.crawler.signals.send_catch_log(
            signal=request_failed, request=request, reason=type(exception).__name__
        )
