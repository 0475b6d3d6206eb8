"""The SSRF guards: every refused address range, embedded IPv4 unwrapping, URL checks."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changewatch.errors import UnsafeURLError
from changewatch.sitemaps.netguard import address_refusal, check_address, check_url, url_refusal

# (address, a word the reason must contain); first, last and inner addresses of each range.
REFUSED = [
    ("0.0.0.0", "this network"),
    ("0.255.255.255", "this network"),
    ("10.0.0.0", "private"),
    ("10.255.255.255", "private"),
    ("100.64.0.0", "carrier-grade NAT"),
    ("100.127.255.255", "carrier-grade NAT"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("169.254.169.254", "link-local"),
    ("169.254.0.0", "link-local"),
    ("172.16.0.0", "private"),
    ("172.31.255.255", "private"),
    ("192.0.0.8", "IETF protocol assignments"),
    ("192.0.0.170", "IETF protocol assignments"),
    ("192.0.2.1", "TEST-NET-1"),
    ("192.88.99.1", "6to4 relay"),
    ("192.168.0.1", "private"),
    ("192.168.255.255", "private"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("198.51.100.7", "TEST-NET-2"),
    ("203.0.113.9", "TEST-NET-3"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.254", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("::7f00:1", "IPv4-compatible"),
    ("::ffff:0:808:808", "IPv4-translated"),
    ("::1:0:0:1", "reserved by IETF"),
    ("64:ff9b:1::1", "local-use"),
    ("100::1", "discard-only"),
    ("2001:2::1", "benchmarking"),
    ("2001:10::1", "ORCHID"),
    ("2001:20::1", "ORCHIDv2"),
    ("2001:db8::1", "documentation"),
    ("2001:100::1", "IETF protocol assignments"),
    ("3fff::1", "documentation"),
    ("5f00::1", "segment routing"),
    ("fc00::1", "unique local"),
    ("fd12:3456:789a::1", "unique local"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("febf:ffff::1", "link-local"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("4000::1", "outside 2000::/3"),
    ("e000::1", "outside 2000::/3"),
    # IPv6 forms that carry an IPv4 address: the IPv4 address decides.
    ("::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1, which is loopback"),
    ("::ffff:169.254.169.254", "IPv4-mapped 169.254.169.254, which is link-local"),
    ("::ffff:10.1.2.3", "IPv4-mapped 10.1.2.3, which is private"),
    ("64:ff9b::127.0.0.1", "NAT64 127.0.0.1, which is loopback"),
    ("64:ff9b::192.168.1.1", "NAT64 192.168.1.1, which is private"),
    ("2002:7f00:1::1", "6to4 127.0.0.1, which is loopback"),
    ("2002:a9fe:a9fe::", "6to4 169.254.169.254, which is link-local"),
    ("2002:c0a8:101:5::1", "6to4 192.168.1.1, which is private"),
    # Teredo: server 65.54.227.120, client 127.0.0.1 obfuscated (xor 0xffffffff).
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo client 127.0.0.1, which is loopback"),
    # Teredo: server 10.0.0.1 (private), client 8.8.8.8.
    ("2001:0:a00:1:8000:63bf:f7f7:f7f7", "Teredo server 10.0.0.1, which is private"),
    ("not-an-ip", "not an IP address"),
]

ALLOWED = [
    "1.1.1.1",
    "8.8.8.8",
    "9.255.255.255",  # just below 10/8
    "11.0.0.0",  # just above 10/8
    "100.63.255.255",  # just below 100.64/10
    "100.128.0.0",  # just above 100.64/10
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "172.15.255.255",  # just below 172.16/12
    "172.32.0.0",  # just above 172.16/12
    "192.0.1.1",
    "192.0.3.1",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "198.51.99.255",
    "203.0.112.255",
    "223.255.255.255",  # just below multicast
    "2001:4860:4860::8888",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",  # IPv4-mapped public
    "64:ff9b::8.8.8.8",  # NAT64 of a public address
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo: 65.54.227.120 and 8.8.8.8
]


@pytest.mark.parametrize(("address", "reason"), REFUSED)
def test_refused_addresses(address: str, reason: str) -> None:
    """Each special-purpose address is refused with a reason naming its range."""
    refusal = address_refusal(address)
    assert refusal is not None
    assert reason in refusal
    with pytest.raises(UnsafeURLError, match="refused address") as info:
        check_address(address, "http://victim.example/")
    assert info.value.url == "http://victim.example/"
    assert info.value.retryable is False


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_pass(address: str) -> None:
    """Public addresses, including the edges next to each refused range, are allowed."""
    assert address_refusal(address) is None
    check_address(address)
    check_address(ipaddress.ip_address(address))


@given(st.ip_addresses(v=4))
def test_ipv4_refusal_agrees_with_the_mapped_form(ip: ipaddress.IPv4Address) -> None:
    """An IPv4 address and its IPv4-mapped and NAT64 IPv6 forms get the same verdict."""
    verdict = address_refusal(ip) is None
    mapped = ipaddress.IPv6Address((0xFFFF << 32) | int(ip))
    nat64 = ipaddress.IPv6Address((0x64FF9B << 96) | int(ip))
    assert (address_refusal(mapped) is None) == verdict
    assert (address_refusal(nat64) is None) == verdict


_UNWRAPPED = (ipaddress.IPv6Network("::ffff:0:0/96"), ipaddress.IPv6Network("2001::/32"))


@given(st.ip_addresses())
def test_everything_python_calls_non_global_is_refused(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    """Python's own non-global list is a subset of ours (save forms whose IPv4 decides)."""
    if isinstance(ip, ipaddress.IPv6Address) and any(ip in net for net in _UNWRAPPED):
        return
    if not ip.is_global:
        assert address_refusal(ip) is not None


