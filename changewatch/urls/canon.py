"""``canonicalise``: the WHATWG parse (ada) and the crawler's rules on top — pure, no I/O."""

from __future__ import annotations

import re

from ada_url._ada_wrapper import ffi as _ffi
from ada_url._ada_wrapper import lib as _lib

from changewatch.errors import InvalidURLError
from changewatch.urls.escapes import _canonical, _escape, _escape_all
from changewatch.urls.policy import DEFAULT_POLICY, CanonPolicy
from changewatch.urls.reasons import refusal_reason

__all__ = ["canonicalise"]

_C0_OR_SPACE = "".join(chr(i) for i in range(0x21))
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
#: URLs that every rule below leaves exactly as they are (checked against the full path by
#: a differential test): lower-case ``http``/``https``; a host that is a dotted-quad IPv4
#: address without leading zeros, or lower-case ASCII letters, digits and hyphens in
#: dot-separated labels, the last starting with a letter (so never a number WHATWG would
#: read as IPv4); an optional port without a leading zero; no userinfo; a path of characters
#: that are neither escaped nor decoded, with no empty segment (``//``) and no dot segment;
#: no query, no fragment. The caller also checks the port's range and that it is not the
#: scheme's default, the host's length and that no label is punycode (``xn--``, validated).
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_SIMPLE_URL = re.compile(
    rf"(https?)://((?:[a-z0-9-]++\.)*+[a-z][a-z0-9-]*+|{_OCTET}(?:\.{_OCTET}){{3}})"
    r"(?::([1-9][0-9]{0,4}))?"
    r"(?:/(?!/|\.\.?(?:/|\Z))[A-Za-z0-9\-._~!$&'()*+,=:@]*+)++"
)
_DEFAULT_PORTS = {"http": "80", "https": "443"}
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
    # The common case, a URL already in canonical form, is recognised without parsing.
    # (Most URLs that are not canonical hold a query: ruled out before trying the pattern.)
    if policy.hosts or "?" in url or "#" in url or "%" in url:
        simple = None
    else:
        simple = _SIMPLE_URL.fullmatch(url)
    if simple is not None:
        scheme, host, port = simple.groups()
        if (
            len(host) <= 63
            and "xn--" not in host
            and (port is None or (int(port) <= 65_535 and port != _DEFAULT_PORTS[scheme]))
            and not (
                policy.default.fold_trailing_slash
                and url[-1] == "/"
                and len(url) > simple.end(3 if port else 2) + 1
            )
        ):
            return url
    return _canonicalise_parsed(url, policy)


def _canonicalise_parsed(url: str, policy: CanonPolicy) -> str:  # noqa: C901 - split with the issue-17 rework
    """:func:`canonicalise` without its fast path: every URL through the WHATWG parser."""
    # WHATWG basic URL parser: strip leading/trailing C0 control or space, remove tab and
    # newline anywhere; any other control character left refuses the URL (our rule).
    if url.isascii() and url.isprintable():  # the common case: no control character at all
        text = url.strip(" ")
    else:
        text = url.strip(_C0_OR_SPACE)
        if "\t" in text or "\n" in text or "\r" in text:
            text = text.replace("\t", "").replace("\n", "").replace("\r", "")
        if _CONTROL_RE.search(text):
            raise InvalidURLError(url, "contains a control character")
    if not text:
        raise InvalidURLError(url, "empty URL")
    if text.startswith("https:"):  # the common spellings first, then any case
        prefix, skip = "https://", 6
    elif text.startswith("http:") or (head := text[:6].lower()).startswith("http:"):
        prefix, skip = "http://", 5
    elif head == "https:":
        prefix, skip = "https://", 6
    else:
        match = _SCHEME_RE.match(text)
        if match is None:
            raise InvalidURLError(url, "not an absolute URL (no scheme)")
        raise InvalidURLError(url, f"scheme {match[1].lower()!r} is not http or https")

    # WHATWG parse (ada): host (UTS #46, IPv4, IPv6), port, dot segments, encode sets.
    # Inlined (ada's C API through the cffi module of ada-url) because it is the hot path.
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

    # The href of a special URL is "scheme://[userinfo@]host[:port]/path[?query][#fragment]",
    # ASCII, with "/", "@" and ":" escaped in the userinfo, no "/" in the host, no raw "?" in
    # the path and no raw "#" before the fragment: the parts are found by plain searches.
    authority_start = skip + 2
    path_start = href.find("/", authority_start)
    host = href[authority_start:path_start]
    same = True  # the href up to the path is the result's, unless something is dropped
    if "@" in host:  # userinfo is dropped
        host = host[host.rfind("@") + 1 :]
        same = False
    port = ""
    if ":" in host:  # ":port" (WHATWG already dropped the default one) or IPv6
        colon = host.find("]") + 1 if host[0] == "[" else host.find(":")
        if colon < len(host):
            port = host[colon:]
            host = host[:colon]
    if host[0] != "[":  # a domain or an IPv4 address (which passes every domain check)
        if host[-1] == "." or ".." in host or len(host) > 63 or host[0] == ".":
            host = _check_domain(url, host)
            same = False
        if '"' in host or "`" in host or "{" in host or "}" in host:
            # Allowed by WHATWG, but no RFC 3986 reg-name or DNS name holds them.
            raise InvalidURLError(url, f"host {host!r} contains a forbidden character")
    rules = policy.default if not policy.hosts else policy.rules_for(host)

    # Path and query in one pass: escapes upper-cased, unreserved decoded, the rest encoded.
    # A raw "?" cannot be in a WHATWG path, and decoding unreserved escapes adds none.
    hash_start = href.find("#", path_start)
    rest = href[path_start:hash_start] if hash_start >= 0 else href[path_start:]
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
    path, _, query = rest.partition("?")
    if rules.strip_session_ids and ";" in path:
        path = _JSESSIONID_RE.sub("", path)
        if "/." in path:
            path = _remove_dot_segments(path)
    if "//" in path:
        path = _collapse_slashes("/", path)
    if rules.fold_trailing_slash and len(path) > 1 and path[-1] == "/":
        path = path[:-1]
    # A WHATWG path starts with "/", and none of the rules above removes it.
    result = href[:path_start] + path if same else prefix + host + port + path
    if query:
        # The query is ASCII here; most queries hold no key the rules could drop, and
        # `triggers` (substrings every droppable key contains) tells so without splitting.
        kept = query.split("&")
        lowered = query.lower()
        for trigger in rules._drop_triggers:
            if trigger in lowered:
                drop = rules._drop_exact
                prefixes = rules._drop_prefixes
                keep = rules.keep_params
                kept = [
                    pair
                    for pair in kept
                    if pair
                    and not (
                        (
                            (key := pair.partition("=")[0].lower()) in drop
                            or key.startswith(prefixes)
                        )
                        and key not in keep
                    )
                ]
                break
        else:
            if "" in kept:
                kept = [pair for pair in kept if pair]
        if kept:
            if not rules.keep_query_order:
                kept.sort()
            result = f"{result}?{'&'.join(kept)}"
    if rules.keep_routing_fragments and hash_start >= 0:
        fragment = href[hash_start + 1 :]
        if fragment[:1] in ("!", "/"):
            result += "#" + _escape_all(_escape, fragment)
    return result


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


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4, for dot segments a stripped ``;jsessionid=`` left behind."""
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
