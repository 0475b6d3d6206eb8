"""Limits that keep hostile pages from costing minutes or gigabytes — pure, no I/O.

Shapes a page controls make the HTML parser (lexbor) or the text pipeline superlinear; each
has a check here, run before the costly step:

* **Nesting.** lexbor's tree building costs about the stack's depth per tag.
  :func:`too_deep` sends a page to the tag-stripping fallback when the model of
  :mod:`~changewatch.fingerprint.nesting` says it nests past :data:`MAX_NESTING`, or its
  stack walks would cost more than :data:`NESTING_WORK_PER_TAG` levels per tag on average.
* **Elements the page does not spell.** lexbor rebuilds every open formatting element of
  distinct attributes in each new paragraph (§13.2.4.3: 1,000 ``<b id=…>`` and 17,000
  ``<p>x``, 78 KB, made 17 million elements: 21.5 s, 6.2 GB), so the fallback reads a page
  the model says may rebuild more than :data:`MAX_REBUILT_PER_TAG` elements a tag.
* **Quadratic corners of lexbor.** Options in a ``select`` (each new one costs about the
  ones before it) and repeated ``<html>``/``<body>`` tags (each one's attributes are merged
  into the one element): past :data:`MAX_OPTIONS` and :data:`MAX_ROOT_TAGS` such tags the
  fallback reads the page.
* **Attributes.** lexbor compares each attribute with the element's earlier ones (duplicates
  are dropped, HTML §13.2.5.33), so ``n`` attributes on one element cost ``n²`` (90,000: 30 s;
  elements of 4,096 attributes filling 10 MiB: 13.8 s), and each new attribute or tag name
  costs as many as the page has seen (256,000 distinct names: 52 s). A page with an element
  of more than :data:`MAX_ATTRIBUTES` attributes, or more than :data:`MAX_NAMES` distinct
  attribute or tag names, is refused with :class:`PageTooComplexError`. Pages the model does
  not read are bounded by :func:`~changewatch.fingerprint.tagscan.scan` (numpy, no tokenizer
  state: every ``<`` is a possible tag); only what its bounds cannot clear is read further.
* **NFKC expansion.** One character can normalise to 18 (U+FDFA). :func:`normalise_bounded`
  normalises long text in pieces and refuses it once its normal form passes
  :data:`MAX_TEXT_EXPANSION` times its length (plus :data:`TEXT_EXPANSION_SLACK`) or
  :data:`MAX_TEXT_CHARS`, so memory stays a small multiple of the page.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from changewatch.errors import PageTooComplexError
from changewatch.fingerprint.nesting import MAX_NESTING, Model
from changewatch.fingerprint.tagscan import (
    NamedTags,
    TagScan,
    formatting_ends,
    long_tag_at,
    named_tags,
    names_of,
    scan,
)

__all__ = [
    "MAX_ADOPTIONS",
    "MAX_ATTRIBUTES",
    "MAX_NAMES",
    "MAX_NAMES_FEW_TAGS",
    "MAX_NESTING",
    "MAX_OPTIONS",
    "MAX_REBUILT_PER_TAG",
    "MAX_ROOT_TAGS",
    "MAX_TEXT_CHARS",
    "MAX_TEXT_EXPANSION",
    "NESTING_WORK_PER_TAG",
    "TEXT_EXPANSION_SLACK",
    "check_names",
    "normalise_bounded",
    "too_deep",
]

#: An element with more attributes than this (duplicates counted) is refused. Elements of
#: 256 attributes filling 10 MiB parse in 1.2 s; the most on one element in the shared
#: corpus is 70.
MAX_ATTRIBUTES = 256
#: A page of more than :data:`MAX_NESTING` ``<`` with more distinct attribute names, or
#: more distinct tag names, than this is refused: lexbor's cost per new name grows with the
#: names seen (58,000 took 3.9 s at 1 MiB). The shared corpus has at most 198 and 72.
MAX_NAMES = 8192
#: On pages of fewer ``<`` (whose tags are not all read), the limit on distinct attribute
#: names: 16 a tag cannot pass it, so only tags of more are read to check it.
MAX_NAMES_FEW_TAGS = 65536
#: The stack walks a page may cost: past ``NESTING_WORK_PER_TAG`` levels per tag (start or
#: end) on average (plus 16 Mi levels), the fallback reads it (4,000-deep blocks filling
#: 10 MiB took 16 s; 2,000 open spans then ``</x>`` filling 10 MiB, 31 s). The shared corpus
#: averages 22.0 at most.
NESTING_WORK_PER_TAG = 256
_NESTING_WORK_SLACK = 1 << 24
#: Normalised text may be at most this many times as long as the visible text it comes
#: from, plus :data:`TEXT_EXPANSION_SLACK` characters (real text grows by a few percent:
#: ligatures, fractions, compatibility forms), and at most :data:`MAX_TEXT_CHARS`.
MAX_TEXT_EXPANSION = 2
TEXT_EXPANSION_SLACK = 1 << 16
#: An absolute cap on normalised text, in characters (as many as the default page limit,
#: 10 MiB, has bytes).
MAX_TEXT_CHARS = 10 * 1024 * 1024

#: The stack walks lexbor may cost on a page of ``c`` ``<`` and ``s`` start tags are at most
#: ``(2c + 1) × (2s + 3)`` levels (see :func:`too_deep`); pages under the bound of a page of
#: :data:`MAX_NESTING` ``<`` (which needs no model) need none either.
_WORK_BOUND = (2 * MAX_NESTING + 1) * (2 * MAX_NESTING + 3)
#: Runs of the adoption agency that move elements (see :class:`Model`) a page may cost: past
#: them, the fallback reads it (1,024 on 2,000 open ``<b>`` and ``<div>``: 0.4 s to parse).
#: A page of no more formatting end tags than this is not modelled for them; the shared
#: corpus has at most 4,242 such end tags (few of them misnested).
MAX_ADOPTIONS = 1024
#: A page of more ``<option`` start tags than this is read by the fallback: lexbor's select
#: handling costs about the options before each new one (8,000 in one ``select``: 0.9 s;
#: with ``selected``, 4.4 s; 58,000 filling 1 MiB: 65 s). The shared corpus has at most 337.
MAX_OPTIONS = 2048
#: A page of more ``<html`` and ``<body`` start tags than this is read by the fallback:
#: lexbor merges each one's attributes into the one element, comparing them with those it
#: holds (128 ``<body>`` of 256 distinct attributes: 9.9 s, 535 KB). The corpus has at most 7.
MAX_ROOT_TAGS = 16
#: Elements the parser may create by reconstructing formatting elements (see
#: :class:`~changewatch.fingerprint.nesting.Model`): past this many per tag on average (plus
#: :data:`_REBUILT_SLACK`) the fallback reads the page, so what a page makes stays a small
#: multiple of what it spells (300 open ``<b id=…>`` and 1,600 ``<p>x``, 9 KB, made 480,000:
#: 1.8 s). The model's estimate on the corpus pages is at most 0.91 a tag (11,729 on a page).
#: A page is modelled for it when its formatting start tags beyond their names' end tags
#: (``unclosed``), each rebuilt at most twice a tag, could pass it (corpus: 99% of pages 0).
MAX_REBUILT_PER_TAG = 2
_REBUILT_SLACK = 1 << 16
#: What trying the attribute grammar at every tag start of the spans :func:`scan` flags may
#: cost, in bytes read, past which the page is read once by the model instead: ``4 ×`` the
#: page plus 1 MiB (the corpus pages read 0.95 × theirs at most).
_WIDE_COST_PER_BYTE = 4
_WIDE_COST_SLACK = 1 << 20


def too_deep(source: str | bytes, count: int) -> bool:
    """Whether the parser must not build ``source``'s tree (it holds ``count`` ``<``):
    it holds more than :data:`MAX_OPTIONS` ``<option`` or :data:`MAX_ROOT_TAGS` ``<html``
    and ``<body`` start tags, or the model says it nests past :data:`MAX_NESTING`, its stack
    walks would cost too much or its formatting elements would be rebuilt too often.
    Raises :class:`PageTooComplexError` for a page over :data:`MAX_ATTRIBUTES` or
    :data:`MAX_NAMES` (checked by :func:`check_names` too).

    A page of ``s`` start tags has a stack (open elements, implied rows and sections,
    reconstructed formatting elements) of at most ``2s + 3``, and lexbor walks it at most
    once a token (its ``c`` ``<`` make at most ``2c + 1`` tokens, text runs included); so
    does every prefix of a page. Token by token, then, the walks cost at most ``walks`` =
    ``3 + Σₖ 2 (2 sₖ + 3)`` levels, ``sₖ`` the start tags up to and with the ``k``-th ``<``
    (each ``<`` begins a tag and a text run at most) — about half ``(2c + 1) × (2s + 3)``
    when the start tags are spread through the page, as on real ones. A page of at most
    :data:`MAX_NESTING` ``<``, or whose ``walks`` are at most ``(2c + 1) × (2s + 3)`` of a
    page of :data:`MAX_NESTING` ``<`` (:data:`_WORK_BOUND`), and whose tags (start and end,
    at most :data:`MAX_NAMES`) cannot bring more names than :func:`check_names` allows,
    costs lexbor no more stack walks than such a page: only its names are checked (5,792
    nested ``<div>``, the deepest such page, parse in about 40 ms). The model reads every
    other page. ``s`` and the tag count are those of
    :func:`~changewatch.fingerprint.tagscan.named_tags`: every ``<`` followed by a letter (or
    ``/`` and a letter), in comments and scripts too, so never fewer than the tokenizer reads.
    A page is modelled too when its formatting start tags beyond their names' end tags
    (``unclosed``), each rebuilt before every token, could pass the rebuild limit (an
    estimate, not a bound: an end tag whose element is out of scope removes nothing; the
    model, which reads the page, counts every open one).

    >>> too_deep("<div></x>" * 5000, 10000), too_deep("<p>x</p>" * 5000, 10000)
    (True, False)
    """
    data = _as_bytes(source)
    named = None
    bounded = count <= MAX_NESTING
    if not bounded:
        named = named_tags(data)
        if _root_corners(named):
            return True
        bounded = named.walks <= _WORK_BOUND and named.tags <= MAX_NAMES
    if bounded:
        found = scan(data, MAX_ATTRIBUTES, MAX_NAMES_FEW_TAGS)
        _check_found(source, data, found)
        named = named or names_of(data, found)
        if _root_corners(named):
            return True
        adoptions = count > MAX_ADOPTIONS and formatting_ends(data, found) > MAX_ADOPTIONS
        if not adoptions and not _rebuilding(named, count):
            return False
    model = Model(
        MAX_NESTING,
        max_attributes=MAX_ATTRIBUTES,
        max_names=MAX_NAMES,
        work_per_push=NESTING_WORK_PER_TAG,
        work_slack=_NESTING_WORK_SLACK,
        max_adoptions=MAX_ADOPTIONS,
        rebuilt_per_tag=MAX_REBUILT_PER_TAG,
        rebuilt_slack=_REBUILT_SLACK,
    )
    model.run(source)
    return model.deepest > MAX_NESTING or model.too_costly


def _root_corners(named: NamedTags) -> bool:
    """Whether lexbor's select or root-tag handling would be quadratic on the page."""
    return named.options > MAX_OPTIONS or named.roots > MAX_ROOT_TAGS


