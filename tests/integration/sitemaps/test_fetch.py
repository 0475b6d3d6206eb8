"""SafeClient against a real HTTP server on 127.0.0.1: redirects, retries, timeouts, gzip, SSRF.

The loopback server needs ``allow_private=True``; the SSRF tests run without it. Tests that
need a *public* host name resolving somewhere inject ``resolve=`` (no network is used), and
the public-to-private redirect cases use ``httpx.MockTransport``.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from changewatch.errors import FetchError, SitemapLimitError, UnsafeURLError
from changewatch.sitemaps.fetch import DEFAULT_USER_AGENT, SafeClient, system_resolve

from .._http_server import LocalSite, Reply, Seen, serve

XML = b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>'


@pytest.fixture
def site() -> Iterator[LocalSite]:
    """A real threaded HTTP server on 127.0.0.1, torn down after the test."""
    yield from serve()


class Sleeps(list[float]):
    """A recording ``sleep`` that only moves its own ``clock`` (keeps the tests fast)."""

    def __init__(self) -> None:
        super().__init__()
        self.slept = 0.0

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        self.slept += seconds

    def clock(self) -> float:
        """``time.monotonic`` plus every wait this sleep skipped."""
        return time.monotonic() + self.slept


def client(**options: object) -> SafeClient:
    """A loopback-allowed client with small timeouts and a recording, skipping sleep."""
    sleeps = options.setdefault("sleep", Sleeps())
    assert isinstance(sleeps, Sleeps)
    defaults: dict[str, object] = {
        "allow_private": True,
        "connect_timeout": 2.0,
        "read_timeout": 2.0,
        "total_timeout": 5.0,
        "clock": sleeps.clock,
    }
    defaults.update(options)
    return SafeClient(**defaults)  # type: ignore[arg-type]


def test_stream_sends_the_user_agent_and_asks_for_gzip_only(site: LocalSite) -> None:
    """A plain 200 is streamed; the descriptive User-Agent and Accept-Encoding go out."""
    site.routes["/sitemap.xml"] = Reply(body=XML, headers={"Content-Type": "application/xml"})
    with client() as c, c.stream(site.url("/sitemap.xml")) as response:
        assert response.status == 200
        assert response.final_url == site.url("/sitemap.xml")
        assert response.redirects == ()
        assert response.content_type == "application/xml"
        assert response.gzip_decoded is False
        assert response.read() == XML
    seen = site.log[0]
    assert seen.headers["user-agent"] == DEFAULT_USER_AGENT
    assert DEFAULT_USER_AGENT.startswith("changewatch/")
    assert "sitemap reconciliation" in DEFAULT_USER_AGENT
    assert seen.headers["accept-encoding"] == "gzip"


def test_content_encoding_gzip_is_decoded_once(site: LocalSite) -> None:
    """Content-Encoding: gzip is decoded once; a .gz file without it stays gzipped."""
    packed = gzip.compress(XML)
    site.routes["/ce.xml"] = Reply(body=packed, headers={"Content-Encoding": "gzip"})
    site.routes["/file.xml.gz"] = Reply(body=packed, headers={"Content-Type": "application/gzip"})
    double = gzip.compress(packed)  # a .gz file sent with Content-Encoding: gzip on top
    site.routes["/double.xml.gz"] = Reply(body=double, headers={"Content-Encoding": "gzip"})
    with client() as c:
        with c.stream(site.url("/ce.xml")) as response:
            assert response.read() == XML
            assert response.gzip_decoded is True
            assert response.bytes_received == len(packed)
        with c.stream(site.url("/file.xml.gz")) as response:
            assert response.read() == packed
            assert response.gzip_decoded is False
        with c.stream(site.url("/double.xml.gz")) as response:
            assert response.read() == packed  # one layer only: the file's own gzip remains
            assert response.gzip_decoded is True


def test_multi_member_gzip_and_big_bodies_come_in_bounded_pieces(site: LocalSite) -> None:
    """Concatenated gzip members are all decoded; no piece exceeds 64 KiB."""
    part = b"<url><loc>https://example.com/</loc></url>" * 20_000
    site.routes["/big"] = Reply(
        body=gzip.compress(part) + gzip.compress(part), headers={"Content-Encoding": "gzip"}
    )
    with client() as c, c.stream(site.url("/big")) as response:
        pieces = list(response.iter_bytes())
    assert b"".join(pieces) == part + part
    assert max(len(piece) for piece in pieces) <= 65_536


def test_broken_gzip_encoding_is_a_fetch_error(site: LocalSite) -> None:
    """A truncated or corrupt gzip Content-Encoding and unknown encodings are refused."""
    packed = gzip.compress(XML * 50)
    site.routes["/truncated"] = Reply(body=packed[:-20], headers={"Content-Encoding": "gzip"})
    site.routes["/corrupt"] = Reply(body=b"not gzip at all", headers={"Content-Encoding": "gzip"})
    site.routes["/br"] = Reply(body=b"\x00", headers={"Content-Encoding": "br"})
    with client() as c:
        for path, message in (
            ("/truncated", "truncated"),
            ("/corrupt", "corrupt"),
            ("/br", "unsupported Content-Encoding 'br'"),
        ):
            with pytest.raises(FetchError, match=message), c.stream(site.url(path)) as response:
                response.read()


def test_gzip_bomb_stops_at_the_ratio_and_size_caps(site: LocalSite) -> None:
    """A small body inflating past max_ratio or max_bytes is abandoned while streaming."""
    bomb = gzip.compress(b"\x00" * 20_000_000, compresslevel=9)  # ~20 KB inflating to 20 MB
    site.routes["/bomb"] = Reply(body=bomb, headers={"Content-Encoding": "gzip"})
    with client() as c:
        with (
            pytest.raises(SitemapLimitError, match="max_ratio") as info,
            c.stream(site.url("/bomb"), max_ratio=100) as response,
        ):
            response.read()
        assert info.value.limit == "max_ratio"
        assert response.bytes_yielded < 2_200_000  # stopped early, not after inflating it all
        with (
            pytest.raises(SitemapLimitError, match="max_bytes"),
            c.stream(site.url("/bomb"), max_bytes=1_000_000) as response,
        ):
            response.read()
        assert response.bytes_yielded <= 1_000_000 + 65_536


def test_redirects_are_followed_and_recorded(site: LocalSite) -> None:
    """Relative and absolute Locations are followed; every hop is listed."""
    site.routes["/a"] = Reply(301, headers={"Location": "/b"})
    site.routes["/b"] = Reply(302, headers={"Location": site.url("/c?x=1#frag")})
    site.routes["/c?x=1"] = Reply(307, headers={"Location": "d"})
    site.routes["/d"] = Reply(body=XML)
    with client() as c, c.stream(site.url("/a")) as response:
        assert response.final_url == site.url("/d")
        assert response.redirects == (site.url("/a"), site.url("/b"), site.url("/c?x=1"))
        assert response.read() == XML


def test_redirect_loop_is_detected(site: LocalSite) -> None:
    """A→B→A is reported as a loop after one round, naming the hops."""
    site.routes["/loop-a"] = Reply(302, headers={"Location": "/loop-b"})
    site.routes["/loop-b"] = Reply(302, headers={"Location": "/loop-a"})
    site.routes["/self"] = Reply(301, headers={"Location": "/self"})
    with client() as c:
        with pytest.raises(FetchError, match=r"redirect loop: .*/loop-a → .*/loop-b → .*/loop-a"):
            c.get(site.url("/loop-a"))
        with pytest.raises(FetchError, match="redirect loop"):
            c.get(site.url("/self"))
    assert site.hits("/loop-a") == 1
    assert site.hits("/loop-b") == 1


def test_at_most_max_redirects(site: LocalSite) -> None:
    """Five redirects are followed; a sixth is refused (and max_redirects is configurable)."""
    for hop in range(7):
        site.routes[f"/hop{hop}"] = Reply(302, headers={"Location": f"/hop{hop + 1}"})
    site.routes["/hop5"] = Reply(body=b"five hops in")
    site.routes["/far5"] = Reply(302, headers={"Location": "/far6"})
    for hop in range(5):
        site.routes[f"/far{hop}"] = Reply(302, headers={"Location": f"/far{hop + 1}"})
    site.routes["/far6"] = Reply(body=b"six hops in")
    with client() as c:
        assert c.get(site.url("/hop0"))[2] == b"five hops in"
        with pytest.raises(FetchError, match="more than 5 redirects") as info:
            c.get(site.url("/far0"))
        assert info.value.status == 302
    assert site.hits("/far6") == 0
    with client(max_redirects=1) as c, pytest.raises(FetchError, match="more than 1 redirects"):
        c.get(site.url("/hop3"))


def test_429_with_retry_after_seconds_and_date_is_honoured(site: LocalSite) -> None:
    """Retry-After in seconds and as an HTTP date sets the wait before the retry."""
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    answers = iter(
        [
            Reply(429, headers={"Retry-After": "3"}),
            Reply(503, headers={"Retry-After": format_datetime(now + timedelta(seconds=7))}),
            Reply(body=XML),
        ]
    )
    site.routes["/busy"] = lambda _seen: next(answers)
    sleeps = Sleeps()
    with client(sleep=sleeps, wall_clock=lambda: now, total_timeout=30.0) as c:
        assert c.get(site.url("/busy"))[1:] == (200, XML)
    assert sleeps == [3.0, 7.0]
    assert site.hits("/busy") == 3


def test_retry_after_over_the_cap_fails_at_once(site: LocalSite) -> None:
    """A Retry-After longer than max_retry_after is not waited for: a clear 429 error."""
    site.routes["/later"] = Reply(429, headers={"Retry-After": "3600"})
    sleeps = Sleeps()
    with (
        client(sleep=sleeps, max_retry_after=60) as c,
        pytest.raises(FetchError, match="Retry-After 3600 s, over the 60 s") as info,
    ):
        c.get(site.url("/later"))
    assert info.value.status == 429
    assert sleeps == []
    assert site.hits("/later") == 1


def test_500_then_200_is_retried_with_exponential_backoff(site: LocalSite) -> None:
    """Two 500s then a 200: retried after 0.5 s and 1 s (backoff × 2^attempt)."""
    answers = iter([Reply(500), Reply(502), Reply(body=XML)])
    site.routes["/flaky"] = lambda _seen: next(answers)
    sleeps = Sleeps()
    with client(sleep=sleeps, backoff=0.5) as c:
        _, status, body = c.get(site.url("/flaky"))
    assert (status, body) == (200, XML)
    assert sleeps == [0.5, 1.0]


def test_persistent_5xx_gives_up_after_the_retries(site: LocalSite) -> None:
    """retries=3 means four attempts, then FetchError with the status."""
    site.routes["/down"] = Reply(503)
    with (
        client(retries=3) as c,
        pytest.raises(FetchError, match=r"HTTP 503 \(4 attempts\)") as info,
    ):
        c.get(site.url("/down"))
    assert info.value.status == 503
    assert info.value.retryable is True
    assert site.hits("/down") == 4


def test_4xx_is_not_retried(site: LocalSite) -> None:
    """A 404 fails at once with its status and is not retryable."""
    with client() as c, pytest.raises(FetchError, match="HTTP 404") as info:
        c.get(site.url("/missing"))
    assert info.value.status == 404
    assert info.value.retryable is False
    assert site.hits("/missing") == 1


def test_3xx_without_location_is_an_error(site: LocalSite) -> None:
    """A redirect status without Location, or 300/304, is not mistaken for a body."""
    site.routes["/nowhere"] = Reply(302)
    site.routes["/choices"] = Reply(300, body=b"<html>pick one</html>")
    with client() as c:
        for path, status in (("/nowhere", 302), ("/choices", 300)):
            with pytest.raises(FetchError, match=f"HTTP {status} without a Location") as info:
                c.get(site.url(path))
            assert info.value.status == status


def test_resolver_answers_must_be_addresses(site: LocalSite) -> None:
    """A resolver answer that is no IP address is refused even with allow_private."""
    with (
        client(resolve=lambda host, port: ["localhost"]) as c,
        pytest.raises(UnsafeURLError, match="'localhost' is not an IP address"),
    ):
        c.get(site.url("/", host="named.test"))


def test_connect_errors_are_retried(site: LocalSite) -> None:
    """A refused connection is retried with backoff, then reported."""
    sleeps = Sleeps()
    closed = site.url("/").replace(str(site.port), "1")  # nothing listens on port 1
    with client(sleep=sleeps, retries=2) as c, pytest.raises(FetchError, match="cannot connect"):
        c.get(closed)
    assert sleeps == [0.5, 1.0]


def test_read_timeout(site: LocalSite) -> None:
    """A server slower than read_timeout to answer is a timeout error, not a hang."""
    site.routes["/slow"] = Reply(body=XML, delay=3.0)
    started = time.monotonic()
    with client(read_timeout=0.2) as c, pytest.raises(FetchError, match="timed out"):
        c.get(site.url("/slow"))
    assert time.monotonic() - started < 2.0  # far sooner than the server would answer


def test_total_timeout_stops_a_dripping_body(site: LocalSite) -> None:
    """A body trickling in under read_timeout per byte still stops at total_timeout."""
    site.routes["/drip"] = Reply(body=b"x" * 100, drip=0.05)
    started = time.monotonic()
    with (
        client(read_timeout=1.0, total_timeout=0.6) as c,
        pytest.raises(FetchError, match="timeout"),
    ):
        c.get(site.url("/drip"))
    elapsed = time.monotonic() - started
    assert 0.5 < elapsed < 2.5  # the whole body would take 5 s


def test_total_timeout_excludes_the_callers_own_time(site: LocalSite) -> None:
    """Time the caller spends between pieces is not charged to the total timeout."""
    site.routes["/two"] = Reply(body=b"y" * 200_000)
    with client(total_timeout=0.5) as c, c.stream(site.url("/two")) as response:
        received = 0
        for piece in response.iter_bytes():
            received += len(piece)
            time.sleep(0.2)
    assert received == 200_000


# SSRF -------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433", "0x7f.1", "[::1]"])
def test_loopback_is_refused_without_allow_private(site: LocalSite, host: str) -> None:
    """Without allow_private, loopback in any spelling is refused before any request."""
    url = f"http://{host}:{site.port}/sitemap.xml"
    site.routes["/sitemap.xml"] = Reply(body=XML)
    with SafeClient() as c, pytest.raises(UnsafeURLError, match="refused address") as info:
        c.get(url)
    assert "loopback" in str(info.value)
    assert info.value.retryable is False
    assert site.log == []


def test_redirect_to_loopback_is_refused(site: LocalSite) -> None:
    """A public name redirecting to a private address is refused at that hop."""
    site.routes["/go"] = Reply(302, headers={"Location": site.url("/inside")})
    site.routes["/inside"] = Reply(body=b"secret")

    def resolve(host: str, port: int) -> list[str]:
        return ["93.184.215.14"] if host == "public.example" else system_resolve(host, port)

    # The first hop is "public" by resolution; its bytes still come from the local server.
    def forward(request: httpx.Request) -> httpx.Response:
        assert request.url.host == "public.example"
        return httpx.Response(302, headers={"Location": site.url("/inside")})

    with (
        SafeClient(resolve=resolve, transport=httpx.MockTransport(forward)) as c,
        pytest.raises(UnsafeURLError, match=r"redirect from http://public\.example/go") as info,
    ):
        c.get("http://public.example/go")
    assert "127.0.0.1 is loopback" in str(info.value)
    assert site.hits("/inside") == 0


def _public_then(target: str, resolved: dict[str, list[str]]) -> SafeClient:
    def resolve(host: str, port: int) -> list[str]:
        return resolved[host]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "public.example":
            return httpx.Response(301, headers={"Location": target})
        return httpx.Response(200, content=b"must not be fetched")

    return SafeClient(resolve=resolve, transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("target", "resolved", "reason"),
    [
        ("http://metadata.internal/latest", ["169.254.169.254"], "link-local"),
        ("http://intranet.example/", ["10.0.0.5"], "private"),
        ("http://cgnat.example/", ["100.64.1.1"], "carrier-grade NAT"),
        ("http://mixed.example/", ["93.184.215.14", "192.168.1.9"], "private"),
        ("http://v6.example/", ["fd00::1"], "unique local"),
        ("http://mapped.example/", ["::ffff:127.0.0.1"], "loopback"),
        ("http://[::ffff:a9fe:a9fe]/", [], "link-local"),
        ("http://0xa9fea9fe/", [], "link-local"),
    ],
)
def test_public_redirect_to_a_private_address_is_refused(
    target: str, resolved: list[str], reason: str
) -> None:
    """Every address of every hop is checked: one private answer among public ones suffices."""
    hosts = {"public.example": ["93.184.215.14"]}
    if resolved:
        hosts[httpx.URL(target).host] = resolved
    with (
        _public_then(target, hosts) as c,
        pytest.raises(UnsafeURLError, match=r"redirect from http://public\.example/") as info,
    ):
        c.get("http://public.example/")
    assert reason in str(info.value)


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("ftp://public.example/sitemap.xml", "scheme 'ftp'"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("http://user:pw@public.example/", "credentials"),
        ("http://public.example\\@evil.example/", "backslash"),
        ("/next\tpage", "whitespace"),
        ("/\x00", "control character"),
    ],
)
def test_redirect_to_an_unsafe_url_is_refused(target: str, reason: str) -> None:
    """A redirect's Location passes the same URL checks as the first URL."""
    with (
        _public_then(target, {"public.example": ["93.184.215.14"]}) as c,
        pytest.raises(UnsafeURLError, match=reason),
    ):
        c.get("http://public.example/")


