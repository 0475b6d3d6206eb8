"""Why a URL was refused: a readable ``InvalidURLError.reason`` for URLs the parser rejected.

The WHATWG parser (ada) answers only "valid" or "not valid". When it says "not valid",
:func:`refusal_reason` walks the URL again, in pure Python and only on that slow path, to
name the first problem a person can act on ("port 99999 is out of range"). It never decides
validity itself: a URL it finds nothing wrong with still gets a generic reason.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote

__all__ = ["refusal_reason"]

#: The reason given when the parser refused a URL and no specific cause was found.
GENERIC_REASON = "not a valid URL (WHATWG URL Standard)"

# WHATWG "forbidden domain code point": C0 controls, DEL, space, "%" and #/:<>?@[\]^|.
_FORBIDDEN_HOST_RE = re.compile(r"[\x00-\x20\x7f#%/:<>?@\[\\\]^|]")
_IPV4_PART_RE = re.compile(r"0[xX][0-9A-Fa-f]*|[0-9]+")


def refusal_reason(rest: str) -> str:
    """The reason the WHATWG parser refused ``http(s):`` + ``rest`` (scheme already checked).

    >>> refusal_reason("//example.com:99999/")
    'port 99999 is out of range'
    """
    rest = rest.replace("\\", "/").lstrip("/")
    authority = rest.partition("#")[0].partition("?")[0].partition("/")[0]
    try:
        host, _ = _split_authority(authority)
        _check_host(host)
    except _RefusedError as refused:
        return str(refused)
    return GENERIC_REASON


class _RefusedError(Exception):
    """Carries the reason out of the nested checks."""


def _split_authority(authority: str) -> tuple[str, str]:
    """Split ``[userinfo@]host[:port]`` and check the port."""
    if "@" in authority:
        authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        end = authority.find("]")
        if end == -1:
            raise _RefusedError("unclosed '[' in IPv6 host")
        host, after = authority[: end + 1], authority[end + 1 :]
        if after and not after.startswith(":"):
            raise _RefusedError("characters after the IPv6 host")
        port = after[1:]
    else:
        host, _, port = authority.partition(":")
        if ":" in port:
            raise _RefusedError("more than one ':' in host and port")
    if port:
        if not port.isascii() or not port.isdigit():
            raise _RefusedError(f"port {port!r} is not a number")
        if int(port) > 65535:
            raise _RefusedError(f"port {int(port)} is out of range")
    return host, port


def _check_host(host: str) -> None:
    """Find what is wrong with a host: empty, bad IP literal, forbidden character, bad IDN."""
    if not host:
        raise _RefusedError("empty host")
    if host.startswith("["):
        if "%" in host:
            # WHATWG URL: an IPv6 zone identifier is not part of a URL's host.
            raise _RefusedError(f"IPv6 host {host!r} has a zone identifier")
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise _RefusedError(f"invalid IPv6 address {host!r}") from None
        return
    if "%" in host:
        # WHATWG host parsing: percent-decode to bytes, then UTF-8 decode (U+FFFD on error).
        host = unquote(host, errors="replace")
        if "%" in host:
            raise _RefusedError("invalid percent-encoding in host")
    if _FORBIDDEN_HOST_RE.search(host):
        raise _RefusedError(f"host {host!r} contains a forbidden character")
    if not host.isascii():
        raise _RefusedError(f"host {host!r} is not a valid internationalised name (UTS #46)")
    labels = host.lower().rstrip(".").split(".") if host.strip(".") else [""]
    if _looks_numeric(labels[-1]):
        _check_ipv4(labels)
    if any(label.startswith("xn--") for label in labels):
        raise _RefusedError(f"host {host!r} is not a valid internationalised name (UTS #46)")


def _looks_numeric(label: str) -> bool:
    """WHATWG "ends in a number": the last label is decimal digits or 0x-hex."""
    if label.isascii() and label.isdigit():
        return True
    return label[:2] in ("0x", "0X") and all(c in "0123456789abcdefABCDEF" for c in label[2:])


def _check_ipv4(labels: list[str]) -> None:
    """WHATWG IPv4 parser (decimal, octal, hex; 1 to 4 parts), reporting the first fault."""
    if len(labels) > 4:
        raise _RefusedError("IPv4 host has more than four parts")
    numbers = []
    for part in labels:
        if not part:
            raise _RefusedError("IPv4 host has an empty part")
        if not _IPV4_PART_RE.fullmatch(part):
            # int() would also take "+1", "-1" and "1_0"; WHATWG takes ASCII digits only.
            raise _RefusedError(f"IPv4 part {part!r} is not a number")
        try:
            if part[:2] in ("0x", "0X"):
                numbers.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part[0] == "0":
                numbers.append(int(part[1:], 8))
            else:
                numbers.append(int(part, 10))
        except ValueError:
            raise _RefusedError(f"IPv4 part {part!r} is not a number") from None
    last = numbers.pop()
    if any(n > 255 for n in numbers) or last >= 256 ** (4 - len(numbers)):
        raise _RefusedError("IPv4 address out of range")