@pytest.mark.parametrize(
    "network",
    ["::ffff:0:0/96", "64:ff9b::/96", "2002::/16", "2001::/32"],
)
def test_embedded_ipv4_decides_for_every_wrapping(network: str) -> None:
    """Each wrapping of a private IPv4 address is refused, of a public one allowed."""
    net = ipaddress.IPv6Network(network)
    for inner, refused in (("127.0.0.1", True), ("10.9.8.7", True), ("8.8.4.4", False)):
        value = int(ipaddress.IPv4Address(inner))
        if network == "2002::/16":
            ip = ipaddress.IPv6Address(int(net.network_address) | (value << 80))
        elif network == "2001::/32":  # public server 8.8.8.8, obfuscated client
            ip = ipaddress.IPv6Address(
                int(net.network_address) | (0x08080808 << 64) | (value ^ 0xFFFFFFFF)
            )
        else:
            ip = ipaddress.IPv6Address(int(net.network_address) | value)
        assert (address_refusal(ip) is not None) is refused, (ip, inner)


# URLs -----------------------------------------------------------------------------------

REFUSED_URLS = [
    ("ftp://example.com/sitemap.xml", "scheme 'ftp'"),
    ("file:///etc/passwd", "scheme 'file'"),
    ("gopher://example.com:70/", "scheme 'gopher'"),
    ("javascript:alert(1)", "scheme 'javascript'"),
    ("/relative/sitemap.xml", "not a valid absolute URL"),
    ("http://user:pw@example.com/", "credentials"),
    ("http://user@example.com/", "credentials"),
    ("http://example.com\\@evil.test/", "backslash"),
    ("http:\\\\evil.test\\", "backslash"),
    ("http://exa mple.com/", "whitespace"),
    (" http://example.com/", "whitespace"),
    ("http://example.com/\t", "whitespace"),
    ("http://example.com/a\nb", "whitespace"),
    ("http://example.com/\x00", "control character"),
    ("http://example.com/\x7f", "control character"),
    ("http://example.com/\x85", "whitespace"),
    ("http://example.com/\x9b", "control character"),
    ("http://example.com/\u00a0", "whitespace"),
    ("http://example.com/\u2028", "whitespace"),
    ("http://exa%00mple.com/", "not a valid absolute URL"),
    ("http://[::1/", "not a valid absolute URL"),
    ("http://", "not a valid absolute URL"),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED_URLS)
