"""The pinned transport: an httpx transport that connects only to checked addresses.

An httpcore connection pool whose network backend looks ``(host, port)`` up in a table
that :class:`~changewatch.sitemaps.fetch.SafeClient` fills with the addresses it resolved
and checked, instead of resolving the host again — what ``curl --resolve`` does, and what
closes the DNS-rebinding window between the check and the connection. The URL keeps the
hostname, so the ``Host`` header, TLS SNI and certificate verification use it. Every read
and write is also capped by the running fetch's total deadline. httpcore's exceptions pass
through as they are; :mod:`~changewatch.sitemaps.httperrors` translates them.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import certifi
import httpcore
import httpx

__all__ = ["Deadline", "PinnedTransport", "Pins"]

#: ``(host, port)`` → the checked addresses a connection to it may use.
Pins = dict[tuple[str, int], tuple[str, ...]]


class Deadline(threading.local):
    """The deadline of the fetch running on this thread (``None``: no fetch), on ``clock``."""

    value: float | None = None

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read and write waits no later than the total deadline."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._stream = stream
        self._deadline = deadline

    def _cap(self, timeout: float | None, error: type[Exception]) -> float | None:
        if self._deadline.value is None:
            return timeout
        remaining = self._deadline.value - self._deadline.clock()
        if remaining <= 0:
            raise error("total timeout exceeded")
        return remaining if timeout is None else min(timeout, remaining)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, self._cap(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._cap(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        capped = self._cap(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._stream.start_tls(ssl_context, server_hostname, capped), self._deadline
        )

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _PinnedBackend(httpcore.SyncBackend):
    """Connects ``host:port`` only to the addresses the client checked for it."""

    def __init__(self, pins: Pins, deadline: Deadline):
        self._pins = pins
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        addresses = self._pins.get((host, port))
        if not addresses:  # fail closed: never resolve here
            raise httpcore.ConnectError(f"no checked address for {host}:{port}")
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = super().connect_tcp(
                    address, port, timeout, local_address, socket_options or []
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            return _DeadlineStream(stream, self._deadline)
        assert failure is not None
        raise failure


class _PinnedStream(httpx.SyncByteStream):
    """httpcore's response stream as httpx's (its exceptions as they are: see
    :mod:`~changewatch.sitemaps.httperrors`)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        self._stream.close()


class PinnedTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore pool that connects only to checked addresses."""

    def __init__(
        self, pins: Pins, deadline: Deadline, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or ssl.create_default_context(cafile=certifi.where()),
            network_backend=_PinnedBackend(pins, deadline),
            max_connections=10,
            max_keepalive_connections=5,
            keepalive_expiry=5.0,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = self._pool.handle_request(core_request)  # httperrors translates failures
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_PinnedStream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()
