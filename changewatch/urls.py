"""URL canonicalisation and the URL digest — pure functions, no I/O.

Canonicalisation decides what "the same page" means. ``canonicalise`` parses the URL as
browsers do (WHATWG URL Standard, with the ada parser: UTS #46 hosts, every IPv4 form,
IPv6, percent-encode sets, dot segments, ``\\`` as ``/``), then applies the rules a
crawler needs on top of it:

* only ``http`` and ``https``; control characters, bad hosts, bad ports and URLs over
  ``max_length`` raise :class:`InvalidURLError` with ``.reason``;
* one trailing dot of the host is dropped; hosts with empty labels, labels over 63 or
  names over 253 characters, or ``"`` ````` ``{`` ``}`` are refused;
* userinfo is removed (credentials never reach the store or the logs), the default port
  dropped, the empty path is ``/`` (RFC 3986 §6.2.3);
* in path and query, percent-encodings are upper-cased and encoded unreserved characters
  decoded (RFC 3986 §6.2.2.1–2); reserved ones (``%2F``, ``%3F``, ``%23``, ``%25``,
  ``%26``, ``%3D``, ``%3B``, ``%2B``…) stay encoded; characters RFC 3986 cannot hold are
  UTF-8 percent-encoded; runs of ``/`` in the path collapse to one;
* tracking parameters (:data:`TRACKING_PARAMETERS`, ``utm_*``) are removed, keys compared
  case-insensitively; the remaining pairs are sorted, blank values and duplicates kept;
* the fragment is dropped.

A :class:`CanonPolicy` adds per-host rules (extra parameters to drop or keep, session ids,
trailing slashes, query order, routing fragments). :func:`canon_version` names the rules
and the policy together; it is stored with every snapshot. docs/canonicalisation.md is
the rule-by-rule reference, with sources and examples.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ada_url._ada_wrapper import ffi as _ffi
from ada_url._ada_wrapper import lib as _lib

from changewatch._url_reasons import refusal_reason
from changewatch.errors import ConfigError, InvalidURLError

__all__ = [
    "CANON_RULES_VERSION",
    "CANON_VERSION",
    "DEFAULT_MAX_URL_LENGTH",
    "DEFAULT_POLICY",
    "SESSION_ID_PARAMETERS",
    "TRACKING_PARAMETERS",
    "TRACKING_PREFIXES",
    "CanonPolicy",
    "HostPolicy",
    "canon_version",
    "canonicalise",
    "digest_canonical",
    "stored_url",
    "strip_query",
    "url_digest",
    "url_host",
]

#: Version of the code rules; bump whenever a rule changes any canonical form.
#: 1: the first pure-Python canonicaliser. 2: WHATWG parsing with ada (UTS #46 hosts,
#: ``'`` in a query written ``%27`` as browsers send it), the longer tracking list, policies.
CANON_RULES_VERSION = 2

#: ``canon_version`` of the default policy (equal to :data:`CANON_RULES_VERSION`).
CANON_VERSION = CANON_RULES_VERSION

#: URLs longer than this many characters are refused (browsers and servers cap near 8 KiB).
DEFAULT_MAX_URL_LENGTH = 8192

#: Query keys removed because they identify a click, a campaign or a recipient, never a
#: resource. Each one is defined as such by the service that adds it.
TRACKING_PARAMETERS = frozenset(
    {
        "gclid",  # Google Ads click id (Google Ads help: "About auto-tagging")
        "gclsrc",  # source of the gclid, Search Ads 360 (Google Ads help: auto-tagging)
        "dclid",  # Google Display & Video 360 click id (Google Ads help)
        "gbraid",  # Google Ads iOS app click id (Google Ads help: "iOS campaign measurement")
        "wbraid",  # Google Ads web-to-app click id (same source)
        "srsltid",  # Google Merchant Center auto-tagging (Merchant Center help: "srsltid")
        "_ga",  # Google Analytics cross-domain linker (analytics.js documentation)
        "_gl",  # Google tag linker (gtag.js cross-domain measurement documentation)
        "fbclid",  # Facebook outbound click id (Facebook, October 2018)
        "igshid",  # Instagram share id (observed on instagram.com share links)
        "msclkid",  # Microsoft Advertising click id (Microsoft Advertising help: auto-tagging)
        "yclid",  # Yandex Direct click id (Yandex Metrica help)
        "ttclid",  # TikTok click id (TikTok for Business help: "TikTok Click ID")
        "twclid",  # X (Twitter) click id (X Business help: "Conversion tracking")
        "li_fat_id",  # LinkedIn first-party ad click id (LinkedIn Insight Tag help)
        "mc_eid",  # Mailchimp subscriber id (Mailchimp help: "Mailchimp tracking parameters")
        "mc_cid",  # Mailchimp campaign id (same source)
        "mkt_tok",  # Marketo email tracking token (Adobe Marketo docs: "mkt_tok")
        "_hsenc",  # HubSpot email tracking (HubSpot knowledge base)
        "_hsmi",  # HubSpot email tracking (same source)
        "__hstc",  # HubSpot cross-domain visitor cookie in links (HubSpot knowledge base)
        "__hssc",  # HubSpot cross-domain session cookie in links (same source)
        "__hsfp",  # HubSpot cross-domain fingerprint in links (same source)
        # Matomo campaign parameters (Matomo guide: "Campaign tracking"), exact names only:
        # a "pk_" prefix would also match primary keys of other applications.
        "pk_campaign",
        "pk_kwd",
        "pk_keyword",
        "pk_source",
        "pk_medium",
        "pk_content",
        "pk_cid",
        "mtm_campaign",
        "mtm_kwd",
        "mtm_keyword",
        "mtm_source",
        "mtm_medium",
        "mtm_content",
        "mtm_cid",
        "mtm_group",
        "mtm_placement",
    }
)

#: Key prefixes removed: ``utm_`` (Google Analytics campaign parameters, "Collect campaign
#: data with custom URLs"; the five documented keys and the newer ``utm_id`` and friends).
TRACKING_PREFIXES = ("utm_",)

#: Session-id keys removed when a policy sets ``strip_session_ids`` (off by default), with
#: ``;jsessionid=`` path parameters: Java Servlet spec "URL rewriting" (``jsessionid``),
#: PHP ``session.name`` default (``PHPSESSID``), the generic ``sid``, and ColdFusion client
#: variables (``CFID``/``CFTOKEN``, Adobe ColdFusion docs "Client and session variables").
SESSION_ID_PARAMETERS = frozenset({"jsessionid", "phpsessid", "sid", "cfid", "cftoken"})

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
# A percent-escape, or a character RFC 3986 does not allow literally in a path or query
# (unreserved + reserved), a stray "%" included. Written to start with one character class
# (so the regex engine can skip plain runs fast), and checked first with _CANONICAL_RE.
_ESCAPE_RE = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=](?:(?<=%)[0-9A-Fa-f]{2})?")
# Text _ESCAPE_RE.sub leaves as it is: plain runs and upper-case escapes of bytes that are
# not unreserved (%00-%2C, %2F, %3A-%40, %5B-%5E, %60, %7B-%7D, %7F-%FF).
_CANONICAL_RE = re.compile(
    r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]*"
    r"(?:%(?:[01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF]|[89A-F][0-9A-F])"
    r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]*)*"
)
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SLASHES_RE = re.compile(r"//+")
_canonical = _CANONICAL_RE.fullmatch
_escape_all = _ESCAPE_RE.sub
_collapse_slashes = _SLASHES_RE.sub
_JSESSIONID_RE = re.compile(r";jsessionid=[^/;]*", re.IGNORECASE)


def _escape_table() -> dict[str, str]:
    """Every two-hex-digit escape, and every ASCII character needing one, to its canonical form."""
    table: dict[str, str] = {"%": "%25"}
    for value in range(256):
        upper = f"{value:02X}"
        for pair in {
            upper,
            upper.lower(),
            upper[0] + upper[1].lower(),
            upper[0].lower() + upper[1],
        }:
            char = chr(value)
            table["%" + pair] = char if char in _UNRESERVED else "%" + upper
        if value < 128 and chr(value) != "%" and _ESCAPE_RE.fullmatch(chr(value)):
            table[chr(value)] = "%" + upper
    return table


_ESCAPES = _escape_table()


def _escape(match: re.Match[str]) -> str:
    text = match[0]
    found = _ESCAPES.get(text)
    if found is not None:
        return found
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))


def _param_names(name: str, values: Iterable[str], *, allow_prefix: bool) -> frozenset[str]:
    """Validate and lower-case a list of query keys."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ConfigError(f"{name} must be a list of strings, got {values!r}")
    out = set()
    for value in values:
        if not isinstance(value, str) or not value.strip("*"):
            raise ConfigError(f"{name} entries must be non-empty strings, got {value!r}")
        if "*" in value[:-1] or (value.endswith("*") and not allow_prefix):
            raise ConfigError(
                f"{name} entry {value!r}: '*' is only allowed at the end of drop_params entries"
            )
        if _ESCAPE_RE.search(value.rstrip("*")) or "&" in value or "=" in value:
            raise ConfigError(f"{name} entry {value!r} is not a plain query key")
        out.add(value.lower())
    return frozenset(out)


