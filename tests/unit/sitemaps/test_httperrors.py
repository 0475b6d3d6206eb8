"""httpx's and httpcore's exceptions become FetchError in one place, class by class."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import httpcore
import httpx
import pytest

from changewatch.errors import FetchError
from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.httperrors import (
    HTTP_ERRORS,
    fetch_error,
    is_connect_failure,
)

URL = "https://public.example/sitemap.xml"


def _subclasses(root: type[Exception]) -> list[type[Exception]]:
    found: list[type[Exception]] = []
    for sub in root.__subclasses__():
        if sub.__module__.split(".")[0] in ("httpx", "httpcore"):
            found += [sub, *_subclasses(sub)]
    return found


#: Every httpx HTTPError class and every httpcore exception class the pinned transport raises.
HTTPX_CLASSES = sorted(set(_subclasses(httpx.HTTPError)), key=lambda c: c.__name__)
HTTPCORE_CLASSES = [
    httpcore.ConnectError,
    httpcore.ConnectTimeout,
    httpcore.ReadError,
    httpcore.ReadTimeout,
    httpcore.WriteError,
    httpcore.WriteTimeout,
    httpcore.PoolTimeout,
    httpcore.NetworkError,
    httpcore.TimeoutException,
    httpcore.RemoteProtocolError,
    httpcore.LocalProtocolError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
]
CONNECT = {"ConnectError", "ConnectTimeout"}
TIMEOUT = {"ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException"}


def _make(cls: type[Exception]) -> Exception:
    if issubclass(cls, httpx.HTTPStatusError):
        request = httpx.Request("GET", URL)
        return cls("boom", request=request, response=httpx.Response(500, request=request))
    return cls("boom")


def _expected(cls: type[Exception], phase: str) -> str:
    name = cls.__name__
    if name in CONNECT and phase == "request":
        return "cannot connect: boom"
    if name in TIMEOUT:
        waiting = "reading the body" if phase == "body" else "waiting for the response"
        return f"timed out {waiting}: boom"
    return "body read failed: boom" if phase == "body" else f"{name}: boom"


def test_the_class_lists_are_complete() -> None:
    """httpx's tree is read from httpx itself; every class is one this module translates."""
    assert {"ConnectError", "ReadTimeout", "RemoteProtocolError", "DecodingError"} <= {
        c.__name__ for c in HTTPX_CLASSES
    }
    for cls in HTTPX_CLASSES + HTTPCORE_CLASSES:
        assert issubclass(cls, HTTP_ERRORS), cls


@pytest.mark.parametrize("phase", ["request", "body"])
@pytest.mark.parametrize(
    "cls", HTTPX_CLASSES + HTTPCORE_CLASSES, ids=lambda c: f"{c.__module__}.{c.__name__}"
)
def test_each_class_maps_to_its_fetch_error(cls: type[Exception], phase: str) -> None:
    """Each httpx and httpcore class: its message, retryable, retried at once only if connect."""
    error = fetch_error(URL, _make(cls), phase)  # type: ignore[arg-type]
    assert type(error) is FetchError
    assert error.url == URL
    assert str(error) == f"{URL}: {_expected(cls, phase)}"
    assert error.retryable
    assert is_connect_failure(_make(cls)) == (cls.__name__ in CONNECT)


@pytest.mark.parametrize("cls", [httpx.ConnectError, httpcore.ConnectError, httpx.ConnectTimeout])
def test_a_tls_failure_is_named_and_not_retried(cls: type[Exception]) -> None:
    """A connect error caused by a certificate or handshake failure: 'TLS failed', final."""
    exc = cls("handshake")
    exc.__cause__ = ssl.SSLCertVerificationError(1, "certificate verify failed")
    error = fetch_error(URL, exc)
    assert "TLS failed" in str(error)
    assert "certificate verify failed" in str(error)
    assert error.retryable is False
    assert not is_connect_failure(exc)


def test_an_empty_message_names_the_class() -> None:
    """An exception without text still says what happened."""
    assert str(fetch_error(URL, httpcore.ReadError())) == f"{URL}: ReadError: ReadError"
    assert str(fetch_error(URL, httpx.ConnectError(""))) == f"{URL}: cannot connect: ConnectError"


def test_anything_else_is_refused() -> None:
    """Only network and protocol errors are translated; a bug stays a bug."""
    with pytest.raises(TypeError, match="KeyError"):
        fetch_error(URL, KeyError("x"))  # type: ignore[arg-type]


def _client(handler: httpx.MockTransport, sleeps: list[float]) -> SafeClient:
    return SafeClient(
        resolve=lambda host, port: ["93.184.215.14"], transport=handler, sleep=sleeps.append
    )


@pytest.mark.parametrize("cls", HTTPX_CLASSES + HTTPCORE_CLASSES, ids=lambda c: c.__name__)
def test_safe_client_translates_request_failures(cls: type[Exception]) -> None:
    """Raised while requesting: the same FetchError out of SafeClient; connects retried."""

    def handler(request: httpx.Request) -> httpx.Response:
        raise _make(cls)

    sleeps: list[float] = []
    with _client(httpx.MockTransport(handler), sleeps) as client, pytest.raises(FetchError) as info:
        client.get(URL)
    expected = _expected(cls, "request")
    if cls.__name__ in CONNECT:
        assert str(info.value) == f"{URL}: {expected} (4 attempts)"
        assert len(sleeps) == 3
    else:
        assert str(info.value) == f"{URL}: {expected}"
        assert sleeps == []
    assert isinstance(info.value.__cause__, cls)


class _Breaking(httpx.SyncByteStream):
    """A body that fails after its first piece."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def __iter__(self) -> Iterator[bytes]:
        yield b"<urlset>"
        raise self.exc


@pytest.mark.parametrize("cls", HTTPX_CLASSES + HTTPCORE_CLASSES, ids=lambda c: c.__name__)
def test_safe_client_translates_body_failures(cls: type[Exception]) -> None:
    """Raised while the body streams: 'body read failed' or 'timed out reading the body'."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=_Breaking(_make(cls)))

    with _client(httpx.MockTransport(handler), []) as client, pytest.raises(FetchError) as info:
        client.get(URL)
    assert str(info.value) == f"{URL}: {_expected(cls, 'body')}"
    assert isinstance(info.value.__cause__, cls)
