"""Content fingerprints of HTML pages, and of extracted records — pure functions, no I/O.

A :class:`Fingerprint` has these hashes, cheapest first, matching the order in which
``should_parse`` consults them:

``raw_sha256``
    SHA-256 of the bytes as fetched (``str`` input is UTF-8 encoded). Equal raw bytes mean
    an unchanged page without parsing any HTML.
``content_sha256``
    SHA-256 of the normalised text of the page's *main content* (:func:`normalise`,
    :func:`page_text`): the page decoded (BOM, HTTP ``Content-Type`` charset, ``<meta
    charset>``, else UTF-8 with replacement), parsed with selectolax's lexbor backend;
    ``script``/``style``/``noscript``/``template``/``svg``/``iframe``/``object``, comments,
    hidden tokens (collapsed content — accordions, tab panels — is kept) and what a
    :class:`FingerprintPolicy` ignores dropped; the rest cut into blocks, each main content or
    chrome (:mod:`~changewatch.fingerprint.regions`); Unicode NFKC, case-folded, whitespace
    collapsed, and volatile stamps removed where they stand as labels
    (:mod:`~changewatch.fingerprint.volatile`). A re-render whose content did not change, or
    whose chrome alone did, has the same ``content_sha256``.
``chrome_sha256``, ``links_sha256``
    SHA-256 of the chrome's normalised text (navigation, banners, footers, asides, dialogs,
    cookie notices, link lists) and of the page's canonicalised outlinks.
``simhash``
    A 64-bit SimHash (Charikar 2002) of the main content's text, so that small edits land a
    few bits away from the previous version: weighted word 2-shingles, computed in numpy
    (:mod:`changewatch.fingerprint.simhash64` documents the features and the hash), equal to
    ``simhash.Simhash(features, hashfunc=feature_hash).value`` for the same features.

Binary bodies (PDF, PNG, JPEG, GIF, WebP, ZIP, gzip by magic bytes, or a non-HTML media type)
are not parsed: ``content_sha256`` is the raw SHA-256, ``simhash`` 0 and ``binary`` true.

:data:`FINGERPRINT_VERSION` names the normalisation and feature rules; it is stored with
every snapshot (:mod:`~changewatch.fingerprint.legacy` keeps version 3's content hash, so
that stored rows move to version 4 without a spurious change). :func:`fingerprint_record`
(:mod:`changewatch.fingerprint.records`) hashes structured data as canonical JSON.

The package's modules: :mod:`~changewatch.fingerprint.decode` (bytes to text, binary
bodies), :mod:`~changewatch.fingerprint.policy` (what is noise, per host),
:mod:`~changewatch.fingerprint.tree` (what is never text, where the region markers are),
:mod:`~changewatch.fingerprint.blocks` and :mod:`~changewatch.fingerprint.walk` (the blocks),
:mod:`~changewatch.fingerprint.regions` (main content, chrome, outlinks),
:mod:`~changewatch.fingerprint.text` (the normalised texts),
:mod:`~changewatch.fingerprint.volatile` (clocks and ages),
:mod:`~changewatch.fingerprint.noise` (learning a host's noise from its re-fetches),
:mod:`~changewatch.fingerprint.templates` (what a page shows of its host's template),
``simhash64`` (the SimHash), ``records``, ``legacy`` and
:mod:`~changewatch.fingerprint.page` (the fingerprint of a page).
"""

from changewatch.fingerprint.decode import decode_html, is_binary
from changewatch.fingerprint.noise import NoiseRule, learn_noise
from changewatch.fingerprint.page import (
    EMPTY_SHA256,
    FINGERPRINT_VERSION,
    Fingerprint,
    binary_fingerprint,
    chrome_hashes,
    content_sha256,
    fingerprint,
    parts_fingerprint,
    raw_sha256,
    text_fingerprint,
)
from changewatch.fingerprint.policy import (
    BOILERPLATE_TAGS,
    DEFAULT_POLICY,
    DROPPED_TAGS,
    HIDDEN_SELECTOR,
    FingerprintPolicy,
)
from changewatch.fingerprint.records import canonical_json, fingerprint_record
from changewatch.fingerprint.regions import Block, PageParts, block_shape
from changewatch.fingerprint.simhash64 import (
    MAX_FEATURE_WEIGHT,
    feature_hash,
    hamming,
    simhash,
    simhash_features,
    simhash_of_features,
)
from changewatch.fingerprint.text import (
    DEFAULT_MAX_NESTING,
    normalise,
    normalise_markup,
    normalise_text,
    page_text,
    strip_volatile,
)
from changewatch.fingerprint.volatile import (
    DEFAULT_VOLATILE_PATTERNS,
    LABEL_WORDS,
    strip_label_stamps,
)

__all__ = [
    "BOILERPLATE_TAGS",
    "DEFAULT_MAX_NESTING",
    "DEFAULT_POLICY",
    "DEFAULT_VOLATILE_PATTERNS",
    "DROPPED_TAGS",
    "EMPTY_SHA256",
    "FINGERPRINT_VERSION",
    "HIDDEN_SELECTOR",
    "LABEL_WORDS",
    "MAX_FEATURE_WEIGHT",
    "Block",
    "Fingerprint",
    "FingerprintPolicy",
    "NoiseRule",
    "PageParts",
    "binary_fingerprint",
    "block_shape",
    "canonical_json",
    "chrome_hashes",
    "content_sha256",
    "decode_html",
    "feature_hash",
    "fingerprint",
    "fingerprint_record",
    "hamming",
    "is_binary",
    "learn_noise",
    "normalise",
    "normalise_markup",
    "normalise_text",
    "page_text",
    "parts_fingerprint",
    "raw_sha256",
    "simhash",
    "simhash_features",
    "simhash_of_features",
    "strip_label_stamps",
    "strip_volatile",
    "text_fingerprint",
]