def _rebuilding(named: NamedTags, count: int) -> bool:
    """Whether the page's formatting elements could be rebuilt past the limit: each of its
    ``2c + 1`` tokens may rebuild every unclosed one (an estimate where each end tag removes
    an element of its name; the model counts what stays open)."""
    tokens = 2 * count + 1
    return 2 * named.unclosed * tokens > MAX_REBUILT_PER_TAG * tokens + _REBUILT_SLACK


def check_names(source: str | bytes, count: int) -> None:
    """Raise :class:`PageTooComplexError` if a tag of ``source`` has more than
    :data:`MAX_ATTRIBUTES` attributes or the page more than :data:`MAX_NAMES_FEW_TAGS`
    distinct attribute names, counted as the tokenizer reads them (HTML §13.2.5.32-39).
    (``count``, the page's number of ``<``, is no longer needed; kept for callers.)

    :func:`~changewatch.fingerprint.tagscan.scan` bounds, in C, the attributes any tag may
    hold and all tags together; only when those bounds pass a limit is the page read further:
    the spans where a tag may be wider than :data:`MAX_ATTRIBUTES` by the attribute grammar
    tried at each of their ``<`` (:func:`~changewatch.fingerprint.tagscan.long_tag_at`), and,
    when one is found (perhaps in a script) or the names may pass the limit, the whole page as
    the tokenizer reads it, every name counted, refused if it is over.

    >>> check_names("<p " + "a=1 " * 256 + ">", 1)
    >>> check_names("<p " + "a=1 " * 257 + ">", 1)
    Traceback (most recent call last):
    ...
    changewatch.errors.PageTooComplexError: an element has more than 256 attributes (257): ...
    """
    del count
    data = _as_bytes(source)
    _check_found(source, data, scan(data, MAX_ATTRIBUTES, MAX_NAMES_FEW_TAGS))