def test_refused_urls(url: str, reason: str) -> None:
    """Non-http(s) schemes, credentials, backslashes, whitespace and controls are refused."""
    refusal, _ = url_refusal(url)
    assert refusal is not None
    assert reason in refusal
    with pytest.raises(UnsafeURLError, match="refused URL"):
        check_url(url)


# WHATWG writes every IPv4 spelling dotted-decimal, so the address check sees the address.
IPV4_SPELLINGS = [
    ("http://2130706433/", "127.0.0.1"),
    ("http://0x7f000001/", "127.0.0.1"),
    ("http://017700000001/", "127.0.0.1"),
    ("http://0177.0.0.1/", "127.0.0.1"),
    ("http://0x7f.1/", "127.0.0.1"),
    ("http://127.1/", "127.0.0.1"),
    ("http://0x7F.0.0.0x1/", "127.0.0.1"),
    ("http://0/", "0.0.0.0"),
    ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
    ("http://2852039166/", "169.254.169.254"),
    ("http://0300.0250.0.01/", "192.168.0.1"),
    ("http://10.1/", "10.0.0.1"),
    ("http://127.0.0.1./", "127.0.0.1"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1"),
    ("http://[0:0:0:0:0:ffff:7f00:0001]/", "::ffff:7f00:1"),
    ("http://[::1]:8080/", "::1"),
]


@pytest.mark.parametrize(("url", "address"), IPV4_SPELLINGS)
def test_ip_spellings_normalise_to_the_address(url: str, address: str) -> None:
    """Decimal, octal, hex and short IPv4 forms normalise to the address, which is refused."""
    normalised = check_url(url)
    host = normalised.split("//", 1)[1].split("/", 1)[0]
    if host.startswith("["):
        host = host[1 : host.index("]")]
    else:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    assert ipaddress.ip_address(host) == ipaddress.ip_address(address)
    assert address_refusal(host) is not None


def test_check_url_normalises() -> None:
    """check_url returns the WHATWG href: scheme and host lower-cased, IDNA, default port."""
    assert check_url("HTTPS://Example.COM:443/a/../b?q#f") == "https://example.com/b?q#f"
    assert check_url("http://faß.example/") == "http://xn--fa-hia.example/"
    assert check_url("http://example.com") == "http://example.com/"


def test_long_refused_url_is_shortened_in_the_error() -> None:
    """A huge refused URL does not flood the error message."""
    with pytest.raises(UnsafeURLError) as info:
        check_url("ftp://example.com/" + "a" * 10_000)
    assert len(str(info.value)) < 400


def test_non_string_url_is_a_type_error() -> None:
    """A non-str URL is a programming error, not an unsafe URL."""
    with pytest.raises(TypeError):
        check_url(b"http://example.com/")  # type: ignore[arg-type]


_URLISH = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda scheme, host, rest: f"{scheme}://{host}{rest}",
        st.sampled_from(["http", "https", "HTTP", "ftp", "file", "javascript"]),
        st.text(alphabet="abc.0123456789x:[]@%-", max_size=20),
        st.text(max_size=20),
    ),
)


@given(_URLISH)
def test_check_url_refuses_cleanly_and_is_idempotent(text: str) -> None:
    """check_url either raises UnsafeURLError or returns a URL it accepts unchanged."""
    try:
        normalised = check_url(text)
    except UnsafeURLError:
        return
    assert normalised.startswith(("http://", "https://"))
    assert check_url(normalised) == normalised
