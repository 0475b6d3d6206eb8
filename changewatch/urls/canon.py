"""``canonicalise``: the WHATWG parse (ada) and the crawler's rules on top — pure, no I/O.

Plain URLs (:data:`_PLAIN_URL`) skip the parse: what it would do to them is known, so the
rules run on the parts one pattern matched. Everything else goes through ada.
"""

from __future__ import annotations

import re
from functools import lru_cache
from unicodedata import category
from urllib.parse import unquote

from ada_url._ada_wrapper import ffi as _ffi
from ada_url._ada_wrapper import lib as _lib

from changewatch.errors import InvalidURLError
from changewatch.urls.escapes import _ESCAPES, _canonical, _escape, _escape_all
from changewatch.urls.policy import DEFAULT_POLICY, CanonPolicy, HostPolicy
from changewatch.urls.reasons import refusal_reason

__all__ = ["canonicalise"]

_C0_OR_SPACE = "".join(chr(i) for i in range(0x21))
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#: URLs whose WHATWG parse is known without running the parser ("plain" URLs): ``http`` or
#: ``https`` in any case; optional userinfo of unreserved, sub-delims, ``:`` and ``%``; a
#: host: group 2, a dotted-quad IPv4 address without leading zeros, or ASCII letters, digits
#: and hyphens in dot-separated labels, the last starting with a letter (so never a number
#: WHATWG reads as IPv4), with at most one trailing dot; or group 3, any other host text
#: (IDN, IPv6, other IPv4 forms), which :func:`_canonical_host` parses once and remembers;
#: an optional port of digits; a path and a query either of characters the parser copies
#: as they are (groups 5 and 7) or ("wide", groups 6 and 8) also of characters it
#: percent-encodes (UTF-8) or leaves to the rules to encode (space, ``"<>`{}|^``, non-ASCII;
#: no ``\``, ``[``, ``]``, control or lone surrogate, no ``'`` in the query); a fragment
#: of characters copied as they are; no trailing space (the parser strips it). The caller
#: checks what a pattern says badly: ``%2e`` dot segments, ``xn--`` labels (which WHATWG
#: validates), the port's range and the host's length. For such a URL the parser only
#: lower-cases scheme and host, drops a default port and a port's leading zeros, removes
#: dot segments, percent-encodes and writes an empty path as ``/``; the crawler's rules
#: then run on the same strings as after a full parse (tests/unit/urls/test_fast_path.py
#: checks both paths agree on generated URLs, the WHATWG cases and real links).
_PLAIN_HOST = (
    rf"(?:((?>(?:[A-Za-z0-9-]++\.)*[A-Za-z][A-Za-z0-9-]*+\.?|{_OCTET}(?:\.{_OCTET}){{3}}))"
    r"|([^\x00-\x20\x7f/?#\\@:\[\]]++|\[[0-9A-Fa-f:.]++\]))"
    r"(?::([0-9]{1,5}))?"
    r"(?:(/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*+)|(/[^\x00-\x1f\x7f#?\\\[\]\ud800-\udfff]*+))?"
    r"(?:\?(?:([A-Za-z0-9\-._~!$&()*+,;=:@/?%]*+)|([^\x00-\x1f\x7f#\\\[\]'\ud800-\udfff]*+)))?"
    r"(?:#([!#-;=?-_a-~]*+))?"
    r"(?<! )"  # (a trailing space is stripped by the parser; see the wide path and query)
)
_PLAIN_URL = re.compile(r"[Hh][Tt][Tt][Pp]([Ss]?)://" + _PLAIN_HOST)
#: The same with userinfo (tried only where the first fails on a URL holding "@").
_PLAIN_URL_USERINFO = re.compile(
    r"[Hh][Tt][Tt][Pp]([Ss]?)://(?>(?:[A-Za-z0-9\-._~!$&'()*+,;=:%]*+@)?)" + _PLAIN_HOST
)
_plain_url = _PLAIN_URL.fullmatch
_plain_url_userinfo = _PLAIN_URL_USERINFO.fullmatch
_SLASHES_RE = re.compile(r"//+")
_collapse_slashes = _SLASHES_RE.sub
_JSESSIONID_RE = re.compile(r";jsessionid=[^/;]*", re.IGNORECASE)