def _triggers(names: Iterable[str]) -> tuple[str, ...]:
    """A few short substrings of which every droppable key (lower-cased) contains one,
    chosen greedily (most keys covered, then the longest): a query holding none of them
    has nothing to drop, which two or three ``in`` tests tell without splitting it."""
    uncovered = set(names)
    chosen: list[str] = []
    while uncovered:
        counts: dict[str, int] = {}
        for name in uncovered:
            for piece in {name[i : i + n] for n in (1, 2, 3, 4) for i in range(len(name))}:
                if len(piece) > 1 or piece == "_":
                    counts[piece] = counts.get(piece, 0) + 1
        if not counts:  # one-letter names: the name itself
            chosen.extend(sorted(uncovered))
            break
        best = max(counts, key=lambda piece: (counts[piece], len(piece), piece))
        chosen.append(best)
        uncovered = {name for name in uncovered if best not in name}
    return tuple(chosen)


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, got {value!r}")


_FLAGS = ("strip_session_ids", "fold_trailing_slash", "keep_query_order", "keep_routing_fragments")


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """The policy rules for one host (or the default for every host).

    ``drop_params``: extra query keys to remove (case-insensitive; ``name*`` is a prefix).
    ``keep_params``: keys never removed, even when listed as tracking or session ids.
    ``strip_session_ids``: remove :data:`SESSION_ID_PARAMETERS` and ``;jsessionid=``.
    ``fold_trailing_slash``: ``/a/`` becomes ``/a`` (the root ``/`` stays).
    ``keep_query_order``: pairs keep their order (tracking ones still go).
    ``keep_routing_fragments``: fragments starting ``!`` or ``/`` (``#!/a``, ``#/a``) stay.
    """

    drop_params: frozenset[str] = frozenset()
    keep_params: frozenset[str] = frozenset()
    strip_session_ids: bool = False
    fold_trailing_slash: bool = False
    keep_query_order: bool = False
    keep_routing_fragments: bool = False
    _drop_exact: frozenset[str] = field(init=False, repr=False, compare=False)
    _drop_prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _drop_triggers: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        drop = _param_names("drop_params", self.drop_params, allow_prefix=True)
        keep = _param_names("keep_params", self.keep_params, allow_prefix=False)
        both = drop & keep
        if both:
            raise ConfigError(f"{sorted(both)[0]!r} is in both drop_params and keep_params")
        for flag in _FLAGS:
            _check_bool(flag, getattr(self, flag))
        exact = {p for p in drop if not p.endswith("*")} | TRACKING_PARAMETERS
        if self.strip_session_ids:
            exact |= SESSION_ID_PARAMETERS
        prefixes = TRACKING_PREFIXES + tuple(sorted(p[:-1] for p in drop if p.endswith("*")))
        object.__setattr__(self, "drop_params", drop)
        object.__setattr__(self, "keep_params", keep)
        object.__setattr__(self, "_drop_exact", frozenset(exact - keep))
        object.__setattr__(self, "_drop_prefixes", prefixes)
        object.__setattr__(self, "_drop_triggers", _triggers([*(exact - keep), *prefixes]))

    def describe(self) -> dict[str, Any]:
        """A JSON-ready, order-independent description (what :func:`canon_version` hashes)."""
        return {
            "drop_params": sorted(self.drop_params),
            "keep_params": sorted(self.keep_params),
            "strip_session_ids": self.strip_session_ids,
            "fold_trailing_slash": self.fold_trailing_slash,
            "keep_query_order": self.keep_query_order,
            "keep_routing_fragments": self.keep_routing_fragments,
        }


