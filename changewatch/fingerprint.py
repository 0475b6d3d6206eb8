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

import numpy as np
from selectolax.lexbor import LexborHTMLParser

__all__ = [
    "FINGERPRINT_VERSION",
    "MAX_FEATURE_WEIGHT",
    "Fingerprint",
    "decode_html",
    "feature_hash",
    "fingerprint",
    "hamming",
    "normalise",
    "raw_sha256",
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
# WHATWG Encoding Standard: these labels mean windows-1252; UTF-16 labels in a meta tag mean UTF-8.
_LABEL_ALIASES = {
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "utf-16": "utf-8",
    "utf-16le": "utf-8",
    "utf-16be": "utf-8",
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
            encoding = _codec(match_bytes.group(1).decode("ascii", "replace"))
    return html.decode(encoding or "utf-8", "replace")


def _codec(label: str) -> str | None:
    """Map a charset label to a Python codec name, or None when unknown."""
    label = label.strip().lower()
    label = _LABEL_ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


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
    text = unicodedata.normalize("NFKC", text).casefold()
    text = unicodedata.normalize("NFKC", text)
    return _WHITESPACE_RE.sub(" ", text).strip()


def simhash_features(text: str) -> dict[str, int]:
    """Weighted SimHash features of normalised text: word 3-shingles and their counts.

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


def feature_hash(feature: bytes) -> bytes:
    """The per-feature hash: 8-byte blake2b, read big-endian as the SimHash bits."""
    return hashlib.blake2b(feature, digest_size=8).digest()


def simhash_of_features(features: dict[str, int]) -> int:
    """64-bit weighted SimHash of ``features`` (feature → positive weight).

    Bit *b* of the result is set when the weights of the features whose hash has bit *b*
    set add up to more than half of all weights — the rule of ``simhash.Simhash``.

    >>> simhash_of_features({})
    0
    """
    if not features:
        return 0
    blake = hashlib.blake2b
    digests = b"".join([blake(f.encode("utf-8"), digest_size=8).digest() for f in features])
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8)).reshape(-1, 64)
    weights = np.fromiter(features.values(), dtype=np.int64, count=len(features))
    sums = weights @ bits
    total = int(weights.sum())
    packed = np.packbits(sums * 2 > total).tobytes()
    return int.from_bytes(packed, "big")


def text_fingerprint(raw: bytes, text: str) -> Fingerprint:
    """Fingerprint of already normalised ``text`` whose raw page hashed to ``raw``."""
    return Fingerprint(
        raw_sha256=raw,
        content_sha256=hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest(),
        simhash=simhash_of_features(simhash_features(text)),
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
