"""URL canonicalisation and the URL digest — pure functions, no I/O.

Canonicalisation decides what "the same page" means. The rules, in order:

* the input is parsed the way browsers parse ``http`` and ``https`` URLs (WHATWG URL
  Standard): leading and trailing C0 controls and spaces are stripped, tabs and newlines
  anywhere are removed, ``\\`` counts as ``/``, and any number of slashes may follow the scheme;
* only ``http`` and ``https`` are accepted; everything else raises :class:`InvalidURLError`;
* scheme and host are lower-cased, one trailing dot of the host is dropped, non-ASCII hosts
  are IDNA-encoded, numeric IPv4 hosts (``0x7f.1``, ``2130706433``) are written dotted-decimal
  and IPv6 hosts in their RFC 5952 compressed form (RFC 3986 §6.2.2.1, WHATWG host parsing);
* userinfo is removed, so credentials never reach the store or the logs;
* the default port (80 for http, 443 for https) is dropped (RFC 3986 §6.2.3);
* in the path, runs of ``/`` collapse to one, dot segments are removed (RFC 3986 §5.2.4),
  an empty path becomes ``/``;
* in path and query, percent-encodings are upper-cased and percent-encoded unreserved
  characters decoded (RFC 3986 §6.2.2.1–2); reserved characters stay encoded, so ``%2F``,
  ``%3F``, ``%23``, ``%25``, ``%26``, ``%3D``, ``%3B`` and ``%2B`` keep their meaning;
  characters a URL may not hold (non-ASCII, space, ``"``, ``<``, ``>``…) are UTF-8
  percent-encoded;
* tracking parameters (:data:`TRACKING_PARAMETERS`, and any key starting ``utm_``) are removed,
  keys compared case-insensitively; the remaining pairs are sorted, blank values and duplicate
  keys kept; an empty query is dropped;
* the fragment is dropped.

:data:`CANON_VERSION` names this rule set; it is stored with every snapshot so that a rule
change can be rolled out by re-keying rather than silently splitting history.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from urllib.parse import unquote

from changewatch.errors import InvalidURLError

__all__ = [
    "CANON_VERSION",
    "DEFAULT_MAX_URL_LENGTH",
    "TRACKING_PARAMETERS",
    "canonicalise",
    "digest_canonical",
    "strip_query",
    "url_digest",
    "url_host",
]

#: Version of the canonicalisation rules; bump whenever a rule changes a canonical form.
CANON_VERSION = 1

#: URLs longer than this many characters are refused (browsers and servers cap near 8 KiB).
DEFAULT_MAX_URL_LENGTH = 8192

#: Query keys removed because they identify a campaign or a click, not a resource.
#: ``utm_*`` (Google Analytics campaign parameters) are matched by prefix.
TRACKING_PARAMETERS = frozenset(
    {
        "gclid",  # Google Ads click id (Google Ads help: "About auto-tagging")
        "dclid",  # Google Display & Video 360 click id (Google Ads help)
        "gbraid",  # Google Ads iOS app click id (Google Ads help: "iOS campaign measurement")
        "wbraid",  # Google Ads web-to-app click id (same source)
        "fbclid",  # Facebook outbound click id (Facebook, October 2018)
        "msclkid",  # Microsoft Advertising click id (Microsoft Advertising help)
        "yclid",  # Yandex Direct click id (Yandex Metrica help)
        "igshid",  # Instagram share id (observed on instagram.com share links)
        "mc_eid",  # Mailchimp subscriber id (Mailchimp help: "Mailchimp tracking parameters")
        "mc_cid",  # Mailchimp campaign id (same source)
        "_ga",  # Google Analytics cross-domain linker (analytics.js documentation)
        "_gl",  # Google tag linker (gtag.js cross-domain measurement documentation)
        "_hsenc",  # HubSpot email tracking (HubSpot knowledge base)
        "_hsmi",  # HubSpot email tracking (same source)
    }
)

_DEFAULT_PORTS = {"http": "80", "https": "443"}
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# C0 controls and DEL; tab, LF and CR are removed first (WHATWG "remove all ASCII tab or newline").
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
# Code points WHATWG forbids in a domain (host parser, "forbidden domain code point": C0
# controls, DEL, space, "%" and #/:<>?@[\]^|), plus "`{} which RFC 3986 cannot hold in a host.
_FORBIDDEN_HOST_RE = re.compile(r"[\x00-\x20\x7f#%/:<>?@\[\\\]^|\"`{}]")
_LABEL_RE = re.compile(r"[a-z0-9_\-]+")
# Characters kept literally in a canonical path or query: RFC 3986 unreserved + reserved.
# Everything else is percent-encoded as UTF-8.
_SAFE_CHARS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;="
)
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PLAIN_PATH_RE = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
_PLAIN_QUERY_RE = re.compile(r"[A-Za-z0-9\-._~!$'()*+,;:@/?=&]*")
_PERCENT_RE = re.compile(r"%([0-9A-Fa-f]{2})")
_IPV4_PART_RE = re.compile(r"0[xX][0-9A-Fa-f]*|[0-9]+")


def canonicalise(url: str, *, max_length: int = DEFAULT_MAX_URL_LENGTH) -> str:
    """Return the canonical form of an ``http``/``https`` URL.

    Raises :class:`InvalidURLError` (a ``ValueError``) naming the problem for anything that
    is not an absolute http(s) URL with a valid host.

    >>> canonicalise("HTTP://Example.COM:80/a//b/./c/../d?b=2&utm_source=x&a=1#top")
    'http://example.com/a/b/d?a=1&b=2'
    >>> canonicalise("https://user:secret@example.com")
    'https://example.com/'
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be str, not {type(url).__name__}")
    if len(url) > max_length:
        raise InvalidURLError(url, f"longer than {max_length} characters")
    text = url.strip(
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12"
        "\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "
    )
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    if not text:
        raise InvalidURLError(url, "empty URL")
    if _CONTROL_RE.search(text):
        raise InvalidURLError(url, "contains a control character")
    match = _SCHEME_RE.match(text)
    if match is None:
        raise InvalidURLError(url, "not an absolute URL (no scheme)")
    scheme = match.group(1).lower()
    if scheme not in _DEFAULT_PORTS:
        raise InvalidURLError(url, f"scheme {scheme!r} is not http or https")
    rest = text[match.end() :]
    if "\\" in rest:
        rest = rest.replace("\\", "/")
    rest = rest.lstrip("/")

    # Split off the fragment, then the query, then the authority (WHATWG order).
    rest = rest.partition("#")[0]
    rest, has_query, query = rest.partition("?")
    slash = rest.find("/")
    if slash == -1:
        authority, path = rest, "/"
    else:
        authority, path = rest[:slash], rest[slash:]

    host, port = _split_authority(url, authority)
    host = _canonical_host(url, host)
    if port and port != _DEFAULT_PORTS[scheme]:
        host = f"{host}:{port}"

    path = _canonical_path(path)
    result = f"{scheme}://{host}{path}"
    if has_query and query:
        query = _canonical_query(query)
        if query:
            result = f"{result}?{query}"
    return result