def _as_bytes(source: str | bytes) -> bytes:
    """``source`` as bytes: a ``str`` in UTF-8 (``<``, ``>``, quotes, ``=``, ``/`` and
    whitespace are single bytes there, and no other character holds one of them)."""
    return source if isinstance(source, bytes) else source.encode("utf-8", "surrogatepass")


def _check_found(source: str | bytes, data: bytes, found: TagScan) -> None:
    """:func:`check_names` on ``source`` (``data`` in bytes), given ``data``'s scan."""
    if found.attributes <= MAX_NAMES_FEW_TAGS:
        if not found.wide:
            return
        budget = _WIDE_COST_PER_BYTE * len(data) + _WIDE_COST_SLACK
        if not long_tag_at(data, found.wide, MAX_ATTRIBUTES, budget):
            return
    Model(1 << 62, max_attributes=MAX_ATTRIBUTES, max_names=MAX_NAMES_FEW_TAGS).run(source)


def normalise_bounded(
    text: str,
    fold: Callable[[str], str],
    *,
    piece: int = 1 << 16,
    limit: int | None = None,
) -> str:
    """``" ".join(fold(text).split())``, with ``fold`` applied a piece of about ``piece``
    characters at a time, and :class:`PageTooComplexError` as soon as the result passes
    ``limit`` characters (default: :data:`MAX_TEXT_EXPANSION` × ``len(text)`` +
    :data:`TEXT_EXPANSION_SLACK`, at most :data:`MAX_TEXT_CHARS`).

    ``fold`` is NFKC and case folding: pieces are cut before a character that no
    normalisation joins to what stands before it (a starter, whose decomposition starts with
    a starter, that is the second half of no composition), so pieces fold as the whole does.

    >>> normalise_bounded("Ab  C", str.lower, piece=1)
    'ab c'
    >>> normalise_bounded("\\ufdfa" * 4, lambda t: unicodedata.normalize("NFKC", t), limit=30)
    Traceback (most recent call last):
    ...
    changewatch.errors.PageTooComplexError: the normalised text passes 30 characters ...
    """
    if limit is None:
        limit = min(MAX_TEXT_CHARS, MAX_TEXT_EXPANSION * len(text) + TEXT_EXPANSION_SLACK)
    parts: list[str] = []
    size = 0
    start = 0
    while start < len(text):
        stop = _boundary(text, start + piece)
        part = fold(text[start:stop])
        start = stop
        size += len(part)
        if size > limit:
            raise PageTooComplexError("text", limit, size)
        parts.append(part)
    return _SPACES.sub(" ", "".join(parts)).strip()


