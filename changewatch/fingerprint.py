"""Content fingerprints of HTML pages, and of extracted records — pure functions, no I/O.

A :class:`Fingerprint` has three hashes, cheapest first, matching the order in which
``should_parse`` consults them:

``raw_sha256``
    SHA-256 of the bytes as fetched (``str`` input is UTF-8 encoded). Equal raw bytes mean
    an unchanged page without parsing any HTML.
``content_sha256``
    SHA-256 of the *normalised text* (:func:`normalise`): the page decoded (BOM, HTTP
    ``Content-Type`` charset, ``<meta charset>``, else UTF-8 with replacement), parsed with
    selectolax's lexbor backend; ``script``/``style``/``noscript``/``template``/``svg``/
    ``iframe``/``object``, comments, hidden elements (``hidden``, ``aria-hidden="true"``,
    ``<input type=hidden>``) dropped, plus what a :class:`FingerprintPolicy` says (ignored
    selectors, a main-content selector, and — off by default, see docs/fingerprints.md for
    the measurement — boilerplate regions: ``nav``, ``footer``, ``aside``, a ``header``
    outside ``article``/``main``/``section``); visible
    text only, Unicode NFKC, case-folded, whitespace collapsed, and volatile stamps (date-times,
    times of day, "5 minutes ago") removed. A re-render whose visible text did not change has
    the same ``content_sha256``.
``simhash``
    A 64-bit SimHash (Charikar 2002) of the normalised text, so that small edits land a few
    bits away from the previous version: weighted word 2-shingles, computed in numpy
    (:mod:`changewatch.simhash64` documents the features and the hash), equal to
    ``simhash.Simhash(features, hashfunc=feature_hash).value`` for the same features.

Binary bodies (PDF, PNG, JPEG, GIF, WebP, ZIP, gzip by magic bytes, or a non-HTML media type)
are not parsed: ``content_sha256`` is the raw SHA-256, ``simhash`` 0 and ``binary`` true.

:data:`FINGERPRINT_VERSION` names the normalisation and feature rules; it is stored with
every snapshot. :func:`fingerprint_record` (:mod:`changewatch.records`) hashes structured
data as canonical JSON.
"""

from __future__ import annotations

import codecs
import hashlib
import html as html_lib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from changewatch.errors import ConfigError
from changewatch.records import canonical_json, fingerprint_record
from changewatch.simhash64 import (
    MAX_FEATURE_WEIGHT,
    feature_hash,
    hamming,
    simhash,
    simhash_features,
    simhash_of_features,
)

__all__ = [
    "BOILERPLATE_TAGS",
    "DEFAULT_MAX_NESTING",
    "DEFAULT_VOLATILE_PATTERNS",
    "FINGERPRINT_VERSION",
    "HIDDEN_SELECTOR",
    "MAX_FEATURE_WEIGHT",
    "Fingerprint",
    "FingerprintPolicy",
    "canonical_json",
    "content_sha256",
    "decode_html",
    "feature_hash",
    "fingerprint",
    "fingerprint_record",
    "hamming",
    "is_binary",
    "normalise",
    "normalise_markup",
    "raw_sha256",
    "simhash",
    "simhash_features",
    "simhash_of_features",
    "strip_volatile",
    "text_fingerprint",
]

#: Version of the normalisation and SimHash feature rules; bump when either changes.
#: 1: visible text minus script/style/…; 2: also hidden elements, boilerplate regions,
#: volatile stamps, binary bodies hashed raw; 3: words hashed by a polynomial over their code
#: points (vectorised in numpy) instead of blake2b, and word 2-shingles instead of 3-shingles.
FINGERPRINT_VERSION = 3


#: Elements whose content is never visible text.
DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "object")

#: Site-wide navigation and furniture (HTML Living Standard §4.3 sections); a ``header`` is
#: boilerplate only at page level, outside ``article``/``main``/``section``.
BOILERPLATE_TAGS = ("nav", "footer", "aside")
_SECTIONING = frozenset({"article", "main", "section"})