def test_https_to_http_downgrade_can_be_refused() -> None:
    """allow_downgrade=False refuses an https→http redirect; the default follows it."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "https":
            return httpx.Response(301, headers={"Location": "http://public.example/x"})
        return httpx.Response(200, content=XML)

    def resolve(host: str, port: int) -> list[str]:
        return ["93.184.215.14"]

    with SafeClient(resolve=resolve, transport=httpx.MockTransport(handler)) as c:
        assert c.get("https://public.example/x") == ("http://public.example/x", 200, XML)
    with (
        SafeClient(
            resolve=resolve, transport=httpx.MockTransport(handler), allow_downgrade=False
        ) as c,
        pytest.raises(UnsafeURLError, match="downgrades https to http"),
    ):
        c.get("https://public.example/x")


def test_connection_is_pinned_to_the_checked_address(site: LocalSite) -> None:
    """The socket goes to the address the resolver gave (checked), once per hop, never re-resolved.

    ``rebind.test`` exists in no DNS: the request can only succeed through the pinned
    address, and the Host header still names the host.
    """
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"] if len(calls) == 1 else ["10.66.66.66"]  # a rebinding resolver

    site.routes["/pinned"] = Reply(body=b"pinned")
    with client(resolve=resolve) as c:
        assert c.get(f"http://rebind.test:{site.port}/pinned")[2] == b"pinned"
    assert calls == ["rebind.test"]
    assert site.log[-1].host == "rebind.test"
    assert site.log[-1].headers["host"] == f"rebind.test:{site.port}"


def test_rebinding_to_a_private_address_is_refused_on_the_next_fetch() -> None:
    """A host that later resolves to a private address is refused on that fetch."""
    answers = iter([["93.184.215.14"], ["127.0.0.1"]])

    def resolve(host: str, port: int) -> list[str]:
        return next(answers)

    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=XML))
    with SafeClient(resolve=resolve, transport=transport) as c:
        assert c.get("http://rebind.example/")[2] == XML
        with pytest.raises(UnsafeURLError, match="loopback"):
            c.get("http://rebind.example/")


def test_unresolvable_host_is_a_clear_error() -> None:
    """A name that does not resolve fails with the host named, without retries."""
    sleeps = Sleeps()
    with (
        SafeClient(sleep=sleeps) as c,
        pytest.raises(FetchError, match=r"cannot resolve host 'no-such-host\.invalid'"),
    ):
        c.get("http://no-such-host.invalid/sitemap.xml")
    assert sleeps == []


def test_a_hanging_resolver_is_cut_off_at_the_connect_timeout() -> None:
    """Name resolution is bounded too: a resolver that hangs fails the fetch in time."""
    release = threading.Event()

    def hanging(host: str, port: int) -> list[str]:
        release.wait(5)
        return ["93.184.215.14"]

    started = time.monotonic()
    try:
        with (
            SafeClient(resolve=hanging, connect_timeout=0.3, retries=0) as c,
            pytest.raises(FetchError, match=r"resolving host 'slow-dns\.example' timed out"),
        ):
            c.get("http://slow-dns.example/sitemap.xml")
    finally:
        release.set()
    assert time.monotonic() - started < 2.0


def test_ipv6_literal_and_ipv6_answers_are_pinned_too() -> None:
    """An IPv6 literal host and a name resolving to an IPv6 address both connect and work."""
    try:
        server = serve("::1")
        site = next(server)
    except OSError as exc:  # no IPv6 loopback on this machine
        pytest.skip(f"no IPv6 loopback: {exc}")
    try:
        site.routes["/six"] = Reply(body=b"over IPv6")
        with client() as c:
            assert c.get(f"{site.base}/six")[2] == b"over IPv6"
        with client(resolve=lambda host, port: ["::1"]) as c:
            assert c.get(f"http://six.test:{site.port}/six")[2] == b"over IPv6"
        with SafeClient() as c, pytest.raises(UnsafeURLError, match="::1 is loopback"):
            c.get(f"{site.base}/six")
    finally:
        server.close()
    assert [seen.host for seen in site.log] == ["[::1]", "six.test"]


def test_bad_options_are_refused() -> None:
    """Non-positive timeouts and negative counts are configuration errors."""
    with pytest.raises(ValueError, match="total_timeout"):
        SafeClient(total_timeout=0)
    with pytest.raises(ValueError, match="retries"):
        SafeClient(retries=-1)


def test_seen_log_records_hosts(site: LocalSite) -> None:
    """The test server tells virtual hosts apart (what the walk tests rely on)."""
    site.routes["a.test/x"] = Reply(body=b"a")
    site.routes["/x"] = Reply(body=b"other")
    resolve = lambda host, port: ["127.0.0.1"]  # noqa: E731
    with client(resolve=resolve) as c:
        assert c.get(site.url("/x", host="a.test"))[2] == b"a"
        assert c.get(site.url("/x", host="b.test"))[2] == b"other"
    assert [seen.host for seen in site.log] == ["a.test", "b.test"]
    assert isinstance(site.log[0], Seen)


def test_one_client_shared_by_threads(site: LocalSite) -> None:
    """Threads sharing a client get their own hosts' bodies; one thread's timeout is its own."""
    for n in range(6):
        site.routes[f"t{n}.test/page"] = Reply(body=f"body of t{n}".encode())
    site.routes["slow.test/page"] = Reply(body=b"z" * 40, drip=0.05)
    results: dict[str, list[bytes]] = {}
    failures: list[str] = []

    def fetch_many(host: str) -> None:
        try:
            results[host] = [c.get(site.url("/page", host=host))[2] for _ in range(10)]
        except FetchError as exc:
            failures.append(f"{host}: {exc}")

    with client(resolve=lambda host, port: ["127.0.0.1"], total_timeout=1.0) as c:
        threads = [
            threading.Thread(target=fetch_many, args=(host,))
            for host in [*(f"t{n}.test" for n in range(6)), "slow.test"]
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    assert len(failures) == 1
    assert failures[0].startswith("slow.test:")
    assert "total timeout of 1 s exceeded" in failures[0]
    for n in range(6):
        assert results[f"t{n}.test"] == [f"body of t{n}".encode()] * 10
