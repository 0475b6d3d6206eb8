"""The open response that ``SafeClient.stream`` (changewatch.sitemaps.fetch) yields.

The body streams from the transport under the fetch's total deadline (which counts only
time spent waiting on the network); ``Content-Encoding: gzip`` is decoded here, once, in
bounded pieces, with the size and ratio caps of :class:`~changewatch.sitemaps.model.Limits`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Final

import httpx

from changewatch.errors import FetchError, SitemapLimitError, TimeLimitError
from changewatch.sitemaps.httperrors import HTTP_ERRORS, TIMEOUTS, fetch_error
from changewatch.sitemaps.model import Cutoff
from changewatch.sitemaps.pinned import Deadline

__all__ = ["CHUNK_SIZE", "RATIO_FLOOR_BYTES", "FetchResponse"]

#: Decoded pieces handed to the caller are at most this long (a gzip bomb never
#: inflates into one huge ``bytes``).
CHUNK_SIZE: Final = 65_536
#: A decoded/compressed ratio over ``max_ratio`` is only judged past this many bytes.
RATIO_FLOOR_BYTES: Final = 1_048_576


class FetchResponse:
    """An open response: status and headers read, the body still to stream.

    ``iter_bytes()`` yields the body with any ``Content-Encoding: gzip`` decoded (once, in
    pieces of at most :data:`CHUNK_SIZE` bytes); ``gzip_decoded`` then says so, and the
    parser must be told ``gzipped=False``. A gzip *file* served without that header is
    yielded as it is, for the parser to sniff.
    """

    def __init__(
        self,
        *,
        url: str,
        final_url: str,
        redirects: tuple[str, ...],
        response: httpx.Response,
        deadline: float,
        clock: Callable[[], float],
        socket_deadline: Deadline,
        total_timeout: float,
        max_bytes: int | None,
        max_ratio: int | None,
        cutoff: Cutoff | None = None,
    ) -> None:
        #: The URL asked for (normalised) and the URL the body came from.
        self.url = url
        self.final_url = final_url
        #: Every URL that redirected, in order (``final_url`` not included).
        self.redirects = redirects
        self.status = response.status_code
        self.headers = response.headers
        self.content_type: str | None = response.headers.get("content-type")
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip"):
            raise FetchError(
                final_url,
                f"unsupported Content-Encoding {encoding!r} (only gzip was asked for)",
                status=self.status,
            )
        self.gzip_decoded = encoding in ("gzip", "x-gzip")
        #: Bytes received (before decoding) and bytes yielded so far.
        self.bytes_received = 0
        self.bytes_yielded = 0
        self._response = response
        self._deadline = deadline
        self._clock = clock
        self._socket_deadline = socket_deadline
        self._total = total_timeout
        self._max_bytes = max_bytes
        self._max_ratio = max_ratio
        self._cutoff = cutoff

    def _raw(self) -> Iterator[bytes]:
        # The transport's stream, not ``iter_raw()``: an httpx.Response built with
        # ``content=`` (MockTransport) is already read, but its stream still iterates.
        stream = self._response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        chunks = iter(stream)
        cutoff = self._cutoff
        while True:
            # The cutoff is wall time on the client's clock: unlike the total timeout it is
            # not moved on by the caller's own work.
            if cutoff is not None and self._clock() >= cutoff.at:
                raise TimeLimitError(self.final_url, cutoff.name)
            if self._clock() >= self._deadline:
                raise FetchError(self.final_url, self._total_timeout())
            wait_until = self._deadline
            if cutoff is not None:
                wait_until = min(wait_until, cutoff.at)
            self._socket_deadline.value = wait_until
            try:
                chunk = next(chunks)
            except StopIteration:
                return
            except HTTP_ERRORS as exc:
                if isinstance(exc, TIMEOUTS):  # the total timeout or a cutoff, maybe
                    now = self._clock()
                    if cutoff is not None and now >= cutoff.at - 0.05:
                        raise TimeLimitError(self.final_url, cutoff.name) from exc
                    if now >= self._deadline - 0.01:
                        raise FetchError(self.final_url, self._total_timeout()) from exc
                raise fetch_error(self.final_url, exc, "body") from exc
            finally:
                self._socket_deadline.value = None
            self.bytes_received += len(chunk)
            handed = self._clock()
            yield chunk
            # The total timeout bounds waiting on the network, not the caller's own work.
            self._deadline += self._clock() - handed

    def _total_timeout(self) -> str:
        return f"total timeout of {self._total:g} s exceeded"

    def _gunzip(self, raw: Iterator[bytes]) -> Iterator[bytes]:
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        pending = False  # the current gzip member has started but not ended
        try:
            for data in raw:
                while data:
                    pending = True
                    piece = inflater.decompress(data, CHUNK_SIZE)
                    if piece:
                        yield piece
                    if inflater.eof:  # RFC 1952 §2.2: a gzip stream may hold several members
                        data = inflater.unused_data
                        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
                        pending = False
                    else:
                        data = inflater.unconsumed_tail
            tail = inflater.flush()
        except zlib.error as exc:
            raise FetchError(
                self.final_url, f"Content-Encoding gzip body is corrupt: {exc}"
            ) from exc
        if tail:
            yield tail
        if pending and not inflater.eof:
            raise FetchError(self.final_url, "Content-Encoding gzip body is truncated")

    def iter_bytes(self) -> Iterator[bytes]:
        """The body, ``Content-Encoding`` decoded; raises FetchError or SitemapLimitError."""
        pieces = self._gunzip(self._raw()) if self.gzip_decoded else self._raw()
        for piece in pieces:
            self.bytes_yielded += len(piece)
            if self._max_bytes is not None and self.bytes_yielded > self._max_bytes:
                raise SitemapLimitError(self.final_url, "max_bytes", self._max_bytes)
            if (
                self.gzip_decoded
                and self._max_ratio is not None
                and self.bytes_yielded > RATIO_FLOOR_BYTES
                and self.bytes_yielded > self._max_ratio * max(self.bytes_received, 1)
            ):
                raise SitemapLimitError(
                    self.final_url,
                    "max_ratio",
                    self._max_ratio,
                    f"Content-Encoding gzip inflates over the max_ratio limit of "
                    f"{self._max_ratio}:1 ({self.bytes_yielded} bytes from "
                    f"{self.bytes_received})",
                )
            yield piece

    def read(self) -> bytes:
        """The whole decoded body (for small documents such as robots.txt)."""
        return b"".join(self.iter_bytes())