#: Elements not rendered (HTML §6.1 the ``hidden`` attribute; WAI-ARIA 1.2 ``aria-hidden``).
HIDDEN_SELECTOR = '[hidden], [aria-hidden="true" i], input[type="hidden" i]'

#: Pages whose tag nesting may exceed this are read by a tag-stripping fallback instead of
#: lexbor, whose tree building is quadratic in nesting depth (100,000 nested ``div``: 22 s).
#: Blink flattens the DOM past 512 levels; the deepest corpus page estimates 1,154.
DEFAULT_MAX_NESTING = 4096

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_WEEKDAY = r"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,? )?"
_TIME = (
    r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?: ?[ap]\.?m\.?)?"
    r"(?: ?(?:z|utc|gmt|[+-]\d{2}:?\d{2}|[a-z][sd]t|cet|cest|bst))?"
)
#: Volatile text removed from normalised (lower-case) text before hashing. Dates alone are
#: kept (a publication date is content); a date *with* a time, a time of day and a relative
#: age are what "generated at" clocks and "updated 5 minutes ago" labels print.
DEFAULT_VOLATILE_PATTERNS: tuple[str, ...] = (
    # ISO 8601 / RFC 3339 date-time: 2026-03-01t12:00:00z, 2026-03-01 12:00:00.123+01:00
    r"\b\d{4}-\d{2}-\d{2}[t ]" + _TIME,
    # numeric and spelled-out dates followed by a time: 01/03/2026 12:00, mar 1, 2026 at 9:05 pm,
    # mon, 01 mar 2026 12:00:00 gmt (RFC 1123)
    r"\b"
    + _WEEKDAY
    + r"(?:\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}|"
    + _MONTH
    + r" \d{1,2}(?:st|nd|rd|th)?,? \d{4}"
    r"|\d{1,2}(?:st|nd|rd|th)? " + _MONTH + r",? \d{4}),?(?: at)? " + _TIME,
    # a time of day: 12:00, 9:05 pm, 23:59:59 utc
    r"\b" + _TIME + r"(?!\d)",
    # relative ages: 5 minutes ago, an hour ago, 3 hrs ago
    r"\b(?:\d+|an?) (?:sec(?:ond)?|min(?:ute)?|h(?:ou)?r|day|week|month|year)s? ago\b",
)