def canonicalise(
    url: str, policy: CanonPolicy | None = None, *, max_length: int | None = None
) -> str:
    """Return the canonical form of an ``http``/``https`` URL.

    Raises :class:`InvalidURLError` (a ``ValueError``) naming the problem for anything that
    is not an absolute http(s) URL with a valid host; ``TypeError`` for a non-``str``.
    ``max_length`` overrides the policy's length cap.

    >>> canonicalise("HTTP://Example.COM:80/a//b/./c/../d?b=2&utm_source=x&a=1#top")
    'http://example.com/a/b/d?a=1&b=2'
    >>> canonicalise("https://user:secret@faß.example/%7e")
    'https://xn--fa-hia.example/~'
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be str, not {type(url).__name__}")
    if policy is None:
        policy = DEFAULT_POLICY
    limit = policy.max_length if max_length is None else max_length
    if len(url) > limit:
        raise InvalidURLError(url, f"longer than {limit} characters")
    # Most links are plain (no IPv6 zone, no character the parser would drop or change
    # beyond escaping): their WHATWG parse is known without running the parser.
    plain = _plain_url(url)
    if plain is None and ("@" not in url or (plain := _plain_url_userinfo(url)) is None):
        return _canonicalise_parsed(url, policy)
    secure, host, other_host, port, path, wide_path, query, wide_query, fragment = plain.groups()
    if host is not None and len(host) <= 63 and "xn--" not in (host := host.lower()):
        if host[-1] == ".":  # our rule: one trailing dot goes
            host = host[:-1]
    else:  # labels to check, punycode to validate, or a host only the parser reads (IDN)
        host = _canonical_host(other_host or host)
    if wide_path is not None:
        path = _plain_path(wide_path, True)
    elif path is None:  # WHATWG: a special URL's empty path is "/"
        path = "/"
    elif "%" in path or "/." in path:
        path = _plain_path(path, False)
    if host is None or path is None:  # refused, or maybe a dot segment
        return _canonicalise_parsed(url, policy)
    rules = policy._everywhere or policy.rules_for(host)
    if port is not None:
        host = _with_port(host, port, 443 if secure else 80)
        if host is None:
            return _canonicalise_parsed(url, policy)
    if wide_query is not None:  # characters the parser escapes (or leaves to the rules)
        query = _escape_all(_escape, wide_query)
    elif query is not None and "%" in query and not _canonical(query):
        query = _fix_escapes(query)
    return _apply_rules(("https://" if secure else "http://") + host, path, query, fragment, rules)


def _plain_path(path: str, wide: bool) -> str | None:
    """The path of a plain URL as the parser and the rules leave it: dot segments removed,
    escapes canonical (``wide``: it holds characters to escape); ``None`` for what only
    the parser can tell (``%2e`` dot segments)."""
    if "%" in path and ("%2e" in path or "%2E" in path):
        return None
    if wide:
        path = _escape_all(_escape, path)
    elif "%" in path and not _canonical(path):
        path = _fix_escapes(path)
    if "/." in path:
        path = _remove_dot_segments(path)
    return path


def _fix_escapes(text: str) -> str:
    """``_escape_all(_escape, text)`` for text whose only character to rewrite is ``%``
    (a plain path or query): each escape upper-cased or decoded, a stray ``%`` as ``%25``."""
    head, *pieces = text.split("%")
    fixed = [head]
    for piece in pieces:
        found = _ESCAPES.get("%" + piece[:2])  # (the table also holds "%" alone: "%25")
        fixed.append("%25" + piece if found is None else found + piece[2:])
    return "".join(fixed)


def _with_port(host: str, port: str, default: int) -> str | None:
    """``host:port``, or ``host`` for the scheme's default port (WHATWG drops it, with
    leading zeros); ``None`` for a port out of range (refused)."""
    number = int(port)
    if number > 65_535:
        return None
    if number == default:
        return host
    return f"{host}:{number}"


@lru_cache(maxsize=4096)
def _canonical_host(host: str) -> str | None:
    """The canonical form of a URL's host (no userinfo, no port), ``None`` if refused: the
    WHATWG host parse is a function of the host's text alone, so it is kept for the next
    URL of the same host (links of one page share a few hosts)."""
    try:
        return _canonicalise_parsed(f"http://{host}/", DEFAULT_POLICY)[7:-1]
    except InvalidURLError:
        return None


def _canonicalise_parsed(url: str, policy: CanonPolicy) -> str:
    """:func:`canonicalise` without its fast path: every URL through the WHATWG parser."""
    # WHATWG basic URL parser: strip leading/trailing C0 control or space, remove tab and
    # newline anywhere; any other control character left refuses the URL (our rule).
    if not (url.isascii() and url.isprintable() and (text := url.strip(" "))):
        text = _clean(url)  # (the common case, no control character at all, is above)
    if text.startswith("https:"):  # the common spellings first, then any case
        secure = True
    elif text.startswith("http:"):
        secure = False
    else:
        secure = _scheme_is_https(url, text)
    skip = 8 if secure else 7  # len("https://"), len("http://")
    # A host too long to be valid is refused before the parser's IDNA work: for a plain URL
    # here twice (its host alone, then the URL for the reason), each time without a parse.
    if len(text) > _LABEL_MAX_WEIGHT:
        reason = _oversized_host(_raw_host(text, skip - 2))
        if reason is not None:
            raise InvalidURLError(url, reason)
    href = _parse(url, text, skip - 2)
    # The href of a special URL is "scheme://[userinfo@]host[:port]/path[?query][#fragment]",
    # ASCII, with "/", "@" and ":" escaped in the userinfo, no "/" in the host, no raw "?" in
    # the path and no raw "#" before the fragment: the parts are found by plain searches.
    path_start = href.find("/", skip)
    host = href[skip:path_start]
    if (  # a host with userinfo, a port, IPv6, dots to check or characters to refuse
        "@" in host
        or ":" in host
        or host[0] in ".["
        or host[-1] == "."
        or ".." in host
        or len(host) > 63
        or '"' in host
        or "`" in host
        or "{" in host
        or "}" in host
    ):
        head, host = _authority(url, href, skip, path_start)
    else:
        head = href[:path_start]
    rules = policy._everywhere or policy.rules_for(host)
    hash_start = href.find("#", path_start)
    if hash_start < 0:
        rest, fragment = href[path_start:], None
    else:
        rest, fragment = href[path_start:hash_start], href[hash_start + 1 :]
    # Path and query in one pass: escapes upper-cased, unreserved decoded, the rest encoded.
    # A raw "?" cannot be in a WHATWG path, and decoding unreserved escapes adds none.
    # ada leaves only these of the characters RFC 3986 cannot hold raw in a path or query
    # (the rest, non-ASCII and controls included, it percent-encodes): without them and
    # "%", `rest` is plain, with no need for the (slower) regular expression.
    if (
        "%" in rest
        or "|" in rest
        or "^" in rest
        or "`" in rest
        or "{" in rest
        or "}" in rest
        or "\\" in rest
    ) and not _canonical(rest):
        rest = _escape_all(_escape, rest)
    path, question, query = rest.partition("?")
    return _apply_rules(head, path, query if question else None, fragment, rules)


def _clean(url: str) -> str:
    """WHATWG basic URL parser: strip leading/trailing C0 control or space, remove tab and
    newline anywhere; any other control character left refuses the URL (our rule)."""
    text = url.strip(_C0_OR_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    if _CONTROL_RE.search(text):
        raise InvalidURLError(url, "contains a control character")
    if not text:
        raise InvalidURLError(url, "empty URL")
    return text


def _scheme_is_https(url: str, text: str) -> bool:
    """True for ``https:``, False for ``http:`` (any case); anything else is refused."""
    head = text[:6].lower()
    if head == "https:":
        return True
    if head.startswith("http:"):
        return False
    match = _SCHEME_RE.match(text)
    if match is None:
        raise InvalidURLError(url, "not an absolute URL (no scheme)")
    raise InvalidURLError(url, f"scheme {match[1].lower()!r} is not http or https")


def _parse(url: str, text: str, skip: int) -> str:
    """The WHATWG href of ``text`` (ada: UTS #46 hosts, IPv4, IPv6, ports, dot segments,
    percent-encode sets), through ada's C API (the cffi module of ada-url): the hot path.
    ``skip`` is the length of the scheme and its colon."""
    try:
        data = text.encode()
    except UnicodeEncodeError:
        # Lone surrogates: WHATWG parses scalar values (USVString), so they become U+FFFD.
        data = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()
    parsed = _ada_parse(data, len(data))
    try:
        raw = _ada_get_href(parsed)
        length: int = raw.length
        if not length:  # ada_c.h: the getters of an invalid URL return ""
            raise InvalidURLError(url, refusal_reason(text[skip:]))
        href: str = _unpack(raw.data, length).decode("utf-8", "replace")
    finally:
        _ada_free(parsed)
    return href


def _authority(url: str, href: str, start: int, end: int) -> tuple[str, str]:
    """``scheme://host[:port]`` of an href, userinfo dropped and the host checked, and the
    host alone (no port)."""
    host = href[href.rfind("@", start, end) + 1 or start : end]  # userinfo is dropped
    port = ""
    if ":" in host:  # ":port" (WHATWG already dropped the default one) or IPv6
        colon = host.find("]") + 1 if host[0] == "[" else host.find(":")
        if colon < len(host):
            port = host[colon:]
            host = host[:colon]
    if host[0] != "[":  # a domain or an IPv4 address (which passes every domain check)
        if host[-1] == "." or ".." in host or len(host) > 63 or host[0] == ".":
            host = _check_domain(url, host)
        if '"' in host or "`" in host or "{" in host or "}" in host:
            # Allowed by WHATWG, but no RFC 3986 reg-name or DNS name holds them.
            raise InvalidURLError(url, f"host {host!r} contains a forbidden character")
    return href[:start] + host + port, host


def _apply_rules(
    head: str, path: str, query: str | None, fragment: str | None, rules: HostPolicy
) -> str:
    """The crawler's rules on a parsed URL with canonical escapes: ``head`` is
    ``scheme://host[:port]``, then the WHATWG path, query and fragment (``None``: none)."""
    if rules._path_rules:  # (off by default)
        path = _path_rules(path, rules)
    elif "//" in path:
        path = _collapse_slashes("/", path)
    # A WHATWG path starts with "/", and none of the rules above removes it.
    if query:  # ASCII here
        # Every droppable key holds one of the policy's `triggers` (a few short substrings):
        # a query holding none of them has nothing to drop, which an `in` test or two tells.
        lowered = query.lower()
        for trigger in rules._drop_triggers:
            if trigger in lowered:
                dropped = rules._dropped  # key -> verdict, kept from earlier queries
                kept = [p for p in query.split("&") if p and not dropped[p.partition("=")[0]]]
                break
        else:
            kept = query.split("&") if "&" in query else [query]
            if "" in kept:
                kept = [pair for pair in kept if pair]
        if kept:
            if len(kept) > 1 and not rules.keep_query_order:
                kept.sort()
            path = f"{path}?{'&'.join(kept)}"
    if fragment is not None and rules.keep_routing_fragments and fragment[:1] in ("!", "/"):
        path += "#" + _escape_all(_escape, fragment)
    return head + path


