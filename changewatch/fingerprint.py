"""Content fingerprints of HTML pages — pure functions, no I/O.

A :class:`Fingerprint` has three hashes, cheapest first, matching the order in which
``should_parse`` consults them:

``raw_sha256``
    SHA-256 of the bytes as fetched (``str`` input is UTF-8 encoded). Equal raw bytes mean
    an unchanged page without parsing any HTML.
``content_sha256``
    SHA-256 of the *normalised text*: the page decoded (BOM, HTTP ``Content-Type`` charset,
    ``<meta charset>``, else UTF-8 with replacement), parsed with selectolax's lexbor backend,
    ``script``/``style``/``noscript``/``template``/``svg``/``iframe`` and comments dropped,
    visible text only, Unicode NFKC, case-folded, whitespace collapsed. A re-render whose
    visible text did not change has the same ``content_sha256``.
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

:data:`FINGERPRINT_VERSION` names the normalisation and feature rules; it is stored with
every snapshot.
"""

from __future__ import annotations

import codecs
import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from selectolax.lexbor import LexborHTMLParser

__all__ = [
    "FINGERPRINT_VERSION",
    "MAX_FEATURE_WEIGHT",
    "Fingerprint",
    "content_sha256",
    "decode_html",
    "feature_hash",
    "fingerprint",
    "hamming",
    "normalise",
    "raw_sha256",
    "simhash",
    "simhash_features",
    "simhash_of_features",
    "text_fingerprint",
]

#: Version of the normalisation and SimHash feature rules; bump when either changes.
FINGERPRINT_VERSION = 1

#: Cap on a SimHash feature's weight (its occurrence count in the page).
MAX_FEATURE_WEIGHT = 255

#: Elements whose content is never visible text.
DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "object")

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


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The hashes of one page; see the module docstring for what each one covers."""

    raw_sha256: bytes
    content_sha256: bytes
    simhash: int
    text_length: int
    version: int = FINGERPRINT_VERSION

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


def normalise(html: str | bytes, content_type: str | None = None) -> str:
    """Return the normalised visible text of a page (see the module docstring).

    >>> normalise("<p>Hello,\\n  <b>World</b></p><script>x=1</script><!-- c -->")
    'hello, world'
    """
    tree = LexborHTMLParser(decode_html(html, content_type))
    tree.strip_tags(list(DROPPED_TAGS))
    root = tree.root
    text = root.text(separator=" ") if root is not None else ""
    return normalise_text(text)


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


def fingerprint(html: str | bytes, content_type: str | None = None) -> Fingerprint:
    """Fingerprint a page given as ``str`` or ``bytes`` in any encoding.

    >>> fp = fingerprint("<p>Hello</p>")
    >>> fp.content_sha256 == fingerprint("<div> hello </div><!-- x -->").content_sha256
    True
    """
    if not isinstance(html, str | bytes):
        raise TypeError(f"html must be str or bytes, not {type(html).__name__}")
    return text_fingerprint(raw_sha256(html), normalise(html, content_type))


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit SimHashes (0..64).

    >>> hamming(0b1011, 0b0001)
    2
    """
    return ((a ^ b) & 0xFFFF_FFFF_FFFF_FFFF).bit_count()