def url_digest(url: str, *, max_length: int = DEFAULT_MAX_URL_LENGTH) -> bytes:
    """Return the 16-byte blake2b digest of the canonical form of ``url``.

    The digest is stable across processes, machines and Python versions (``hashlib``, not
    ``hash()``), so it can key a shared store and a persisted seen-set.

    >>> url_digest("http://example.com/").hex()
    '9aba6a18c5a5d94534a3b99c485d4547'
    """
    return digest_canonical(canonicalise(url, max_length=max_length))


def digest_canonical(canonical: str) -> bytes:
    """Return the 16-byte blake2b digest of an already canonical URL."""
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).digest()


def url_host(canonical: str) -> str:
    """Return the host (with a non-default port) of a canonical URL.

    >>> url_host("https://example.com:8443/a?b")
    'example.com:8443'
    """
    return canonical.partition("://")[2].partition("/")[0]


def strip_query(canonical: str) -> str:
    """Return a canonical URL without its query string.

    >>> strip_query("https://example.com/a?session=1")
    'https://example.com/a'
    """
    return canonical.partition("?")[0]


def _split_authority(url: str, authority: str) -> tuple[str, str]:
    """Split ``[userinfo@]host[:port]``, dropping userinfo and validating the port."""
    if "@" in authority:
        authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        end = authority.find("]")
        if end == -1:
            raise InvalidURLError(url, "unclosed '[' in IPv6 host")
        host, after = authority[: end + 1], authority[end + 1 :]
        if after and not after.startswith(":"):
            raise InvalidURLError(url, "characters after the IPv6 host")
        port = after[1:]
    else:
        host, _, port = authority.partition(":")
        if ":" in port:
            raise InvalidURLError(url, "more than one ':' in host and port")
    if port:
        if not port.isascii() or not port.isdigit():
            raise InvalidURLError(url, f"port {port!r} is not a number")
        number = int(port)
        if number > 65535:
            raise InvalidURLError(url, f"port {number} is out of range")
        port = str(number)
    return host, port