# str.split() and re's \s agree on what whitespace is (both use Py_UNICODE_ISSPACE).
_SPACES = re.compile(r"\s+")


def _boundary(text: str, at: int) -> int:
    """The first index from ``at`` before which ``text`` may be cut (or its length)."""
    end = len(text)
    while at < end:
        char = text[at]
        if char.isascii() or _safe_start(char):
            return at
        at += 1
    return end


def _safe_start(char: str) -> bool:
    """Whether nothing before ``char`` can compose or reorder with it or what it
    normalises and folds to."""
    second = _second_halves()
    for form in (char, unicodedata.normalize("NFKD", char), char.casefold()):
        first = unicodedata.normalize("NFKD", form)[:1] or form[:1]
        if first and (unicodedata.combining(first) or ord(first) in second):
            return False
    return True


_SECOND: set[int] = set()


def _second_halves() -> set[int]:
    """Every code point that is the second half of a canonical composition (from the
    decomposition table, built once on first need: a third of a second), and the Hangul
    vowel and trailing jamo (composed algorithmically, Unicode §3.12)."""
    if not _SECOND:
        for code in range(0x110000):
            mapping = unicodedata.decomposition(chr(code))
            if mapping and mapping[0] != "<":
                parts = mapping.split()
                if len(parts) == 2:
                    _SECOND.add(int(parts[1], 16))
        _SECOND.update(range(0x1161, 0x1176), range(0x11A8, 0x11C3))
    return _SECOND