def _path_rules(path: str, rules: HostPolicy) -> str:
    """Runs of ``/`` collapsed, with a policy's path rules: ``;jsessionid=`` out (before the
    runs collapse: ``/a//..;jsessionid=1`` is ``/a/``), a trailing ``/`` folded."""
    if rules.strip_session_ids and ";" in path:
        path = _JSESSIONID_RE.sub("", path)
        if "/." in path:
            path = _remove_dot_segments(path)
    if "//" in path:
        path = _collapse_slashes("/", path)
    if rules.fold_trailing_slash and len(path) > 1 and path[-1] == "/":
        path = path[:-1]
    return path


_ada_parse = _lib.ada_parse
_ada_get_href = _lib.ada_get_href
_ada_free = _lib.ada_free
_unpack = _ffi.unpack


def _check_domain(url: str, host: str) -> str:
    """Drop one trailing dot; refuse empty labels, labels over 63 and names over 253
    characters (RFC 1034 §3.1): DNS cannot resolve them."""
    if host[-1:] == ".":
        host = host[:-1]
    if not host:
        raise InvalidURLError(url, "empty host")
    if ".." in host or host[0] == "." or host[-1] == ".":
        raise InvalidURLError(url, f"host {host!r} has an empty label")
    if len(host) > 63:
        for label in host.split("."):
            if len(label) > 63:
                raise InvalidURLError(url, f"host label {label[:20]!r}… is over 63 characters")
        if len(host) > 253:
            raise InvalidURLError(url, "host is over 253 characters")
    return host


