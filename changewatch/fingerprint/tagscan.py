"""Upper bounds on a page's tags and attributes from a few numpy passes — pure, no I/O; for
the limits of :mod:`~changewatch.fingerprint.guard`.

Nothing here tracks the tokenizer's state (data, comments, scripts, attribute values):
every ``<`` is taken for where a tag may start, so each count is at least what the tokenizer
reads, whatever the page's state. The one place a tag's extent matters, where a quoted
attribute value holding ``>`` carries a tag past that ``>``, is over-approximated
(see :func:`scan`). Only what a bound cannot clear is read exactly, by the grammar regex of
:mod:`~changewatch.fingerprint.attributes` tried at every possible tag start (never a
sequential scan that a quote in a script could knock out of step), or by the caller's model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from changewatch.fingerprint.attributes import ATTRIBUTE, WS

__all__ = [
    "NamedTags",
    "TagScan",
    "formatting_ends",
    "long_tag_at",
    "named_tags",
    "names_of",
    "scan",
]

_LT, _GT, _DQUOTE, _SQUOTE, _SLASH, _EQUALS = 0x3C, 0x3E, 0x22, 0x27, 0x2F, 0x3D
#: The formatting elements (HTML §13.2.4.3), whose end tags run the adoption agency.
_FORMATTING: tuple[bytes, ...] = (b"a", b"b", b"i", b"s", b"u", b"big", b"code", b"em")
_FORMATTING += (b"font", b"nobr", b"small", b"strike", b"strong", b"tt")


@dataclass(frozen=True, slots=True)
class TagScan:
    """What :func:`scan` found: ``starts`` (``<`` and a letter: where a start tag may
    begin), ``tags`` (that, plus ``</`` and a letter), ``attributes`` (at least as many
    attributes as all the page's tags hold), and ``wide``: the spans ``(start, stop)`` of the
    page in which a tag may hold more than the ``widest`` attributes asked for (a tag outside
    them cannot). ``end_tags``: where each ``</`` and a letter stands (for
    :func:`formatting_ends`)."""

    starts: int
    tags: int
    attributes: int
    wide: tuple[tuple[int, int], ...]
    end_tags: npt.NDArray[np.intp] = field(compare=False, repr=False)
    #: Where each ``<`` and a letter stands (for :func:`names_of`).
    start_tags: npt.NDArray[np.intp] = field(compare=False, repr=False)


def scan(data: bytes, widest: int, most: int) -> TagScan:
    """Bound ``data``'s tags and attributes (see :class:`TagScan`), flagging the spans where
    a tag may hold more than ``widest`` attributes. The cheaper bound of lengths is kept
    unless ``attributes`` passes ``most`` with it.

    *Where a tag may end.* A tag ends at its first ``>`` outside a quoted attribute value
    (§13.2.5.32-39): a tag name, an attribute name and an unquoted value hold no ``>``. A
    value is quoted when its ``"`` (``'``) comes in the before-attribute-value state, after
    ``=`` and whitespace; it runs to the next ``"`` (``'``). So a ``>`` inside a ``"`` value
    has as its last ``"`` before it the value's opening quote, which follows ``=`` (skipping
    whitespace). A ``>`` is *soft* when its last ``"`` or its last ``'`` follows ``=``, ``=``
    and one byte of at most 0x20, or two such bytes (more whitespace is taken for ``=``; a
    ``>`` with no quote before it may be taken as soft: more soft ``>``, never fewer), else
    *hard*: no tag, wherever it starts, runs past a hard ``>``. Cut at the hard ``>``, the
    page falls into *groups*; every tag lies in one, from a ``<`` followed by a letter or
    ``/`` and a letter.

    *How many attributes.* Each attribute is a name of at least one character after a
    separator (whitespace, ``/``, or the closing quote of the value before; the first one's
    ends the tag name), so a tag of ``k`` attributes spans at least ``2k + 2`` bytes (``<``
    and its name, one character at least) and holds ``k`` separator bytes (whitespace,
    ``/``, ``"``, ``'``), each its own. The tags of a group, from its first possible tag
    start to its end (``L`` bytes, ``S`` separator bytes), do not overlap: together they hold
    at most ``min((L - 2) // 2, S)`` attributes (``S`` counted only when the lengths alone
    pass ``most``: a pass more over the page). ``attributes`` sums that over
    the groups; groups whose bound passes ``widest`` are ``wide``.

    >>> found = scan(b'<p a=1 b="x>y">text</p><br>', 16, 1000)
    >>> found.starts, found.tags, found.attributes, found.wide
    (2, 3, 8, ())
    >>> scan(b'<b x=">">x</b>' + b'<p' + b' a' * 40 + b'>', 16, 1000).wide
    ((14, 97),)
    """
    page = np.frombuffer(data, dtype=np.uint8)
    size = len(page)
    marks = np.flatnonzero(_any_of(page, (_LT, _GT, _DQUOTE, _SQUOTE)))
    kinds = page[marks]
    opens = marks[kinds == _LT]
    start, end_tags, tag_starts = _tag_starts(page, opens)
    if not len(tag_starts):
        return TagScan(0, 0, 0, (), end_tags, opens[start])
    hard = _hard_ends(page, marks, kinds)
    # Groups: (hard[i - 1], hard[i]], and after the last hard ">" to the end of the page; only
    # those holding a possible tag start, from the first one.
    firsts = np.empty(len(hard) + 1, dtype=np.intp)
    firsts[0] = 0
    firsts[1:] = hard + 1
    stops = np.empty(len(hard) + 1, dtype=np.intp)
    stops[:-1] = hard
    stops[-1] = size - 1
    index = np.searchsorted(tag_starts, firsts)
    first = tag_starts[np.minimum(index, len(tag_starts) - 1)]
    keep = (first >= firsts) & (first <= stops)
    first, stops = first[keep], stops[keep]
    bound = (stops - first - 1) // 2  # (L - 2) // 2, L = stop - first + 1 >= 2
    if int(bound.sum()) > most:
        bound = np.minimum(bound, _separators(page, first, stops))
    wide = np.flatnonzero(bound > widest)
    return TagScan(
        starts=int(np.count_nonzero(start)),
        tags=len(tag_starts),
        attributes=int(bound.sum()),
        wide=tuple((int(first[i]), int(stops[i]) + 1) for i in wide),
        end_tags=end_tags,
        start_tags=opens[start],
    )


def _tag_starts(
    page: npt.NDArray[np.uint8], opens: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """For the ``<`` of ``page`` at ``opens``: which are followed by a letter; where those
    followed by ``/`` and a letter stand; where both kinds stand."""
    last = max(len(page) - 1, 0)
    following = _CLASS[page[np.minimum(opens + 1, last)]]
    start = following == _LETTER
    slashed = np.flatnonzero(following == _SLASH)
    ending = slashed[_CLASS[page[np.minimum(opens[slashed] + 2, last)]] == _LETTER]
    either = start.copy()
    either[ending] = True
    return start, opens[ending], opens[either]


_LETTER = 1
#: Per byte: _LETTER for an ASCII letter, the byte itself for "/", else 0.
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[np.r_[0x41:0x5B, 0x61:0x7B]] = _LETTER
_CLASS[_SLASH] = _SLASH
_SPACE, _EQUAL = 1, 2
#: Per byte: _SPACE for one of at most 0x20 (HTML's whitespace and more), _EQUAL for "=".
_BEFORE = np.zeros(256, dtype=np.uint8)
_BEFORE[: 0x20 + 1] = _SPACE
_BEFORE[_EQUALS] = _EQUAL


def _any_of(page: npt.NDArray[np.uint8], values: tuple[int, ...]) -> npt.NDArray[np.bool_]:
    """Where ``page`` holds one of ``values``, in two arrays of the page's size (each
    comparison written into the second: fresh arrays per operation cost a quarter more)."""
    found: npt.NDArray[np.bool_] = page == values[0]
    scratch = np.empty_like(found)
    for value in values[1:]:
        np.equal(page, value, out=scratch)
        found |= scratch
    return found


def _separators(
    page: npt.NDArray[np.uint8], first: npt.NDArray[np.intp], stops: npt.NDArray[np.intp]
) -> npt.NDArray[np.intp]:
    """The separator bytes (at most 0x20, ``/``, ``"``, ``'``) of ``page`` in each span
    ``first[i]`` to ``stops[i]`` (included; the spans ordered, apart)."""
    separator = np.empty(len(page) + 1, dtype=np.bool_)  # each span's end + 1 indexable
    np.less_equal(page, 0x20, out=separator[:-1])
    separator[:-1] |= _any_of(page, (_SLASH, _DQUOTE, _SQUOTE))
    separator[-1] = False
    edges = np.empty(2 * len(first), dtype=np.intp)
    edges[0::2] = first
    edges[1::2] = stops + 1
    # Sums in 32 bits (a page of 2 GiB at most; 10 MiB is the default limit): no larger
    # array than the page is made (a running sum of 32 bits a byte was slower, on large pages).
    counts: npt.NDArray[np.intp] = np.add.reduceat(separator.view(np.uint8), edges, dtype=np.int32)[
        0::2
    ]
    return counts


def _hard_ends(
    page: npt.NDArray[np.uint8], marks: npt.NDArray[np.intp], kinds: npt.NDArray[np.uint8]
) -> npt.NDArray[np.intp]:
    """The positions of the hard ``>`` of ``page`` (see :func:`scan`); ``marks`` are the
    positions of its ``<``, ``>``, ``"`` and ``'``, ``kinds`` those bytes. (An index past
    the page's start wraps to its end: a quote there is taken as opening or not by other
    bytes, which can only make a ``>`` soft that is not: the quote opens nothing.)"""
    ends: npt.NDArray[np.intp] = marks[kinds == _GT]
    soft = np.zeros(len(ends), dtype=np.bool_)
    for quote in (_DQUOTE, _SQUOTE):
        quotes = marks[kinds == quote]
        if not len(quotes) or not len(ends):
            continue
        # The last such quote before each ">" (none: the page's last quote, after it).
        at = quotes[np.searchsorted(quotes, ends) - 1]
        one = _BEFORE[page[at - 1]]
        opening = one == _EQUAL
        spaced = np.flatnonzero(one == _SPACE)  # after whitespace: look further back
        if len(spaced):
            two = _BEFORE[page[at[spaced] - 2]]
            three = _BEFORE[page[at[spaced] - 3]]
            opening[spaced] = (two == _EQUAL) | ((two == _SPACE) & (three != 0))
        soft |= opening
    hard: npt.NDArray[np.intp] = ends[~soft]
    return hard


def formatting_ends(data: bytes, found: TagScan) -> int:
    """How many ``</`` of ``data`` (``found`` by :func:`scan`) are followed by a formatting
    element's name (any case) and whitespace, ``/`` or ``>``, wherever they stand: at least
    the end tags of formatting elements the tokenizer reads (the bytes after the page's end
    are read as its last)."""
    ends = found.end_tags
    if not len(ends):
        return 0
    page = np.frombuffer(data, dtype=np.uint8)
    window = page[np.minimum(ends[:, None] + _NAME, len(page) - 1)]
    delimiter = _DELIMITER[window]
    length = delimiter.argmax(axis=1)  # the name's length, if a delimiter follows it
    keys = window.view("<u8")[:, 0] | np.uint64(0x2020202020202020)
    named = delimiter[np.arange(len(ends)), length]
    key = keys & _MASKS[length]
    known = _NAMES[np.minimum(np.searchsorted(_NAMES, key), len(_NAMES) - 1)] == key
    return int(np.count_nonzero(named & known))


@dataclass(frozen=True, slots=True)
class NamedTags:
    """What :func:`named_tags` counts: ``starts`` and ``tags`` as :class:`TagScan`,
    ``options`` (``<option`` start tags), ``roots`` (``<html`` and ``<body``), and
    ``unclosed``: over the formatting elements' names, the start tags beyond that name's end
    tags (``<b>`` × 5 and ``</b>`` × 2: 3). ``walks`` (from :func:`named_tags` only, else 0):
    ``3 + Σ 2 (2 sₖ + 3)`` over the page's ``<``, ``sₖ`` the start tags up to and with the
    ``k``-th — the stack levels lexbor's walks may cost, token by token (see
    :func:`~changewatch.fingerprint.guard.too_deep`)."""

    starts: int
    tags: int
    options: int
    roots: int
    unclosed: int
    walks: int = 0


def named_tags(data: bytes) -> NamedTags:
    """Count, wherever they stand (scripts and comments too, so never fewer than the
    tokenizer reads), the ``<`` + name + delimiter (whitespace, ``/``, ``>``) of the names
    :class:`NamedTags` reports, names in any case.

    >>> named_tags(b"<select><OPTION>a<option selected>b</select><b><b></b><body x>")
    NamedTags(starts=6, tags=8, options=2, roots=1, unclosed=1, walks=167)
    """
    page = np.frombuffer(data, dtype=np.uint8)
    opens = np.flatnonzero(page == _LT)
    start, end_tags, _ = _tag_starts(page, opens)
    named = _named(page, opens[start], end_tags)
    walks = 3 + 4 * int(np.cumsum(start, dtype=np.int64).sum()) + 6 * len(opens)
    return replace(named, walks=walks)


def names_of(data: bytes, found: TagScan) -> NamedTags:
    """:func:`named_tags` of ``data`` from its :func:`scan` (no pass over the page)."""
    return _named(np.frombuffer(data, dtype=np.uint8), found.start_tags, found.end_tags)


def _named(
    page: npt.NDArray[np.uint8], start_tags: npt.NDArray[np.intp], end_tags: npt.NDArray[np.intp]
) -> NamedTags:
    started = _name_counts(_name_keys(page, start_tags, 1))
    ended = _name_counts(_name_keys(page, end_tags, 2))
    formatting = np.maximum(started[: len(_NAMES)] - ended[: len(_NAMES)], 0)
    return NamedTags(
        starts=len(start_tags),
        tags=len(start_tags) + len(end_tags),
        options=int(started[_OPTION]),
        roots=int(started[_BODY] + started[_HTML]),
        unclosed=int(formatting.sum()),
    )


def _name_counts(keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.intp]:
    """How many of ``keys`` are each of :data:`_COUNTED` (in its order)."""
    index = np.minimum(np.searchsorted(_SORTED, keys), len(_SORTED) - 1)
    found = _SORTED[index] == keys
    counts: npt.NDArray[np.intp] = np.bincount(index[found], minlength=len(_SORTED))
    return counts[_PLACE]


def _name_keys(
    page: npt.NDArray[np.uint8], at: npt.NDArray[np.intp], offset: int
) -> npt.NDArray[np.uint64]:
    """Per position of ``at``: the lower-cased name of up to 7 bytes from ``at + offset`` as a
    little-endian key if a delimiter follows it (else 0, which no name is)."""
    if not len(at):
        return np.zeros(0, dtype=np.uint64)
    window = page[np.minimum(at[:, None] + (_NAME - 2 + offset), len(page) - 1)]
    delimiter = _DELIMITER[window]
    length = delimiter.argmax(axis=1)  # the name's length, if a delimiter follows it
    named = delimiter[np.arange(len(at)), length] & (length > 0)
    keys = (window.view("<u8")[:, 0] | np.uint64(0x2020202020202020)) & _MASKS[length]
    return np.where(named, keys, np.uint64(0))


_NAME = np.arange(2, 10)
_DELIMITER = np.zeros(256, dtype=np.bool_)
_DELIMITER[[0x09, 0x0A, 0x0C, 0x0D, 0x20, _SLASH, _GT]] = True
#: Per name length, the mask keeping its bytes of a little-endian key of 8 bytes.
_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)], dtype=np.uint64)
_NAMES = np.array(sorted(int.from_bytes(name, "little") for name in _FORMATTING), dtype=np.uint64)
#: The names :func:`named_tags` counts: the formatting elements' (:data:`_NAMES`), then these.
_COUNTED = np.concatenate(
    [_NAMES, np.array([int.from_bytes(n, "little") for n in (b"option", b"body", b"html")])]
).astype(np.uint64)
_OPTION, _BODY, _HTML = len(_NAMES), len(_NAMES) + 1, len(_NAMES) + 2
_SORTED = np.sort(_COUNTED)
_PLACE = np.searchsorted(_SORTED, _COUNTED)  # where each counted name stands in _SORTED


@lru_cache(maxsize=8)
def _attributes(widest: int) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """A start or end tag's ``<``, name, first ``widest`` attributes (at most) and the
    separators after them (so that a match's length is all the bytes a try reads: an
    attribute fails on its first byte, or not at all), and one attribute more."""
    separators = rf"(?:[{WS}]|/(?!>))*+"
    attribute = rf"(?:{separators}{ATTRIBUTE})"
    tag = re.compile(rf"</?[A-Za-z][^{WS}/>]*+{attribute}{{0,{widest}}}+{separators}".encode())
    return tag, re.compile(attribute.encode())


def long_tag_at(data: bytes, spans: tuple[tuple[int, int], ...], widest: int, budget: int) -> bool:
    """Whether a tag may start, in one of ``spans`` (the ``wide`` spans of :func:`scan`), that
    the tokenizer would read as more than ``widest`` attributes (or reading the spans would
    pass ``budget`` bytes: then the caller is to read the page as the tokenizer does). The
    attribute grammar is tried at every ``<`` of the spans, the tokenizer's state unknown
    (scripts, comments and values are read as markup too), so no tag the tokenizer reads is
    skipped; no tag of a span runs past its end (a hard ``>`` or the page's), so each try
    stops there. A try reads at most its span's rest: ``<y<y<y…`` (one tag name) costs the
    square of its length, hence the budget, which counts every byte a try reads.

    >>> long_tag_at(b"<p" + b" a" * 257 + b">", ((0, 517),), 256, 1 << 20)
    True
    >>> long_tag_at(b"<p" + b" a" * 256 + b">", ((0, 515),), 256, 1 << 20)
    False
    """
    tag, one_more = _attributes(widest)
    for begin, stop in spans:
        at = data.find(b"<", begin, stop)
        while at >= 0:
            found = tag.match(data, at, stop)
            if found is not None:
                budget -= found.end() - at
                if one_more.match(data, found.end(), stop) is not None:
                    return True  # the repeat stopped at widest: one attribute more
            if budget < 0:
                return True
            at = data.find(b"<", at + 1, stop)
    return False
