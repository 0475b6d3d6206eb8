"""Fingerprints of whole pages: raw, content and SimHash — pure functions, no I/O."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass

from changewatch.fingerprint.decode import is_binary
from changewatch.fingerprint.policy import FingerprintPolicy
from changewatch.fingerprint.regions import Block, PageParts, links_sha256
from changewatch.fingerprint.simhash64 import simhash
from changewatch.fingerprint.text import page_text

__all__ = [
    "EMPTY_SHA256",
    "FINGERPRINT_VERSION",
    "Fingerprint",
    "binary_fingerprint",
    "chrome_hashes",
    "content_sha256",
    "fingerprint",
    "parts_fingerprint",
    "raw_sha256",
    "text_fingerprint",
]

#: Version of the normalisation and SimHash feature rules; bump when either changes.
#: 1: visible text minus script/style/…; 2: also hidden elements, boilerplate regions,
#: volatile stamps, binary bodies hashed raw; 3: words hashed by a polynomial over their code
#: points (vectorised in numpy) instead of blake2b, and word 2-shingles instead of 3-shingles;
#: 4: content and SimHash over the main content only (chrome and outlinks hashed apart), time
#: stamps volatile only as labels, collapsed content (accordions, tab panels) kept.
FINGERPRINT_VERSION = 4

#: SHA-256 of nothing: the chrome and links hashes of a page without chrome or outlinks.
EMPTY_SHA256 = hashlib.sha256(b"").digest()


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The hashes of one page; see the package docstring for what each one covers.

    ``binary`` is true for a body fingerprinted as raw bytes (see :func:`is_binary`).
    ``chrome_sha256``: SHA-256 of the chrome's normalised text; ``links_sha256``: SHA-256 of
    the sorted canonical outlinks (both :data:`EMPTY_SHA256` when there are none).
    ``blocks``: per-block keys and hashes, when asked for (``fingerprint(with_blocks=True)``).
    ``redirect_to``: for a redirect stub (a ``<meta http-equiv="refresh">`` that sends the
    reader to another URL at once, :mod:`~changewatch.fingerprint.refresh`), that URL.
    """

    raw_sha256: bytes
    content_sha256: bytes
    simhash: int
    text_length: int
    version: int = FINGERPRINT_VERSION
    binary: bool = False
    chrome_sha256: bytes = EMPTY_SHA256
    links_sha256: bytes = EMPTY_SHA256
    blocks: tuple[Block, ...] = ()
    redirect_to: str | None = None

    def __post_init__(self) -> None:
        digests = (self.raw_sha256, self.content_sha256, self.chrome_sha256, self.links_sha256)
        if any(len(digest) != 32 for digest in digests):
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
    url: str | None = None,
    template_blocks: Collection[bytes] = (),
    volatile_blocks: Collection[bytes] = (),
    with_blocks: bool = False,
) -> Fingerprint:
    """Fingerprint a page given as ``str`` or ``bytes`` in any encoding.

    ``url`` (the page's URL) resolves relative outlinks; ``template_blocks``,
    ``volatile_blocks`` and ``with_blocks`` are those of
    :func:`~changewatch.fingerprint.text.page_text`. A binary body (:func:`is_binary`) is
    not parsed: its ``content_sha256`` is its raw SHA-256, ``simhash`` and ``text_length``
    are 0 and ``binary`` is true.

    >>> fp = fingerprint("<p>Hello</p>")
    >>> fp.content_sha256 == fingerprint("<div> hello </div><!-- x -->").content_sha256
    True
    >>> a = fingerprint("<nav><a href='/new'>New</a></nav><main><p>Hello</p></main>")
    >>> b = fingerprint("<nav>Home</nav><main><p>Hello</p></main>")
    >>> (a.content_sha256 == b.content_sha256, a.chrome_sha256 == b.chrome_sha256,
    ...  a.links_sha256 == b.links_sha256)
    (True, False, False)
    >>> fingerprint(b"%PDF-1.7 ...").binary
    True
    """
    if not isinstance(html, str | bytes):
        raise TypeError(f"html must be str or bytes, not {type(html).__name__}")
    raw = raw_sha256(html)
    if is_binary(html, content_type):
        return binary_fingerprint(raw)
    parts = page_text(
        html,
        content_type,
        policy,
        host=host,
        url=url,
        template_blocks=template_blocks,
        volatile_blocks=volatile_blocks,
        with_blocks=with_blocks,
    )
    return parts_fingerprint(raw, parts)


def parts_fingerprint(raw: bytes, parts: PageParts) -> Fingerprint:
    """Fingerprint of a page whose raw bytes hashed to ``raw`` and whose texts are ``parts``."""
    chrome, links = chrome_hashes(parts)
    return Fingerprint(
        raw_sha256=raw,
        content_sha256=content_sha256(parts.content),
        simhash=simhash(parts.content),
        text_length=len(parts.content),
        chrome_sha256=chrome,
        links_sha256=links,
        blocks=parts.blocks,
        redirect_to=parts.redirect,
    )


def chrome_hashes(parts: PageParts) -> tuple[bytes, bytes]:
    """The chrome and outlinks SHA-256 of ``parts`` (:data:`EMPTY_SHA256` for none).

    >>> chrome_hashes(page_text("<p>x</p>")) == (EMPTY_SHA256, EMPTY_SHA256)
    True
    """
    chrome = content_sha256(parts.chrome) if parts.chrome else EMPTY_SHA256
    return chrome, links_sha256(parts.links) if parts.links else EMPTY_SHA256


def binary_fingerprint(raw: bytes) -> Fingerprint:
    """Fingerprint of a binary body whose raw SHA-256 is ``raw``."""
    return Fingerprint(raw, raw, 0, 0, binary=True)