_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# WHATWG HTML §13.2.3.2 "prescan a byte stream": a charset in the first 1024 bytes.
_META_CHARSET_RE = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE
)
_HEADER_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)
# WHATWG Encoding Standard: these labels mean windows-1252.
_LABEL_ALIASES = {
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "x-user-defined": "cp1252",
}
_WHITESPACE_RE = re.compile(r"\s+")
_WINDOW_BEFORE = 96
_WINDOW_AFTER = 48


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The hashes of one page; see the module docstring for what each one covers.

    ``binary`` is true for a body fingerprinted as raw bytes (see :func:`is_binary`).
    """

    raw_sha256: bytes
    content_sha256: bytes
    simhash: int
    text_length: int
    version: int = FINGERPRINT_VERSION
    binary: bool = False

    def __post_init__(self) -> None:
        if len(self.raw_sha256) != 32 or len(self.content_sha256) != 32:
            raise ValueError("SHA-256 digests must be 32 bytes")
        if not 0 <= self.simhash < 1 << 64:
            raise ValueError("simhash must be an unsigned 64-bit integer")


def raw_sha256(html: str | bytes) -> bytes:
    """SHA-256 of the page as fetched; ``str`` is hashed as UTF-8."""
    data = html.encode("utf-8", "surrogatepass") if isinstance(html, str) else html
    return hashlib.sha256(data).digest()


def decode_html(html: str | bytes, content_type: str | None = None) -> str:
    """Decode page bytes to text; never raises on any bytes.

    Order (WHATWG HTML encoding sniffing, simplified): byte order mark, the charset of the
    HTTP ``Content-Type`` header, a ``<meta charset>`` or ``http-equiv`` charset within the
    first 1024 bytes, else UTF-8. Undecodable bytes become U+FFFD.

    >>> decode_html(b'<meta charset="iso-8859-1"><p>caf\\xe9')
    '<meta charset="iso-8859-1"><p>café'
    """
    if isinstance(html, str):
        return html
    encoding, skip = _sniff_encoding(html, content_type)
    if skip:
        return html[skip:].decode(encoding or "utf-8", "replace")
    try:
        return html.decode(encoding or "utf-8", "replace")
    except (LookupError, UnicodeError):
        # A label naming a codec that is not a text encoding (base64, rot13, undefined, idna…).
        return html.decode("utf-8", "replace")


def _sniff_encoding(html: bytes, content_type: str | None) -> tuple[str | None, int]:
    """The codec :func:`decode_html` reads ``html`` with (None: UTF-8) and the length of the
    byte order mark it skips."""
    for bom, bom_encoding in _BOMS:
        if html.startswith(bom):
            return bom_encoding, len(bom)
    encoding: str | None = None
    if content_type:
        match = _HEADER_CHARSET_RE.search(content_type)
        if match:
            encoding = _codec(match.group(1))
    if encoding is None:
        match_bytes = _META_CHARSET_RE.search(html, 0, 1024)
        if match_bytes:
            encoding = _codec(match_bytes.group(1).decode("ascii", "replace"), meta=True)
    return encoding, 0


def _utf8_source(html: str | bytes, content_type: str | None) -> bytes | None:
    """The UTF-8 bytes of ``decode_html(html, content_type)`` when they can be had without
    decoding: ``html`` itself (less its BOM) for valid UTF-8 bytes read as UTF-8, or a ``str``
    without lone surrogates, encoded. Else None.

    selectolax parses bytes as UTF-8 and encodes a ``str`` to UTF-8 first, so handing it these
    bytes builds the same tree without the decode and re-encode. Invalid UTF-8 is not handed
    over: lexbor's replacement of bad sequences differs from Python's ``"replace"`` (it drops
    a NUL inside a sequence before decoding it).

    >>> _utf8_source(b"\\xef\\xbb\\xbf<p>caf\\xc3\\xa9", None), _utf8_source(b"caf\\xe9", None)
    (b'<p>caf\\xc3\\xa9', None)
    """
    if isinstance(html, str):
        try:
            return html.encode("utf-8")
        except UnicodeEncodeError:
            return None
    encoding, skip = _sniff_encoding(html, content_type)
    if encoding not in (None, "utf-8"):
        return None
    body = html[skip:] if skip else html
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return body


def _codec(label: str, *, meta: bool = False) -> str | None:
    """Map a charset label to a Python codec name, or None when unknown."""
    label = label.strip().lower()
    label = _LABEL_ALIASES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if meta and name.startswith(("utf-16", "utf-32")):
        # WHATWG prescan: a <meta> readable as ASCII means the page is not UTF-16; use UTF-8.
        return "utf-8"
    return name


@dataclass(frozen=True, slots=True)
class FingerprintPolicy:
    """What :func:`normalise` drops, for every host, with per-host overrides.

    ``ignore``: CSS selectors whose elements are dropped. ``main``: a CSS selector; when it
    matches, only the first match's text is kept. ``volatile``: regular expressions removed
    from the normalised (case-folded) text. ``boilerplate``: drop ``nav``/``footer``/
    ``aside``/page-level ``header`` (off by default: on the corpus it hid 4.6% of real edits
    and made no noise-only re-render more stable; benchmarks/near_dup_quality.py).
    ``hosts`` maps a host name (``".NAME"``: the domain and
    its subdomains) to the policy used there instead (see :meth:`for_host`); host policies
    have no hosts of their own. Bad selectors or patterns raise :class:`ConfigError` naming
    them.

    >>> policy = FingerprintPolicy(hosts={".example.com": FingerprintPolicy(main="article")})
    >>> policy.for_host("news.example.com").main, policy.for_host("example.org").main
    ('article', None)
    """

    ignore: tuple[str, ...] = ()
    main: str | None = None
    volatile: tuple[str, ...] = DEFAULT_VOLATILE_PATTERNS
    boilerplate: bool = False
    hosts: Mapping[str, FingerprintPolicy] = field(default_factory=dict)
    _volatile_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _strip_selector: str = field(init=False, repr=False, compare=False)
    _drop_selector: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("ignore", "volatile"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise ConfigError(f"fingerprint policy: {name} must be a list of strings")
            value = tuple(value)
            if not all(isinstance(v, str) for v in value):
                raise ConfigError(f"fingerprint policy: {name} must be a list of strings")
            object.__setattr__(self, name, value)
        if self.main is not None and not isinstance(self.main, str):
            raise ConfigError(f"fingerprint policy: main must be a string, got {self.main!r}")
        if not isinstance(self.boilerplate, bool):
            raise ConfigError(
                f"fingerprint policy: boilerplate must be true or false, got {self.boilerplate!r}"
            )
        probe = LexborHTMLParser("<p></p>")
        for selector in (*self.ignore, *([self.main] if self.main is not None else [])):
            try:
                probe.css(selector)
            except (SelectolaxError, ValueError, TypeError):
                raise ConfigError(f"fingerprint policy: bad CSS selector {selector!r}") from None
        for pattern in self.volatile:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(
                    f"fingerprint policy: bad volatile pattern {pattern!r}: {exc}"
                ) from None
        joined = "|".join(f"(?:{p})" for p in self.volatile)
        object.__setattr__(self, "_volatile_re", re.compile(joined) if joined else None)
        # Dropped tags first, in one query; then the hidden and ignored elements of what is
        # left, as ignored selectors may be structural (":first-child", "a + b"). With no
        # ignored selectors the hidden ones (attributes and types only, so the same either
        # way) join the first query, and one tree walk finds everything.
        tags = (*DROPPED_TAGS, *BOILERPLATE_TAGS) if self.boilerplate else DROPPED_TAGS
        strip = ", ".join((*tags, *(() if self.ignore else (HIDDEN_SELECTOR,))))
        drop = ", ".join((HIDDEN_SELECTOR, *self.ignore)) if self.ignore else None
        object.__setattr__(self, "_strip_selector", strip)
        object.__setattr__(self, "_drop_selector", drop)
        if not isinstance(self.hosts, Mapping):
            raise ConfigError("fingerprint policy: hosts must map host names to policies")
        for host, rules in self.hosts.items():
            if not isinstance(host, str) or not isinstance(rules, FingerprintPolicy):
                raise ConfigError(f"fingerprint policy: hosts[{host!r}] must be a policy")
            if rules.hosts:
                raise ConfigError(f"fingerprint policy: hosts[{host!r}] has hosts of its own")
        object.__setattr__(self, "hosts", {h.lower(): r for h, r in self.hosts.items()})

    def __hash__(self) -> int:
        return hash((self.ignore, self.main, self.volatile, self.boilerplate, tuple(self.hosts)))

    def for_host(self, host: str | None) -> FingerprintPolicy:
        """The policy for ``host``: an exact entry, else the longest ``".domain"`` entry, else
        this policy (its ``hosts`` are then ignored by :func:`normalise`)."""
        if not self.hosts or not host:
            return self
        host = host.lower()
        found = self.hosts.get(host)
        if found is not None:
            return found
        best: tuple[int, FingerprintPolicy] | None = None
        for name, rules in self.hosts.items():
            matches = name.startswith(".") and (host.endswith(name) or host == name[1:])
            if matches and (best is None or len(name) > best[0]):
                best = (len(name), rules)
        return self if best is None else best[1]


#: The policy used when none is given.
DEFAULT_POLICY = FingerprintPolicy()


# File signatures ("magic numbers"): PDF 1.7 §7.5.2, PNG §5.2, JPEG/JFIF SOI, GIF89a, RIFF
# WebP container, ZIP APPNOTE §4.3.7 (and the empty/spanned archive markers), RFC 1952 gzip.
_MAGIC = (
    b"%PDF-",
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"PK\x07\x08",
    b"\x1f\x8b",
)
_BINARY_TYPES = ("image/", "audio/", "video/", "font/", "model/")
_TEXT_SUBTYPE_WORDS = ("html", "xml", "json", "javascript", "ecmascript", "text")


def is_binary(body: str | bytes, content_type: str | None = None) -> bool:
    """True for a body that is not HTML: by magic bytes, or by a non-text media type.

    >>> is_binary(b"%PDF-1.7 ..."), is_binary(b"<p>hi</p>", "image/png; q=1")
    (True, True)
    >>> is_binary(b"<p>hi</p>", "text/html"), is_binary(b"<p>hi</p>", "application/xhtml+xml")
    (False, False)
    """
    if isinstance(body, bytes) and (
        body.startswith(_MAGIC) or (body[:4] == b"RIFF" and body[8:12] == b"WEBP")
    ):
        return True
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    if media.startswith(_BINARY_TYPES):
        return True
    if media.startswith("application/"):
        return not any(word in media for word in _TEXT_SUBTYPE_WORDS)
    return False


def _nesting_bound(text: str | bytes) -> int:
    """An estimate of a page's maximum tag nesting: the running count of ``<x`` minus ``</``.

    Void and unclosed elements count as open, so it over-estimates real pages; it is only
    computed for pages with more than :data:`DEFAULT_MAX_NESTING` ``<`` characters.
    """
    if isinstance(text, str):
        if text.count("<") <= DEFAULT_MAX_NESTING:
            return 0
        text = text.encode("utf-8", "surrogatepass")
    array = np.frombuffer(text, dtype=np.uint8)
    opening = array == 0x3C  # counted by numpy: several times faster than bytes.count
    if np.count_nonzero(opening) <= DEFAULT_MAX_NESTING:
        return 0
    after = array[np.flatnonzero(opening[:-1]) + 1]
    folded = after | 0x20
    steps = ((folded >= 0x61) & (folded <= 0x7A)).astype(np.int32) - (after == 0x2F)
    return int(np.cumsum(steps).max()) if steps.size else 0


_FALLBACK_DROP_RE = re.compile(
    r"<!--.*?(?:-->|$)|<(script|style|noscript|template|svg|iframe|object)\b.*?(?:</\1\s*>|$)",
    re.IGNORECASE | re.DOTALL,
)
_FALLBACK_TAG_RE = re.compile(r"<[^>]*>?")


def _fallback_text(text: str) -> str:
    """Visible text by tag stripping, for pages nested too deeply for the HTML parser."""
    text = _FALLBACK_DROP_RE.sub(" ", text)
    return html_lib.unescape(_FALLBACK_TAG_RE.sub(" ", text))


def normalise(
    html: str | bytes,
    content_type: str | None = None,
    policy: FingerprintPolicy | None = None,
    *,
    host: str | None = None,
) -> str:
    """Return the normalised visible text of a page (see the module docstring).

    ``policy`` (default :data:`DEFAULT_POLICY`) is applied for ``host`` (see
    :meth:`FingerprintPolicy.for_host`). A binary body (:func:`is_binary`) has no text: ``""``.

    >>> normalise("<p>Hello,\\n  <b>World</b></p><script>x=1</script><!-- c -->")
    'hello, world'
    >>> normalise("<p>Built at 12:00 UTC</p><p hidden>x</p><nav>Home</nav>")
    'built at home'
    >>> normalise("<p>At 12:00</p><nav>Home</nav>", policy=FingerprintPolicy(boilerplate=True))
    'at'
    """
    if is_binary(html, content_type):
        return ""
    return normalise_markup(html, content_type, policy, host=host)


def normalise_markup(
    html: str | bytes,
    content_type: str | None = None,
    policy: FingerprintPolicy | None = None,
    *,
    host: str | None = None,
) -> str:
    """:func:`normalise` for a body already known not to be binary (no second check).

    >>> normalise_markup("<p>Hello</p>")
    'hello'
    """
    rules = (policy or DEFAULT_POLICY).for_host(host)
    source: str | bytes | None = _utf8_source(html, content_type)
    if source is None:
        source = decode_html(html, content_type)
    if _nesting_bound(source) > DEFAULT_MAX_NESTING:
        text = _fallback_text(decode_html(html, content_type))
    else:
        text = _visible_text(LexborHTMLParser(source), rules)
    return _strip_volatile(normalise_text(text), rules, collapsed=True)


def _visible_text(tree: LexborHTMLParser, rules: FingerprintPolicy) -> str:
    root = tree.root
    top = None if root is None else root.mem_id
    if not _drop(tree.css(rules._strip_selector), top):
        return ""  # <html hidden>, <html aria-hidden="true">: nothing on the page is shown
    if rules._drop_selector is not None and not _drop(tree.css(rules._drop_selector), top):
        return ""  # a policy that ignores the root element (ignore = ["html"]) keeps nothing
    if rules.boilerplate:
        headers = tree.css("header")
        if headers:
            _drop(_page_level(headers), top)
    if rules.main is not None:
        root = tree.css_first(rules.main) or root
    # Whitespace-only text nodes (indentation) add nothing once whitespace is collapsed.
    return root.text(separator=" ", skip_empty=True) if root is not None else ""


def _drop(nodes: list[Any], top: int | None) -> bool:
    """Remove ``nodes`` from the tree, last first (a descendant goes before the ancestor
    holding it); ``False``, removing nothing, if the root element (``mem_id`` ``top``) is
    among them: lexbor refuses to remove it, and all of the page would go."""
    if top is not None and any(node.mem_id == top for node in nodes):
        return False
    for node in reversed(nodes):
        node.decompose()
    return True


def _page_level(headers: list[Any]) -> list[Any]:
    """The headers with no ``article``/``main``/``section`` ancestor, each ancestor looked
    at once (linear even for deeply nested headers)."""
    inside: dict[int, bool] = {}
    out = []
    for header in headers:
        path = []
        node = header.parent
        found = False
        while node is not None:
            known = inside.get(node.mem_id)
            if known is not None:
                found = known
                break
            if node.tag in _SECTIONING:
                found = True
                break
            path.append(node.mem_id)
            node = node.parent
        for mem_id in path:
            inside[mem_id] = found
        if not found:
            out.append(header)
    return out


def strip_volatile(text: str, policy: FingerprintPolicy | None = None) -> str:
    """Remove the policy's volatile patterns from normalised text, to a fixed point.

    >>> strip_volatile("generated at 2026-03-01t12:00:00z by node-7, updated 5 minutes ago")
    'generated at by node-7, updated'
    """
    return _strip_volatile(text, policy or DEFAULT_POLICY, collapsed=False)


def _strip_volatile(text: str, policy: FingerprintPolicy, *, collapsed: bool) -> str:
    """:func:`strip_volatile`; ``collapsed``: ``text`` has no whitespace but single inner
    spaces (as :func:`normalise_text` returns), so the result needs no collapsing pass."""
    pattern = policy._volatile_re
    if pattern is None:
        return text
    if policy.volatile != DEFAULT_VOLATILE_PATTERNS:
        return _strip_to_fixed_point(text, pattern)
    # Every default pattern holds a time (":" then a digit) or " ago", and no match reaches
    # further than ~70 characters before it or ~30 after: search only windows around those
    # anchors (snapped to spaces), instead of running the alternation over the whole text.
    spans: list[list[int]] = []
    for anchor_start, anchor_end in _volatile_anchors(text):
        start = text.rfind(" ", 0, max(0, anchor_start - _WINDOW_BEFORE)) + 1
        end = text.find(" ", anchor_end + _WINDOW_AFTER)
        end = len(text) if end == -1 else end
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    if not spans:
        return text
    pieces = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(_strip_to_fixed_point(text[start:end], pattern))
        last = end
    pieces.append(text[last:])
    if collapsed:
        # Each piece is collapsed inside, and pieces meet at spaces: strip and join them.
        return " ".join(piece for piece in map(str.strip, pieces) if piece)
    return " ".join(" ".join(pieces).split())


def _volatile_anchors(text: str) -> list[tuple[int, int]]:
    """Spans of ``:\\d`` and `` ago\\b`` in ``text``, in order — found with ``str.find``,
    which is much faster than a regex alternation tried at every position.

    >>> _volatile_anchors("at 12:05, 3 days ago; agog: no")
    [(5, 7), (16, 20)]
    """
    found = []
    at = text.find(":")
    while at != -1:
        if at + 1 < len(text) and text[at + 1].isdecimal():
            found.append((at, at + 2))
        at = text.find(":", at + 1)
    at = text.find(" ago")
    while at != -1:
        after = at + 4
        if after == len(text) or not (text[after].isalnum() or text[after] == "_"):
            found.append((at, after))
        at = text.find(" ago", at + 1)
    found.sort()
    return found


def _strip_to_fixed_point(text: str, pattern: re.Pattern[str]) -> str:
    # Removing a match can join its neighbours into a new one; repeat until none is left.
    while pattern.search(text) is not None:
        text = " ".join(pattern.sub(" ", text).split())
    return text


def normalise_text(text: str) -> str:
    """NFKC, case-fold and collapse whitespace; idempotent.

    >>> normalise_text("  Ｆｕｌｌ\\u00a0WIDTH  ")
    'full width'
    """
    text = " ".join(text.split())
    if text.isascii():
        return text.lower()  # ASCII is already NFKC and case-folds to lower case
    changed = False
    if not unicodedata.is_normalized("NFKC", text):
        # NFKC decomposes each character fully before composing, so a character replaced by
        # its full decomposition normalises alike; U+2026 "…" (NFKD "...") is the commonest
        # reason web text is not NFKC, and str.replace is much cheaper than normalize.
        text = text.replace("\u2026", "...")
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
            changed = True
    text = text.casefold()  # never makes whitespace (a unit test checks every code point)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
        changed = True
    # NFKC can turn a character into a space sequence (U+00A8 → " ̈"): collapse again.
    return " ".join(text.split()) if changed else text


def content_sha256(text: str) -> bytes:
    """SHA-256 of normalised text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def text_fingerprint(raw: bytes, text: str) -> Fingerprint:
    """Fingerprint of already normalised ``text`` whose raw page hashed to ``raw``."""
    return Fingerprint(
        raw_sha256=raw,
        content_sha256=content_sha256(text),
        simhash=simhash(text),
        text_length=len(text),
    )


def fingerprint(
    html: str | bytes,
    content_type: str | None = None,
    *,
    policy: FingerprintPolicy | None = None,
    host: str | None = None,
) -> Fingerprint:
    """Fingerprint a page given as ``str`` or ``bytes`` in any encoding.

    A binary body (:func:`is_binary`) is not parsed: its ``content_sha256`` is its raw
    SHA-256, ``simhash`` and ``text_length`` are 0 and ``binary`` is true.

    >>> fp = fingerprint("<p>Hello</p>")
    >>> fp.content_sha256 == fingerprint("<div> hello </div><!-- x -->").content_sha256
    True
    >>> fingerprint(b"%PDF-1.7 ...").binary
    True
    """
    if not isinstance(html, str | bytes):
        raise TypeError(f"html must be str or bytes, not {type(html).__name__}")
    raw = raw_sha256(html)
    if is_binary(html, content_type):
        return binary_fingerprint(raw)
    return text_fingerprint(raw, normalise_markup(html, content_type, policy, host=host))


def binary_fingerprint(raw: bytes) -> Fingerprint:
    """Fingerprint of a binary body whose raw SHA-256 is ``raw``."""
    return Fingerprint(raw, raw, 0, 0, binary=True)
