"""Checking one listed URL: absolute http(s), clean characters, on an allowed host.

Pure. Each refusal has a short reason; the parser counts them in ``SitemapParser.skipped``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from urllib.parse import urlsplit

__all__ = ["MAX_LOC_CHARS", "check_loc", "check_loc_slow", "host_key"]

#: sitemaps.org: "[the URL] must be less than 2,048 characters".
MAX_LOC_CHARS = 2_048

#: C0 controls, DEL and C1 controls: never valid in a URL (RFC 3986 §2), and a classic way to
#: make two parsers disagree on where a host ends.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: Whitespace left inside after trimming (RFC 3986 has no unescaped space).
_INNER_SPACE = re.compile(r"\s")
#: The common shape, checked without urlsplit in one match: scheme, plain host, optional
#: port, then a path/query/fragment without a _SUSPECT character, or the end. No "@" in the
#: authority, so no userinfo; anything else takes the slow path.
_PLAIN = re.compile(
    r"(?i:https?)://([A-Za-z0-9.-]+)(?::([0-9]{1,5}))?(?:[/?#][^\x00-\x20\x7f-\x9f\\\s]*)?"
)


#: host_key of the hosts seen on the fast path: a sitemap names one host a million times.
_HOST_KEYS: dict[str, str] = {}
_HOST_KEYS_MAX = 1_024


def host_key(host: str) -> str:
    """The form hosts are compared in: lower case, no trailing dot, IDNA (punycode) labels.

    >>> host_key("WWW.Example.COM.")
    'www.example.com'
    >>> host_key("bücher.example")
    'xn--bcher-kva.example'
    """
    host = host.strip().rstrip(".").lower()
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def check_loc(text: str, allowed_hosts: Collection[str]) -> tuple[str | None, str | None]:
    """``(loc, None)`` for an acceptable listed URL, else ``(None, reason)``.

    ``allowed_hosts`` holds :func:`host_key` forms. Per sitemaps.org a sitemap lists URLs of
    its own host only; cross-submits (a robots.txt ``Sitemap:`` line on another host) arrive
    as extra allowed hosts.

    >>> check_loc("  http://example.com/a  ", {"example.com"})
    ('http://example.com/a', None)
    >>> check_loc("http://other.test/", {"example.com"})
    (None, 'off-host')
    >>> check_loc("ftp://example.com/", {"example.com"})
    (None, 'not http(s)')
    """
    loc = text.strip(" \t\r\n")
    if not loc:
        return None, "missing loc"
    if len(loc) >= MAX_LOC_CHARS:
        return None, "too long"
    plain = _PLAIN.fullmatch(loc)
    if plain is not None and int(plain.group(2) or 0) <= 65_535:
        host = plain.group(1)
        key = _HOST_KEYS.get(host)
        if key is None:
            key = host_key(host)
            if len(_HOST_KEYS) < _HOST_KEYS_MAX:  # a hostile file may name millions of hosts
                _HOST_KEYS[host] = key
        if key in allowed_hosts:
            return loc, None
        return None, "off-host"
    return check_loc_slow(loc, allowed_hosts)


def check_loc_slow(loc: str, allowed_hosts: Collection[str]) -> tuple[str | None, str | None]:
    """:func:`check_loc` without its fast path: every check spelled out, to find the reason.

    >>> check_loc_slow("http://example.com@evil.test/", {"example.com"})
    (None, 'credentials')
    """
    loc = loc.strip(" \t\r\n")
    if not loc:
        return None, "missing loc"
    if len(loc) >= MAX_LOC_CHARS:
        return None, "too long"
    if _CONTROL.search(loc):
        return None, "control characters"
    if _INNER_SPACE.search(loc):
        return None, "whitespace"
    if "\\" in loc:
        # WHATWG URL parsers read "\" as "/" in http(s) URLs, others do not: refuse both readings.
        return None, "backslash"
    try:
        parts = urlsplit(loc)
        scheme = parts.scheme.lower()
        host = parts.hostname
        _ = parts.port  # raises ValueError on a port that is not a number in range
    except ValueError:
        return None, "invalid URL"
    if scheme not in ("http", "https"):
        return None, "not http(s)"
    if not host:
        return None, "no host"
    if parts.username is not None or parts.password is not None:
        # "http://example.com@evil.test/" reads as host evil.test; a sitemap never needs userinfo.
        return None, "credentials"
    if host_key(host) not in allowed_hosts:
        return None, "off-host"
    return loc, None
