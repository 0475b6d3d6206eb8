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
    bits away from the previous version. Features are overlapping word 3-shingles (single
    words for texts under three words); a feature's weight is its number of occurrences,
    capped at :data:`MAX_FEATURE_WEIGHT`; each feature is hashed with 8-byte blake2b
    (stable across processes, unlike ``hash()``). The value equals
    ``simhash.Simhash(features, hashfunc=feature_hash).value`` for the same weighted features
    — a unit test pins it — but is computed with one vectorised sum instead of the
    package's Python loop. Weights are capped because the package overflows ``uint8`` for
    weights above 255 under numpy 2 (upstream issue 1e0ng/simhash#74).

Binary bodies (PDF, PNG, JPEG, GIF, WebP, ZIP, gzip by magic bytes, or a non-HTML media type)
are not parsed: ``content_sha256`` is the raw SHA-256, ``simhash`` 0 and ``binary`` true.

:data:`FINGERPRINT_VERSION` names the normalisation and feature rules; it is stored with
every snapshot. :func:`fingerprint_record` hashes structured data as canonical JSON.
"""

from __future__ import annotations

import codecs
import hashlib
import html as html_lib
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from changewatch.errors import ConfigError

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
    "raw_sha256",
    "simhash",
    "simhash_features",
    "simhash_of_features",
    "strip_volatile",
    "text_fingerprint",
]

#: Version of the normalisation and SimHash feature rules; bump when either changes.
#: 1: visible text minus script/style/…; 2: also hidden elements, boilerplate regions,
#: volatile stamps, binary bodies hashed raw.
FINGERPRINT_VERSION = 2

#: Cap on a SimHash feature's weight (its occurrence count in the page).
MAX_FEATURE_WEIGHT = 255

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
_WORD_RE = re.compile(r"\w+")
_VOLATILE_ANCHOR_RE = re.compile(r":\d| ago\b")
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
    for bom, bom_encoding in _BOMS:
        if html.startswith(bom):
            return html[len(bom) :].decode(bom_encoding, "replace")
    encoding: str | None = None
    if content_type:
        match = _HEADER_CHARSET_RE.search(content_type)
        if match:
            encoding = _codec(match.group(1))
    if encoding is None:
        match_bytes = _META_CHARSET_RE.search(html, 0, 1024)
        if match_bytes:
            encoding = _codec(match_bytes.group(1).decode("ascii", "replace"), meta=True)
    try:
        return html.decode(encoding or "utf-8", "replace")
    except (LookupError, UnicodeError):
        # A label naming a codec that is not a text encoding (base64, rot13, undefined, idna…).
        return html.decode("utf-8", "replace")


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
        drop = ", ".join((HIDDEN_SELECTOR, *self.ignore))
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
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if data.count(b"<") <= DEFAULT_MAX_NESTING:
        return 0
    array = np.frombuffer(data, dtype=np.uint8)
    after = array[np.flatnonzero(array[:-1] == 0x3C) + 1]
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
    rules = (policy or DEFAULT_POLICY).for_host(host)
    decoded = decode_html(html, content_type)
    if _nesting_bound(decoded) > DEFAULT_MAX_NESTING:
        text = _fallback_text(decoded)
    else:
        text = _visible_text(LexborHTMLParser(decoded), rules)
    return strip_volatile(normalise_text(text), rules)


def _visible_text(tree: LexborHTMLParser, rules: FingerprintPolicy) -> str:
    tree.strip_tags([*DROPPED_TAGS, *BOILERPLATE_TAGS] if rules.boilerplate else [*DROPPED_TAGS])
    assert rules._drop_selector is not None
    # Reverse document order: a descendant is destroyed before the ancestor that holds it.
    for node in reversed(tree.css(rules._drop_selector)):
        node.decompose()
    if rules.boilerplate:
        headers = tree.css("header")
        if headers:
            for node in reversed(_page_level(headers)):
                node.decompose()
    root = tree.root
    if rules.main is not None:
        root = tree.css_first(rules.main) or root
    return root.text(separator=" ") if root is not None else ""


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
    policy = policy or DEFAULT_POLICY
    pattern = policy._volatile_re
    if pattern is None:
        return text
    if policy.volatile != DEFAULT_VOLATILE_PATTERNS:
        return _strip_to_fixed_point(text, pattern)
    # Every default pattern holds a time (":" then a digit) or " ago", and no match reaches
    # further than ~70 characters before it or ~30 after: search only windows around those
    # anchors (snapped to spaces), instead of running the alternation over the whole text.
    spans: list[list[int]] = []
    for anchor in _VOLATILE_ANCHOR_RE.finditer(text):
        start = text.rfind(" ", 0, max(0, anchor.start() - _WINDOW_BEFORE)) + 1
        end = text.find(" ", anchor.end() + _WINDOW_AFTER)
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
    return " ".join(" ".join(pieces).split())


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
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    text = text.casefold()
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    # NFKC can turn a character into a space sequence (U+00A8 → " ̈"): collapse again.
    return " ".join(text.split())


def content_sha256(text: str) -> bytes:
    """SHA-256 of normalised text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def simhash_features(text: str) -> dict[str, int]:
    """Weighted SimHash features of normalised text: word 3-shingles and their counts.

    Texts of fewer than three words use the words themselves.

    >>> simhash_features("a b c a b c")
    {'a b c': 2, 'b c a': 1, 'c a b': 1}
    """
    words = _WORD_RE.findall(text)
    if len(words) < 3:
        shingles = words
    else:
        shingles = [f"{a} {b} {c}" for a, b, c in zip(words, words[1:], words[2:], strict=False)]
    counts = Counter(shingles)
    return {f: min(w, MAX_FEATURE_WEIGHT) for f, w in counts.items()}


# Multipliers of MurmurHash3's 64-bit finaliser (Appleby, public domain) and a golden-ratio
# constant, used to combine per-word hashes into a shingle hash.
_M1 = 0xFF51AFD7ED558CCD
_M2 = 0xC4CEB9FE1A85EC53
_GOLDEN = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1


def _word_hash(word: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(word, digest_size=8).digest(), "big")


def _rotl(value: int, shift: int) -> int:
    return ((value << shift) | (value >> (64 - shift))) & _MASK64


def feature_hash(feature: bytes) -> bytes:
    """The per-feature hash, 8 bytes, read big-endian as the SimHash bits.

    A feature is one to three words separated by single spaces. Each word is hashed with
    8-byte blake2b (stable across processes); word *i*'s hash is rotated left by 21·*i*
    bits, the results are combined by multiply-xor and finished with MurmurHash3's fmix64.
    Hashing words once and combining them is what lets :func:`simhash` vectorise the
    shingles; this scalar version exists so the value can be checked against the
    ``simhash`` package (``simhash.Simhash(features, hashfunc=feature_hash)``).
    """
    words = feature.split(b" ")
    value = _word_hash(words[0])
    for index, word in enumerate(words[1:], 1):
        value = ((value * _GOLDEN) & _MASK64) ^ _rotl(_word_hash(word), 21 * index)
    return _fmix64(value).to_bytes(8, "big")


def _fmix64(value: int) -> int:
    value ^= value >> 33
    value = (value * _M1) & _MASK64
    value ^= value >> 33
    value = (value * _M2) & _MASK64
    return value ^ (value >> 33)


def _fmix64_array(values: Any) -> Any:
    values = values ^ (values >> np.uint64(33))
    values = values * np.uint64(_M1)
    values = values ^ (values >> np.uint64(33))
    values = values * np.uint64(_M2)
    return values ^ (values >> np.uint64(33))


def _rotl_array(values: Any, shift: int) -> Any:
    return (values << np.uint64(shift)) | (values >> np.uint64(64 - shift))


def simhash(text: str) -> int:
    """64-bit weighted SimHash of normalised text (features: :func:`simhash_features`).

    Equal to ``simhash_of_features(simhash_features(text))``, computed without building the
    shingle strings: each distinct word is hashed once, shingle hashes are combined in numpy
    (:func:`feature_hash` is the scalar definition), identical shingles are counted, and
    the weighted bit sums are one matrix product.

    >>> simhash("") == 0
    True
    """
    words = _WORD_RE.findall(text)
    if not words:
        return 0
    table = {word: _word_hash(word.encode("utf-8", "surrogatepass")) for word in set(words)}
    hashes = np.fromiter((table[w] for w in words), dtype=np.uint64, count=len(words))
    if len(words) >= 3:
        with np.errstate(over="ignore"):
            combined = hashes[:-2] * np.uint64(_GOLDEN) ^ _rotl_array(hashes[1:-1], 21)
            combined = combined * np.uint64(_GOLDEN) ^ _rotl_array(hashes[2:], 42)
            hashes = _fmix64_array(combined)
    else:
        hashes = _fmix64_array(hashes)
    unique, counts = np.unique(hashes, return_counts=True)
    return _weighted_simhash(unique, np.minimum(counts, MAX_FEATURE_WEIGHT))


def _weighted_simhash(hashes: np.ndarray, weights: np.ndarray) -> int:
    """Bit b is set when the features whose hash has bit b carry over half the weight."""
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8)).reshape(-1, 64)
    # float64 holds these integer sums exactly (< 2**53) and takes the BLAS path.
    sums = weights.astype(np.float64) @ bits.astype(np.float64)
    packed = np.packbits(sums * 2 > int(weights.sum())).tobytes()
    return int.from_bytes(packed, "big")