def _canonical_host(url: str, host: str) -> str:
    """Lower-case, IDNA-encode and validate a host; normalise IP literals."""
    if not host:
        raise InvalidURLError(url, "empty host")
    if host.startswith("["):
        if "%" in host:
            # WHATWG URL: an IPv6 zone identifier is not part of a URL's host.
            raise InvalidURLError(url, f"IPv6 host {host!r} has a zone identifier")
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            raise InvalidURLError(url, f"invalid IPv6 address {host!r}") from None
    if "%" in host:
        # WHATWG host parsing: percent-decode to bytes, then UTF-8 decode (U+FFFD on error).
        host = unquote(host, errors="replace")
        if "%" in host:
            raise InvalidURLError(url, "invalid percent-encoding in host")
    host = host.lower()
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise InvalidURLError(
                url, f"host {host!r} is not a valid internationalised name"
            ) from None
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise InvalidURLError(url, "empty host")
    if _FORBIDDEN_HOST_RE.search(host):
        raise InvalidURLError(url, f"host {host!r} contains a forbidden character")
    labels = host.split(".")
    if _looks_numeric(labels[-1]):
        return _ipv4(url, labels)
    for label in labels:
        if not label:
            raise InvalidURLError(url, f"host {host!r} has an empty label")
        if len(label) > 63:
            raise InvalidURLError(url, f"host label {label[:20]!r}… is over 63 characters")
    if len(host) > 253:
        raise InvalidURLError(url, "host is over 253 characters")
    return host


def _looks_numeric(label: str) -> bool:
    """WHATWG "ends in a number": the last label is decimal digits or 0x-hex."""
    if label.isascii() and label.isdigit():
        return True
    return label[:2] in ("0x", "0X") and all(c in "0123456789abcdefABCDEF" for c in label[2:])


def _ipv4(url: str, labels: list[str]) -> str:
    """Parse a WHATWG IPv4 host (decimal, octal, hex; 1 to 4 parts) to dotted-decimal."""
    if len(labels) > 4:
        raise InvalidURLError(url, "IPv4 host has more than four parts")
    numbers = []
    for part in labels:
        if not part:
            raise InvalidURLError(url, "IPv4 host has an empty part")
        if not _IPV4_PART_RE.fullmatch(part):
            # int() would also take "+1", "-1" and "1_0"; WHATWG takes ASCII digits only.
            raise InvalidURLError(url, f"IPv4 part {part!r} is not a number")
        try:
            if part[:2] in ("0x", "0X"):
                value = int(part[2:] or "0", 16)
            elif len(part) > 1 and part[0] == "0":
                value = int(part[1:], 8)
            else:
                value = int(part, 10)
        except ValueError:
            raise InvalidURLError(url, f"IPv4 part {part!r} is not a number") from None
        numbers.append(value)
    last = numbers.pop()
    if any(n > 255 for n in numbers) or last >= 256 ** (4 - len(numbers)):
        raise InvalidURLError(url, "IPv4 address out of range")
    address = last
    for index, value in enumerate(numbers):
        address += value * 256 ** (3 - index)
    return str(ipaddress.IPv4Address(address))


def _normalise_escapes(text: str, keep: frozenset[str] = frozenset()) -> str:
    """Upper-case percent-escapes, decode unreserved ones, encode what a URL may not hold."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        char = text[i]
        if char == "%":
            pair = text[i + 1 : i + 3]
            if len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair):
                decoded = chr(int(pair, 16))
                if decoded in _UNRESERVED and decoded not in keep:
                    out.append(decoded)
                else:
                    out.append("%" + pair.upper())
                i += 3
                continue
            out.append("%25")
        elif char in _SAFE_CHARS and char not in keep:
            out.append(char)
        else:
            out.append("".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass")))
        i += 1
    return "".join(out)


def _canonical_path(path: str) -> str:
    """Normalise escapes, remove dot segments and collapse repeated slashes."""
    if not _PLAIN_PATH_RE.fullmatch(path):
        path = _normalise_escapes(path, keep=frozenset("?#"))
    # Dot segments first, counting empty segments as WHATWG does ("/a/b//.." is "/a/b/"),
    # so that collapsing "//" afterwards cannot change which segment ".." removes.
    if "." in path:
        path = _remove_dot_segments(path)
    if "//" in path:
        path = re.sub(r"/{2,}", "/", path)
    return path or "/"


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4, with ``%2e`` counted as ``.`` as WHATWG does."""
    segments = path.split("/")
    output: list[str] = []
    for segment in segments[1:]:
        lowered = segment.lower()
        if lowered in (".", "%2e"):
            continue
        if lowered in ("..", ".%2e", "%2e.", "%2e%2e"):
            if output:
                output.pop()
            continue
        output.append(segment)
    last = segments[-1].lower()
    trailing = last in (".", "..", "%2e", ".%2e", "%2e.", "%2e%2e")
    result = "/" + "/".join(output)
    if trailing and not result.endswith("/"):
        result += "/"
    return result


def _canonical_query(query: str) -> str:
    """Drop tracking parameters and sort the remaining pairs, keeping blanks and duplicates."""
    if not _PLAIN_QUERY_RE.fullmatch(query):
        query = _normalise_escapes(query, keep=frozenset("#"))
    kept = []
    for pair in query.split("&"):
        if not pair:
            continue
        key = pair.partition("=")[0].lower()
        if "%" in key:
            key = _PERCENT_RE.sub(lambda m: chr(int(m.group(1), 16)), key)
        if key in TRACKING_PARAMETERS or key.startswith("utm_"):
            continue
        kept.append(pair)
    kept.sort()
    return "&".join(kept)
