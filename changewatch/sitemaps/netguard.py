"""SSRF guards for the sitemap fetcher — pure functions, no I/O.

:func:`check_url` decides whether a URL may be fetched at all (scheme, credentials, stray
characters) and returns its WHATWG-normalised form; :func:`check_address` decides whether
an IP address a host resolved to may be connected to. The fetcher calls both on every
redirect hop and connects only to addresses that passed (docs/fetching.md).

Refused address ranges, with their source (IANA IPv4 and IPv6 Special-Purpose Address
Registries, RFC 6890 and the RFC named on each line). IPv6 addresses that embed an IPv4
address (IPv4-mapped, NAT64 well-known prefix, 6to4, Teredo) are unwrapped and the IPv4
address is checked too; any other IPv6 address outside 2000::/3, the only range IANA
allocates as global unicast (RFC 4291 §2.4), is refused.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from ada_url import URL

from changewatch.errors import UnsafeURLError

__all__ = [
    "address_refusal",
    "character_refusal",
    "check_address",
    "check_url",
    "url_refusal",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4: Final = tuple(
    (ipaddress.IPv4Network(net), reason)
    for net, reason in (
        ("0.0.0.0/8", "'this network' (RFC 791), includes the unspecified address"),
        ("10.0.0.0/8", "private (RFC 1918)"),
        ("100.64.0.0/10", "shared address space / carrier-grade NAT (RFC 6598)"),
        ("127.0.0.0/8", "loopback (RFC 1122)"),
        ("169.254.0.0/16", "link-local (RFC 3927), includes cloud metadata services"),
        ("172.16.0.0/12", "private (RFC 1918)"),
        ("192.0.0.0/24", "IETF protocol assignments (RFC 6890)"),
        ("192.0.2.0/24", "documentation TEST-NET-1 (RFC 5737)"),
        ("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)"),
        ("192.168.0.0/16", "private (RFC 1918)"),
        ("198.18.0.0/15", "benchmarking (RFC 2544)"),
        ("198.51.100.0/24", "documentation TEST-NET-2 (RFC 5737)"),
        ("203.0.113.0/24", "documentation TEST-NET-3 (RFC 5737)"),
        ("224.0.0.0/4", "multicast (RFC 5771)"),
        ("255.255.255.255/32", "limited broadcast (RFC 919)"),
        ("240.0.0.0/4", "reserved for future use (RFC 1112)"),
    )
)

_V6: Final = tuple(
    (ipaddress.IPv6Network(net), reason)
    for net, reason in (
        ("::/128", "unspecified (RFC 4291)"),
        ("::1/128", "loopback (RFC 4291)"),
        ("::/96", "IPv4-compatible, deprecated (RFC 4291 §2.5.5.1)"),
        ("::ffff:0:0:0/96", "IPv4-translated (RFC 2765)"),
        ("64:ff9b:1::/48", "local-use IPv4/IPv6 translation (RFC 8215)"),
        ("::/8", "reserved by IETF (RFC 4291)"),
        ("100::/64", "discard-only (RFC 6666)"),
        ("2001:2::/48", "benchmarking (RFC 5180)"),
        ("2001:10::/28", "ORCHID, deprecated (RFC 4843)"),
        ("2001:20::/28", "ORCHIDv2 (RFC 7343)"),
        ("2001:db8::/32", "documentation (RFC 3849)"),
        ("2001::/23", "IETF protocol assignments (RFC 2928)"),
        ("3fff::/20", "documentation (RFC 9637)"),
        ("5f00::/16", "segment routing SIDs (RFC 9602)"),
        ("fc00::/7", "unique local, private (RFC 4193)"),
        ("fe80::/10", "link-local (RFC 4291)"),
        ("fec0::/10", "site-local, deprecated (RFC 3879)"),
        ("ff00::/8", "multicast (RFC 4291)"),
    )
)

_GLOBAL_UNICAST: Final = ipaddress.IPv6Network("2000::/3")
_MAPPED: Final = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_TEREDO: Final = ipaddress.IPv6Network("2001::/32")
_SIX_TO_FOUR: Final = ipaddress.IPv6Network("2002::/16")

# WHATWG URL Standard: C0 controls, space, DEL, and the C1 controls; plus every other
# character Python calls whitespace (NBSP, U+2028…), which no legitimate URL holds raw.
_C0_C1 = frozenset(chr(c) for c in (*range(0x21), *range(0x7F, 0xA0)))


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """IPv4 addresses an IPv6 address carries and a packet to it would reach."""
    if ip in _MAPPED:
        return [("IPv4-mapped", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))]
    if ip in _NAT64:  # RFC 6052 §2.1: the IPv4 address is the last 32 bits of a /96
        return [("NAT64", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))]
    if ip in _TEREDO:  # RFC 4380 §4: server at bits 32-63, client obfuscated in the last 32
        server, client = ip.teredo or (None, None)
        assert server is not None
        assert client is not None
        return [("Teredo server", server), ("Teredo client", client)]
    if ip in _SIX_TO_FOUR:  # RFC 3056 §2: the IPv4 address is bits 16-47
        assert ip.sixtofour is not None
        return [("6to4", ip.sixtofour)]
    return []


def address_refusal(address: str | IPAddress) -> str | None:
    """Why connecting to ``address`` is refused, or ``None`` if it is a public address.

    A string that is not an IP address is refused too (the fetcher only ever checks the
    addresses a resolver returned).

    >>> address_refusal("93.184.215.14") is None
    True
    >>> address_refusal("169.254.169.254")
    '169.254.169.254 is link-local (RFC 3927), includes cloud metadata services'
    >>> address_refusal("64:ff9b::a00:1")
    '64:ff9b::a00:1 is NAT64 10.0.0.1, which is private (RFC 1918)'
    """
    if isinstance(address, str):
        try:
            ip: IPAddress = ipaddress.ip_address(address)
        except ValueError:
            return f"{address!r} is not an IP address"
    else:
        ip = address
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id is not None:
        ip = ipaddress.IPv6Address(int(ip))
    if isinstance(ip, ipaddress.IPv4Address):
        for net4, reason in _V4:
            if ip in net4:
                return f"{ip} is {reason}"
        return None
    embedded = _embedded_v4(ip)
    for label, inner in embedded:
        inner_reason = address_refusal(inner)
        if inner_reason is not None:
            return f"{ip} is {label} {inner_reason.replace(' is ', ', which is ', 1)}"
    if embedded:
        return None  # every IPv4 address it carries is public
    for net6, reason in _V6:
        if ip in net6:
            return f"{ip} is {reason}"
    if ip not in _GLOBAL_UNICAST:
        return f"{ip} is outside 2000::/3, the IPv6 global unicast space (RFC 4291)"
    return None


def check_address(address: str | IPAddress, url: str | None = None) -> None:
    """Raise :class:`UnsafeURLError` unless ``address`` is a public address.

    ``url`` names the URL being fetched in the error (default: the address).

    >>> check_address("127.0.0.1", "http://localhost/")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    changewatch.errors.UnsafeURLError: http://localhost/: refused address: 127.0.0.1 is loopback...
    """
    reason = address_refusal(address)
    if reason is not None:
        raise UnsafeURLError(url or str(address), f"refused address: {reason}")


def character_refusal(text: str) -> str | None:
    """Why ``text`` (a URL or a relative reference) holds a refused character, or ``None``.

    >>> character_refusal("/a b")
    "contains whitespace (' ')"
    """
    for char in text:
        if char in _C0_C1 or char.isspace():
            what = "whitespace" if char.isspace() else "a control character"
            return f"contains {what} ({char!r})"
        if char == "\\":
            # WHATWG turns "\" into "/" in special URLs; other parsers do not, so the
            # same string names different hosts for different parsers: refused.
            return "contains a backslash"
    return None


def url_refusal(url: str) -> tuple[str | None, str]:
    """``(reason, normalised)``: why ``url`` may not be fetched (``None`` if it may).

    ``normalised`` is the WHATWG href (the host lower-cased and IDNA-encoded, every IPv4
    spelling such as ``2130706433`` or ``0x7f.1`` written dotted-decimal), or ``url``
    itself when refused.
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be str, not {type(url).__name__}")
    reason = character_refusal(url)
    if reason is not None:
        return reason, url
    try:
        parsed = URL(url)
    except ValueError:
        return "not a valid absolute URL", url
    if parsed.protocol not in ("http:", "https:"):
        return f"scheme {parsed.protocol[:-1]!r} is not http or https", url
    if parsed.username or parsed.password:
        return "contains credentials (user:password@)", url
    if not parsed.hostname:
        return "has no host", url
    return None, parsed.href


def check_url(url: str) -> str:
    """Return the WHATWG-normalised ``url``; raise :class:`UnsafeURLError` if refused.

    Only absolute ``http``/``https`` URLs without credentials, backslashes, whitespace or
    control characters pass. An IP-literal host is checked with :func:`check_address`
    by the fetcher, like every resolved address, not here.

    >>> check_url("HTTP://Example.COM/sitemap.xml")
    'http://example.com/sitemap.xml'
    >>> check_url("http://0x7f.1/")
    'http://127.0.0.1/'
    >>> check_url("file:///etc/passwd")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    changewatch.errors.UnsafeURLError: file:///etc/passwd: refused URL: scheme 'file' is not...
    """
    reason, normalised = url_refusal(url)
    if reason is not None:
        shown = url if len(url) <= 200 else url[:200] + "…"
        raise UnsafeURLError(shown, f"refused URL: {reason}")
    return normalised