#: Bounds of :func:`_oversized_host`: twice the DNS limits (RFC 1034 §3.1: a label of at most
#: 63 octets, a name of at most 253), a margin over the proof there that a host over the
#: limits themselves cannot be valid.
_LABEL_MAX_WEIGHT = 2 * 63
_HOST_MAX_WEIGHT = 2 * 253
#: Code points that may leave nothing of their own in the ASCII host: marks (they compose
#: into the starter before them, UTS #46 ignores some: variation selectors, U+034F), format
#: characters (U+00AD SOFT HYPHEN and U+200B are ignored), and what is disallowed anyway
#: (controls, unassigned, private use, surrogates, spaces).
_UNCOUNTED = frozenset(("Mn", "Mc", "Me", "Cf", "Cc", "Cn", "Co", "Cs", "Zs", "Zl", "Zp"))
#: Hangul fillers (default ignorable) and the vowel and final jamo, which compose into the
#: syllable before them (Unicode §3.12).
_UNCOUNTED_LETTERS_RE = re.compile("[\u115f-\u11ff\u3164\uffa0\ud7b0-\ud7ff]")
#: Code points UTS #46 maps to text holding a full stop (U+3002 and the fullwidth and
#: halfwidth ones, ⒈ to "1.", ‥ to "..": NFKC and case folding of Unicode 14, every code
#: point checked by tests/fuzz/test_hostile_idn_hosts.py): each ends a label.
_LABEL_END_RE = re.compile(
    "[.\u2024-\u2026\u2488-\u249b\u3002\u33c2\u33c7\u33d8\ufe19\ufe30\ufe52\uff0e\uff61\U0001f100]"
)
_AUTHORITY_RE = re.compile(r"[/\\]*([^/\\?#]*)")