def simhash_of_features(features: dict[str, int]) -> int:
    """64-bit weighted SimHash of ``features`` (feature → positive weight).

    Bit *b* of the result is set when the weights of the features whose hash
    (:func:`feature_hash`) has bit *b* set add up to more than half of all weights — the rule
    of ``simhash.Simhash``.

    >>> simhash_of_features({})
    0
    """
    if not features:
        return 0
    digests = b"".join([feature_hash(f.encode("utf-8", "surrogatepass")) for f in features])
    hashes = np.frombuffer(digests, dtype=">u8").astype(np.uint64)
    weights = np.fromiter(features.values(), dtype=np.int64, count=len(features))
    return _weighted_simhash(hashes, weights)


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
    return text_fingerprint(raw, normalise(html, content_type, policy, host=host))


def binary_fingerprint(raw: bytes) -> Fingerprint:
    """Fingerprint of a binary body whose raw SHA-256 is ``raw``."""
    return Fingerprint(raw, raw, 0, 0, binary=True)


# --- structured records ---------------------------------------------------------------------


def canonical_json(record: Mapping[str, Any]) -> bytes:
    """The canonical JSON of a record: UTF-8, sorted keys, no spaces, NFC strings.

    Numbers: ``int`` as is; ``float`` and ``Decimal`` by their shortest decimal digits in
    ECMAScript ``Number.prototype.toString`` layout (RFC 8785 §3.2.2.3): ``1.0`` → ``1``,
    ``-0.0`` → ``0``, ``0.1`` → ``0.1``, ``1e21`` → ``1e+21``; NaN and infinities raise
    ``ValueError``. Lists and tuples are arrays, mappings (``str`` keys) objects, ``None``
    ``null``. Anything else (sets, bytes, dates, …) raises ``TypeError`` naming its path.

    >>> canonical_json({"b": [1.0, Decimal("2.50"), None], "a": "Cafe\\u0301", "c": -0.0})
    b'{"a":"Caf\\xc3\\xa9","b":[1,2.5,null],"c":0}'
    """
    if not isinstance(record, Mapping):
        raise TypeError(f"$: a record must be a mapping, not {type(record).__name__}")
    parts: list[str] = []
    _encode(record, "$", parts)
    return "".join(parts).encode("utf-8", "surrogatepass")


