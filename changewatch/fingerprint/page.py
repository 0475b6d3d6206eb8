"""Fingerprints of whole pages: raw, content and SimHash — pure functions, no I/O."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from changewatch.fingerprint.decode import is_binary
from changewatch.fingerprint.policy import FingerprintPolicy
from changewatch.fingerprint.simhash64 import simhash
from changewatch.fingerprint.text import normalise_markup

__all__ = [
    "FINGERPRINT_VERSION",
    "Fingerprint",
    "binary_fingerprint",
    "content_sha256",
    "fingerprint",
    "raw_sha256",
    "text_fingerprint",
]

#: Version of the normalisation and SimHash feature rules; bump when either changes.
#: 1: visible text minus script/style/…; 2: also hidden elements, boilerplate regions,
#: volatile stamps, binary bodies hashed raw; 3: words hashed by a polynomial over their code
#: points (vectorised in numpy) instead of blake2b, and word 2-shingles instead of 3-shingles.
FINGERPRINT_VERSION = 3


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
