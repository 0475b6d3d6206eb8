"""Volatile stamps (date-times, times of day, relative ages) removed from normalised text.

Pure functions over case-folded, whitespace-collapsed text; no I/O.
"""

from __future__ import annotations

import re

__all__ = ["DEFAULT_VOLATILE_PATTERNS", "strip_volatile_text"]

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


_WINDOW_BEFORE = 96
_WINDOW_AFTER = 48


def strip_volatile_text(
    text: str, pattern: re.Pattern[str] | None, *, default: bool, collapsed: bool
) -> str:
    """Remove the matches of ``pattern`` (the joined volatile patterns of a policy; ``None``:
    none) from ``text``, to a fixed point. ``default``: ``pattern`` is made of
    :data:`DEFAULT_VOLATILE_PATTERNS`, whose matches all stand near an anchor (below);
    ``collapsed``: ``text`` has no whitespace but single inner spaces (as
    :func:`~changewatch.fingerprint.text.normalise_text` returns), so the result needs no
    collapsing pass."""
    if pattern is None:
        return text
    if not default:
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