@dataclass(frozen=True, slots=True)
class CanonPolicy:
    """Canonicalisation policy: the default :class:`HostPolicy`, per-host ones, a length cap.

    ``hosts`` maps a host name to its complete rules: ``"example.com"`` matches that host
    only, ``".example.com"`` the domain and every subdomain (the longest match wins). Names
    are canonicalised (case, IDNA, trailing dot), so ``"Bücher.example"`` works.

    >>> policy = CanonPolicy(hosts={"shop.example": HostPolicy(keep_query_order=True)})
    >>> canonicalise("http://shop.example/?b=1&a=2", policy)
    'http://shop.example/?b=1&a=2'
    """

    default: HostPolicy = HostPolicy()
    hosts: Mapping[str, HostPolicy] = field(default_factory=dict)
    max_length: int = DEFAULT_MAX_URL_LENGTH
    _exact: Mapping[str, HostPolicy] = field(init=False, repr=False, compare=False)
    _suffixes: tuple[tuple[str, HostPolicy], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.default, HostPolicy):
            raise ConfigError(f"default must be a HostPolicy, got {type(self.default).__name__}")
        if (
            isinstance(self.max_length, bool)
            or not isinstance(self.max_length, int)
            or self.max_length < 16
        ):
            raise ConfigError(f"max_length must be an integer ≥ 16, got {self.max_length!r}")
        if not isinstance(self.hosts, Mapping):
            raise ConfigError(f"hosts must be a mapping, got {type(self.hosts).__name__}")
        hosts: dict[str, HostPolicy] = {}
        for name, rules in self.hosts.items():
            if not isinstance(rules, HostPolicy):
                raise ConfigError(f"hosts[{name!r}] must be a HostPolicy")
            hosts[_policy_host(name)] = rules
        object.__setattr__(self, "hosts", MappingProxyType(dict(sorted(hosts.items()))))
        exact = {k: v for k, v in hosts.items() if not k.startswith(".")}
        suffixes = sorted(
            ((k, v) for k, v in hosts.items() if k.startswith(".")), key=lambda kv: -len(kv[0])
        )
        object.__setattr__(self, "_exact", MappingProxyType(exact))
        object.__setattr__(self, "_suffixes", tuple(suffixes))

    def rules_for(self, host: str) -> HostPolicy:
        """The rules for a canonical host name (no port).

        >>> CanonPolicy().rules_for("example.com") == HostPolicy()
        True
        """
        if not self.hosts:
            return self.default
        found = self._exact.get(host)
        if found is not None:
            return found
        for suffix, rules in self._suffixes:
            if host.endswith(suffix) or host == suffix[1:]:
                return rules
        return self.default

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description of every rule (the length cap is not a rule)."""
        default = self.default.describe()
        return {
            "default": default,
            "hosts": {k: v.describe() for k, v in self.hosts.items() if v.describe() != default},
        }


#: The policy used when none is given: the code rules alone.
DEFAULT_POLICY = CanonPolicy()
_DEFAULT_DESCRIPTION = json.dumps(DEFAULT_POLICY.describe(), sort_keys=True)


def canon_version(policy: CanonPolicy | None = None) -> int:
    """The number stored with each snapshot naming the code rules and the policy.

    The default policy's is :data:`CANON_RULES_VERSION` (below 1024). Any other policy gets
    1024 + (blake2b of the rules version and the policy's description) mod 31744: a 15-bit
    tag that fits ``page_snapshots.canon_version`` (SMALLINT). Two different policies share
    a tag with probability 1/31744; equal policies always share one.

    >>> canon_version() == CANON_RULES_VERSION
    True
    >>> canon_version(CanonPolicy(default=HostPolicy(fold_trailing_slash=True)))
    8526
    """
    if policy is None:
        return CANON_RULES_VERSION
    description = json.dumps(policy.describe(), sort_keys=True)
    if description == _DEFAULT_DESCRIPTION:
        return CANON_RULES_VERSION
    digest = hashlib.blake2b(
        f"{CANON_RULES_VERSION}\n{description}".encode(), digest_size=8
    ).digest()
    return 1024 + int.from_bytes(digest, "big") % (32768 - 1024)


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


def _canonicalise_parsed(url: str, policy: CanonPolicy) -> str:
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


def url_digest(
    url: str, policy: CanonPolicy | None = None, *, max_length: int | None = None
) -> bytes:
    """Return the 16-byte blake2b digest of the canonical form of ``url``.

    The digest is stable across processes, machines and Python versions (``hashlib``, not
    ``hash()``), so it can key a shared store and a persisted seen-set.

    >>> url_digest("http://example.com/").hex()
    '9aba6a18c5a5d94534a3b99c485d4547'
    """
    hasher = _BLAKE2B_128.copy()  # digest_canonical, inlined
    hasher.update(canonicalise(url, policy, max_length=max_length).encode())
    return hasher.digest()


# Copying a ready blake2b-128 state is about a third cheaper than constructing one per URL.
_BLAKE2B_128 = hashlib.blake2b(digest_size=16)


def digest_canonical(canonical: str) -> bytes:
    """Return the 16-byte blake2b digest of an already canonical URL."""
    hasher = _BLAKE2B_128.copy()
    hasher.update(canonical.encode("utf-8"))
    return hasher.digest()


def url_host(canonical: str) -> str:
    """Return the host (with a non-default port) of a canonical URL.

    >>> url_host("https://example.com:8443/a?b")
    'example.com:8443'
    """
    return canonical.partition("://")[2].partition("/")[0]


def strip_query(canonical: str) -> str:
    """Return a canonical URL without its query string (or routing fragment).

    >>> strip_query("https://example.com/a?session=1")
    'https://example.com/a'
    """
    return canonical.partition("?")[0].partition("#")[0]


def stored_url(canonical: str, policy: str) -> str | None:
    """The form of a canonical URL kept under a URL-storage policy (``full``, ``no-query``,
    ``none``): the URL, the URL without its query, or nothing.

    >>> stored_url("https://example.com/a?q=1", "no-query")
    'https://example.com/a'
    >>> stored_url("https://example.com/a?q=1", "none") is None
    True
    """
    if policy == "full":
        return canonical
    if policy == "no-query":
        return strip_query(canonical)
    return None


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


def _policy_host(name: object) -> str:
    """Canonicalise a policy's host key, keeping a leading "." (domain and subdomains)."""
    if not isinstance(name, str) or not name.strip("."):
        raise ConfigError(f"host names in a policy must be non-empty strings, got {name!r}")
    dot = "." if name.startswith(".") else ""
    try:
        canonical = canonicalise(f"http://{name.lstrip('.')}/")
    except InvalidURLError as exc:
        raise ConfigError(f"policy host {name!r} is not a valid host: {exc.reason}") from None
    host = url_host(canonical)
    port = host.rpartition("]")[2] if host.startswith("[") else host
    if host != canonical[7:-1] or ":" in port:
        raise ConfigError(f"policy host {name!r} must be a host name alone")
    return dot + host
