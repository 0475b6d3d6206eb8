"""httpx's and httpcore's exceptions as :class:`~changewatch.errors.FetchError`: the one place.

The sitemap adapter meets these exceptions in two phases: sending a request (connecting,
writing it, waiting for the status line and headers) and reading a body. The pinned
transport lets httpcore's exceptions through as they are (httpx's own transport would
re-raise them as httpx's twins; this module reads both families), so every failure of the
network or the protocol is translated here and nowhere else:

===============================================  =====================================  =========
exception (httpx or httpcore)                    message                                retryable
===============================================  =====================================  =========
``ConnectError``/``ConnectTimeout``, TLS cause   ``TLS failed: …`` (request only)        no
``ConnectError``/``ConnectTimeout``              ``cannot connect: …`` (request only)    yes (*)
other ``TimeoutException``                       ``timed out waiting for the response``  yes
                                                 (body: ``timed out reading the body``)
any other ``HTTPError`` (httpcore: network,      ``<Class>: …``                          yes
protocol, unsupported protocol)                  (body: ``body read failed: …``)
===============================================  =====================================  =========

(*) :class:`~changewatch.sitemaps.fetch.SafeClient` retries these itself, with backoff
(:func:`is_connect_failure`). A body's timeouts are first checked against the fetch's total
timeout and the walk's cutoffs, in :mod:`~changewatch.sitemaps.response`.
"""

from __future__ import annotations

import ssl
from typing import Final, Literal

import httpcore
import httpx

from changewatch.errors import FetchError

__all__ = ["HTTP_ERRORS", "TIMEOUTS", "fetch_error", "is_connect_failure", "tls_failure"]

#: Every exception this module translates: catch these, then call :func:`fetch_error`.
HTTP_ERRORS: Final[tuple[type[Exception], ...]] = (
    httpx.HTTPError,
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
)
#: The timeouts among them.
TIMEOUTS: Final[tuple[type[Exception], ...]] = (httpx.TimeoutException, httpcore.TimeoutException)
_CONNECT_FAILURES: Final[tuple[type[Exception], ...]] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpcore.ConnectError,
    httpcore.ConnectTimeout,
)

Phase = Literal["request", "body"]


def tls_failure(exc: BaseException) -> ssl.SSLError | None:
    """The TLS error behind a connect error (certificate, handshake), if that is what it is."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def is_connect_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure to connect that another attempt may get past (not TLS)."""
    return isinstance(exc, _CONNECT_FAILURES) and tls_failure(exc) is None


def fetch_error(url: str, exc: Exception, phase: Phase = "request") -> FetchError:
    """The :class:`FetchError` for one of :data:`HTTP_ERRORS` raised fetching ``url``.

    >>> str(fetch_error("https://example.com/", httpx.ReadTimeout("read timed out")))
    'https://example.com/: timed out waiting for the response: read timed out'
    >>> str(fetch_error("https://example.com/", httpcore.ReadError(), "body"))
    'https://example.com/: body read failed: ReadError'
    """
    if not isinstance(exc, HTTP_ERRORS):
        raise TypeError(f"not an httpx or httpcore error: {type(exc).__name__}")
    detail = str(exc) or type(exc).__name__
    if phase == "request" and isinstance(exc, _CONNECT_FAILURES):
        tls = tls_failure(exc)
        if tls is not None:  # a bad certificate will not get better by retrying
            error = FetchError(url, f"TLS failed: {tls}")
            error.retryable = False
            return error
        return FetchError(url, f"cannot connect: {detail}")
    if isinstance(exc, TIMEOUTS):
        if phase == "body":
            return FetchError(url, f"timed out reading the body: {detail}")
        return FetchError(url, f"timed out waiting for the response: {detail}")
    if phase == "body":
        return FetchError(url, f"body read failed: {detail}")
    return FetchError(url, f"{type(exc).__name__}: {detail}")