def fingerprint_record(record: Mapping[str, Any]) -> bytes:
    """SHA-256 of :func:`canonical_json` — a stable hash of fields extracted from a page.

    Key order, ``1`` versus ``1.0``, and composed versus decomposed accents do not change it.

    >>> fingerprint_record({"price": 10, "title": "Café"}) == fingerprint_record(
    ...     {"title": "Cafe\\u0301", "price": 10.0})
    True
    >>> fingerprint_record({"a": 1}).hex()[:16]
    '015abd7f5cc57a2d'
    """
    return hashlib.sha256(canonical_json(record)).digest()


def _encode(value: Any, path: str, out: list[str]) -> None:
    if value is None or value is True or value is False:
        out.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, str):
        out.append(json.dumps(unicodedata.normalize("NFC", value), ensure_ascii=False))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float | Decimal):
        out.append(_number(value, path))
    elif isinstance(value, Mapping):
        items: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{path}: keys must be str, not {type(key).__name__} {key!r}")
            nfc = unicodedata.normalize("NFC", key)
            if nfc in items:
                raise ValueError(f"{path}: keys {key!r} and another are equal after NFC")
            items[nfc] = item
        out.append("{")
        for index, key in enumerate(sorted(items)):
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _encode(items[key], f"{path}.{key}", out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, f"{path}[{index}]", out)
        out.append("]")
    else:
        raise TypeError(f"{path}: cannot fingerprint a {type(value).__name__} ({value!r:.60})")


def _number(value: float | Decimal, path: str) -> str:
    """Shortest decimal digits, laid out as ECMAScript ``Number.prototype.toString`` does."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: {value!r} is not a finite number")
        value = Decimal(repr(value))
    elif not value.is_finite():
        raise ValueError(f"{path}: {value!r} is not a finite number")
    sign, digit_tuple, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    if not digits:
        return "0"
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    point = len(digits) + exponent  # value = 0.<digits> × 10**point
    if 0 < point <= 21:
        text = digits + "0" * exponent if exponent >= 0 else f"{digits[:point]}.{digits[point:]}"
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        text = f"{mantissa}e{point - 1:+d}"
    return ("-" if sign else "") + text


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit SimHashes (0..64).

    >>> hamming(0b1011, 0b0001)
    2
    """
    return ((a ^ b) & 0xFFFF_FFFF_FFFF_FFFF).bit_count()