def _raw_host(text: str, start: int) -> str:
    """The host of an http(s) URL's text as the WHATWG parser reads it, before any
    decoding: after the scheme (``start``) and its slashes, userinfo and port dropped."""
    match = _AUTHORITY_RE.match(text, start)
    host = match[1].rpartition("@")[2] if match else ""
    return "" if host[:1] == "[" else host.partition(":")[0]  # (IPv6: the parser checks it)


def _oversized_host(host: str) -> str | None:
    """Why ``host`` (raw text) cannot be a valid host after IDNA, or ``None`` when it may be:
    a cheap bound checked before the parser, whose IDNA work is superlinear (a label of
    5,000 CJK code points took 41 ms, and was then refused as over 63 octets).

    Each *counted* code point (not in :data:`_UNCOUNTED`, nor a Hangul filler or jamo
    vowel or final) leaves at least one octet in the ASCII host: UTS #46 maps it to one code
    point or more (NFKC and case folding never map a character to nothing; only ignored
    ones, all marks or format characters, go), canonical composition joins it only with
    marks and jamo after it (every two-character canonical decomposition of Unicode 14
    ends in a mark; Hangul composes L+V and LV+T), and Punycode (RFC 3492) writes each
    non-ASCII code point as at least one digit. Labels are split at each code point that
    maps to a full stop (:data:`_LABEL_END_RE`), so a label's count is at most the octets
    of the label it lands in. Percent-escapes are decoded first, as the parser does.
    :data:`_LABEL_MAX_WEIGHT` and :data:`_HOST_MAX_WEIGHT` are twice the DNS limits.

    >>> _oversized_host("\u00ad" * 5000 + "a.com") is None  # soft hyphens are ignored
    True
    >>> _oversized_host("\u4e00" * 127 + ".com").startswith("host label")
    True
    """
    if len(host) <= _LABEL_MAX_WEIGHT:  # (the common case: no label or host can be over)
        return None
    if "%" in host:
        host = unquote(host, errors="replace")
    total = 0
    for label in _LABEL_END_RE.split(host):
        if label.isascii():
            weight = len(label)
        else:
            weight = 0
            for char in _UNCOUNTED_LETTERS_RE.sub("", label):
                if char < "\x80" or category(char) not in _UNCOUNTED:
                    weight += 1
                    if weight > _LABEL_MAX_WEIGHT:
                        break  # (the rest of a long label is not read)
        if weight > _LABEL_MAX_WEIGHT:
            return f"host label {label[:20]!r}… is over 63 characters"
        total += weight
    if total > _HOST_MAX_WEIGHT:
        return "host is over 253 characters"
    return None


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4, which for segments ``.`` and ``..`` is what the WHATWG path state
    does: for plain URLs, and for dot segments a stripped ``;jsessionid=`` left behind."""
    if "/.." not in path:  # "." segments only (the common case): dropped
        while "/./" in path:
            path = path.replace("/./", "/")
        return path[:-1] if path.endswith("/.") else path
    output: list[str] = []
    segments = path.split("/")
    for segment in segments[1:]:
        if segment == ".":
            continue
        if segment == "..":
            if output:
                output.pop()
            continue
        output.append(segment)
    result = "/" + "/".join(output)
    if segments[-1] in (".", "..") and not result.endswith("/"):
        result += "/"
    return result
