"""Safe HTTP fetching of sitemaps and robots.txt: httpx behind SSRF guards.

:class:`SafeClient` fetches one URL at a time as a stream. On every hop of a redirect
chain it checks the URL (:func:`~changewatch.sitemaps.netguard.check_url`), resolves the
host and checks *every* address (:func:`~changewatch.sitemaps.netguard.check_address`),
then connects only to those checked addresses: the default transport is an httpcore
connection pool whose network backend looks the host up in the client's table of checked
addresses instead of resolving it again (what ``curl --resolve`` does), so no DNS
rebinding can slip a private address in between the check and the connection. The
``Host`` header, TLS SNI and certificate verification all still use the hostname.

Redirects are followed here, never by httpx; retries, ``Retry-After``, the connect, read
and total timeouts and the one-time ``Content-Encoding: gzip`` decoding are also here.
docs/fetching.md describes every rule.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import math
import re
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Final

import httpx
from ada_url import join_url

from changewatch._version import __version__
from changewatch.errors import FetchError, TimeLimitError, UnsafeURLError
from changewatch.httpdate import parse_http_date
from changewatch.sitemaps.httperrors import HTTP_ERRORS, fetch_error, is_connect_failure
from changewatch.sitemaps.model import Cutoff
from changewatch.sitemaps.netguard import address_refusal, character_refusal, url_refusal
from changewatch.sitemaps.pinned import Deadline, PinnedTransport, Pins
from changewatch.sitemaps.response import FetchResponse

__all__ = [
    "DEFAULT_USER_AGENT",
    "FetchResponse",
    "Resolver",
    "SafeClient",
    "parse_retry_after",
    "system_resolve",
]

DEFAULT_USER_AGENT: Final = (
    f"changewatch/{__version__} (+https://github.com/changewatch/changewatch; "
    "sitemap reconciliation)"
)
DEFAULT_CONNECT_TIMEOUT_S: Final = 10.0
DEFAULT_READ_TIMEOUT_S: Final = 30.0
DEFAULT_TOTAL_TIMEOUT_S: Final = 120.0
DEFAULT_MAX_RETRY_AFTER_S: Final = 60.0

#: A fetch failing this close to its cutoff failed because of it (timeouts fire a little early).
_CUTOFF_SLACK_S: Final = 0.05
_DELAY_SECONDS: Final = re.compile(r"[0-9]+")
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_ACCEPT: Final = "application/xml, text/xml;q=0.9, text/plain;q=0.8, */*;q=0.5"

#: ``resolve(host, port)`` returns the host's IP addresses as strings.
Resolver = Callable[[str, int], Sequence[str]]


def system_resolve(host: str, port: int) -> list[str]:
    """The host's addresses from ``socket.getaddrinfo`` (TCP), in resolver order, no repeats."""
    addresses: list[str] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (RFC 9110 §10.2.3), or ``None``.

    >>> parse_retry_after("7", datetime(2026, 1, 1, tzinfo=UTC))
    7.0
    >>> parse_retry_after("Thu, 01 Jan 2026 00:00:30 GMT", datetime(2026, 1, 1, tzinfo=UTC))
    30.0
    >>> parse_retry_after("soon", datetime(2026, 1, 1, tzinfo=UTC)) is None
    True
    """
    if value is None:
        return None
    text = value.strip()
    if _DELAY_SECONDS.fullmatch(text):  # ASCII digits only: "²".isdigit() is true
        # Past 15 digits it is longer than any cap (and int() refuses 4,300 digits).
        return float(int(text)) if len(text) <= 15 else math.inf
    when = parse_http_date(text)
    if when is None:
        return None
    return max(0.0, (when - now).total_seconds())


class SafeClient:
    """Fetches URLs as streams, refusing private addresses, on every redirect hop.

    ``allow_private=True`` lifts only the address check (for tests and intranets): URLs
    are still checked, hosts still resolved once and connections still pinned.
    ``transport`` replaces the pinned transport (``httpx.MockTransport`` in tests): the
    addresses are still resolved with ``resolve`` and checked, but connecting is then the
    transport's business. ``ssl_context`` replaces the default one (certificates verified
    against the certifi bundle, for the hostname). ``sleep``, ``clock`` (monotonic) and
    ``wall_clock`` (for ``Retry-After`` dates) are injectable for tests.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        user_agent: str = DEFAULT_USER_AGENT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        read_timeout: float = DEFAULT_READ_TIMEOUT_S,
        total_timeout: float = DEFAULT_TOTAL_TIMEOUT_S,
        max_redirects: int = 5,
        retries: int = 3,
        backoff: float = 0.5,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER_S,
        allow_downgrade: bool = True,
        transport: httpx.BaseTransport | None = None,
        ssl_context: ssl.SSLContext | None = None,
        resolve: Resolver = system_resolve,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        for name, value in (
            ("connect_timeout", connect_timeout),
            ("read_timeout", read_timeout),
            ("total_timeout", total_timeout),
        ):
            if not value > 0:
                raise ValueError(f"{name} must be positive, got {value!r}")
        if max_redirects < 0 or retries < 0 or backoff < 0 or max_retry_after < 0:
            raise ValueError("max_redirects, retries, backoff and max_retry_after must be >= 0")
        self.allow_private = allow_private
        self.user_agent = user_agent
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.total_timeout = total_timeout
        self.max_redirects = max_redirects
        self.retries = retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.allow_downgrade = allow_downgrade
        self._resolve = resolve
        self._sleep = sleep
        self._clock = clock
        self._wall_clock = wall_clock
        self._deadline = Deadline(clock)
        self._pins: Pins = {}
        self._transport = transport or PinnedTransport(self._pins, self._deadline, ssl_context)
        # getaddrinfo cannot be given a timeout: it runs in these threads, and is waited
        # for at most connect_timeout (and never past the total deadline).
        self._resolver_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="changewatch-resolve"
        )

    def __enter__(self) -> SafeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool and the resolver threads."""
        self._transport.close()
        self._resolver_pool.shutdown(wait=False, cancel_futures=True)

    @property
    def clock(self) -> Callable[[], float]:
        """The monotonic clock this client times with (a :class:`Cutoff` is on it)."""
        return self._clock

    @contextmanager
    def stream(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        max_ratio: int | None = None,
        cutoff: Cutoff | None = None,
    ) -> Iterator[FetchResponse]:
        """Fetch ``url`` (GET); yield the open :class:`FetchResponse` of the final hop.

        Raises :class:`UnsafeURLError` for a refused URL or address on any hop, and
        :class:`FetchError` (``.status`` set when there was one) for a 4xx/5xx answer
        after retries, too many redirects, a redirect loop, timeouts and network errors.
        ``max_bytes`` and ``max_ratio`` (see :class:`~changewatch.sitemaps.model.Limits`)
        cap the decoded body while it streams. ``cutoff`` ends every wait (connecting,
        retrying, reading the body) at ``cutoff.at``, whatever the total timeout has left,
        with a :class:`~changewatch.errors.TimeLimitError` naming it.
        """
        start = self._check_url(url, None)
        deadline = self._clock() + self.total_timeout
        what = f"total timeout of {self.total_timeout:g} s"
        if cutoff is not None:
            if self._clock() >= cutoff.at:
                raise TimeLimitError(start, cutoff.name)
            if cutoff.at < deadline:
                deadline, what = cutoff.at, cutoff.name
        try:
            response, final_url, redirects = self._follow(start, deadline, what)
        except UnsafeURLError:
            raise
        except FetchError as exc:
            if cutoff is not None and self._clock() >= cutoff.at - _CUTOFF_SLACK_S:
                raise TimeLimitError(exc.url, cutoff.name) from exc
            raise
        try:
            yield FetchResponse(
                url=start,
                final_url=final_url,
                redirects=redirects,
                response=response,
                deadline=deadline,
                clock=self._clock,
                socket_deadline=self._deadline,
                total_timeout=self.total_timeout,
                max_bytes=max_bytes,
                max_ratio=max_ratio,
                cutoff=cutoff,
            )
        finally:
            response.close()

    def get(self, url: str, *, max_bytes: int | None = None) -> tuple[str, int, bytes]:
        """``(final_url, status, decoded body)`` of a small document such as robots.txt."""
        with self.stream(url, max_bytes=max_bytes) as response:
            return response.final_url, response.status, response.read()

    # -- one hop ------------------------------------------------------------------------

    def _check_url(self, url: str, origin: str | None) -> str:
        reason, normalised = url_refusal(url)
        if reason is not None:
            hop = f"redirect from {origin} refused: " if origin else "refused URL: "
            raise UnsafeURLError(url if len(url) <= 200 else url[:200] + "…", hop + reason)
        return normalised.partition("#")[0]

    def _pin(self, url: str, origin: str | None, deadline: float) -> None:
        """Resolve the URL's host, check every address, record them for the connection."""
        parsed = httpx.URL(url)
        host = parsed.raw_host.decode("ascii")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:  # an IP literal (WHATWG normalisation wrote every IPv4 form dotted)
            addresses: Sequence[str] = [str(ipaddress.ip_address(host))]
        except ValueError:
            lookup = self._resolver_pool.submit(self._resolve, host, port)
            wait = min(self.connect_timeout, max(deadline - self._clock(), 0.001))
            try:
                addresses = lookup.result(timeout=wait)
            except concurrent.futures.TimeoutError:
                lookup.cancel()
                raise FetchError(
                    url, f"resolving host {host!r} timed out after {wait:g} s"
                ) from None
            except (OSError, UnicodeError) as exc:
                error = FetchError(url, f"cannot resolve host {host!r}: {exc}")
                error.retryable = isinstance(exc, socket.gaierror) and exc.errno == socket.EAI_AGAIN
                raise error from exc
            if not addresses:
                raise FetchError(url, f"host {host!r} resolved to no address") from None
        for address in addresses:
            reason = address_refusal(address)
            if reason is None:
                continue
            if self.allow_private and _is_ip(address):
                continue  # allow_private lifts the address check only
            via = f"redirect from {origin}: " if origin else ""
            raise UnsafeURLError(url, f"{via}refused address of {host!r}: {reason}")
        self._pins[(host, port)] = tuple(addresses)

    def _timeouts(self, deadline: float) -> dict[str, float]:
        remaining = max(deadline - self._clock(), 0.001)
        connect = min(self.connect_timeout, remaining)
        read = min(self.read_timeout, remaining)
        return {"connect": connect, "read": read, "write": read, "pool": connect}

    def _send(self, url: str, origin: str | None, deadline: float, what: str) -> httpx.Response:
        """GET one URL, retrying connect errors, 429 and 5xx with exponential backoff.

        ``deadline`` ends every wait; ``what`` names it in the errors it causes.
        """
        attempt = 0
        while True:
            if self._clock() >= deadline:
                raise FetchError(url, f"{what} exceeded")
            wait = self.backoff * 2**attempt
            status: int | None = None
            cause: BaseException | None = None
            try:
                self._pin(url, origin, deadline)
                response = self._request(url, deadline)
            except HTTP_ERRORS as exc:
                if not is_connect_failure(exc):
                    raise fetch_error(url, exc) from exc
                detail, cause = str(fetch_error(url, exc)).partition(f"{url}: ")[2], exc
            except FetchError as exc:  # a resolver failure; only a temporary one is retried
                if not exc.retryable:
                    raise
                detail, cause = str(exc).partition(f"{url}: ")[2], exc
            else:
                status = response.status_code
                if status != 429 and not 500 <= status <= 599:
                    return response
                retry_after = parse_retry_after(
                    response.headers.get("retry-after"), self._wall_clock()
                )
                response.close()
                detail = f"HTTP {status}"
                if retry_after is not None:
                    if retry_after > self.max_retry_after:
                        raise FetchError(
                            url,
                            f"HTTP {status} with Retry-After {retry_after:g} s, over the "
                            f"{self.max_retry_after:g} s this client waits at most",
                            status=status,
                        )
                    wait = retry_after
            if attempt >= self.retries:
                tries = f"{attempt + 1} attempt{'s' if attempt else ''}"
                raise FetchError(url, f"{detail} ({tries})", status=status) from cause
            if self._clock() + wait >= deadline:
                raise FetchError(
                    url,
                    f"{detail}; waiting {wait:g} s to retry would pass the {what}",
                    status=status,
                ) from cause
            self._sleep(wait)
            attempt += 1

    def _request(self, url: str, deadline: float) -> httpx.Response:
        request = httpx.Request(
            "GET",
            url,
            headers={"User-Agent": self.user_agent, "Accept": _ACCEPT, "Accept-Encoding": "gzip"},
            extensions={"timeout": self._timeouts(deadline)},
        )
        self._deadline.value = deadline
        try:
            return self._transport.handle_request(request)
        finally:
            self._deadline.value = None

    def _follow(
        self, url: str, deadline: float, what: str
    ) -> tuple[httpx.Response, str, tuple[str, ...]]:
        """Follow redirects by hand, checking every hop; return the final response."""
        chain: list[str] = []
        current = url
        while True:
            origin = chain[-1] if chain else None
            response = self._send(current, origin, deadline, what)
            status = response.status_code
            location = response.headers.get("location")
            if status in _REDIRECTS and location is not None:
                response.close()
                refusal = character_refusal(location)
                if refusal is not None:
                    raise UnsafeURLError(
                        current, f"redirect refused: its Location {location!r} {refusal}"
                    )
                try:
                    target = join_url(current, location)
                except ValueError:
                    raise FetchError(
                        current,
                        f"HTTP {status} redirect to an invalid Location {location!r}",
                        status=status,
                    ) from None
                target = self._check_url(target, current)
                chain.append(current)
                if target in chain:
                    loop = " → ".join([*chain[chain.index(target) :], target])
                    raise FetchError(url, f"redirect loop: {loop}", status=status)
                if len(chain) > self.max_redirects:
                    raise FetchError(
                        url,
                        f"more than {self.max_redirects} redirects (gave up at {target})",
                        status=status,
                    )
                if (
                    not self.allow_downgrade
                    and current.startswith("https:")
                    and target.startswith("http:")
                ):
                    raise UnsafeURLError(
                        target, f"redirect from {current} downgrades https to http"
                    )
                current = target
                continue
            if status >= 300:  # an error, or a 3xx that is no usable redirect
                response.close()
                detail = f"HTTP {status}" if status >= 400 else f"HTTP {status} without a Location"
                error = FetchError(current, detail, status=status)
                error.retryable = status == 429 or status >= 500
                raise error
            return response, current, tuple(chain)
