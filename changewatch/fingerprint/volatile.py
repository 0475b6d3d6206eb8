"""Volatile stamps (date-times, times of day, relative ages) removed from normalised text.

Pure functions over case-folded, whitespace-collapsed text; no I/O.

A stamp of :data:`DEFAULT_VOLATILE_PATTERNS` is volatile only where it stands as a *label*
(version 4): in a block that is mostly the stamp (twice as long as the rest of it: "12:05",
"Mon, 01 Mar 2026 12:00:00 GMT"), or after a label word ("updated", "generated", "as of",
"last modified", "posted"… within :data:`LABEL_WINDOW` words before it). Inside prose it is
content: "in the final 4:29 of regulation" becoming "4:20" is an edit. A date on its own is
content too, unless a revision label stands right before it ("Last updated: 3 March 2026",
:data:`DATE_LABEL_WORDS`). :func:`strip_label_stamps` finds stamps as maximal runs of
stamp-like words (a digit, a unit, a zone, a month, "at", "ago"…) that hold a match of the
patterns, so that removing one can never join its neighbours into a new one: one pass,
linear time, idempotent. Patterns a policy adds are removed everywhere, as before.
"""

from __future__ import annotations

import re

__all__ = [
    "ANCHOR_RE",
    "DATE_LABEL_WORDS",
    "DEFAULT_VOLATILE_PATTERNS",
    "LABEL_WINDOW",
    "LABEL_WORDS",
    "strip_label_stamps",
    "strip_volatile_text",
]

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


#: Words that make the stamp after them a label (case-folded; ``"as of"`` is matched as a pair).
LABEL_WORDS = frozenset(
    [
        "updated",
        "update",
        "generated",
        "rendered",
        "built",
        "build",
        "refreshed",
        "refresh",
        "modified",
        "changed",
        "edited",
        "posted",
        "published",
        "created",
        "uploaded",
        "fetched",
        "retrieved",
        "cached",
        "served",
        "checked",
        "synced",
        "replied",
        "commented",
        "wrote",
        "joined",
        "time",
        "timestamp",
        "today",
        "yesterday",
        "now",
    ]
)
#: How many words (stamp-like words of other stamps not counted) may stand between a label
#: word and its stamp: "rendered by node-7 at 12:00", "last modified on 1 march 2026 12:00".
LABEL_WINDOW = 3

_STAMP_WORDS = frozenset(
    [
        "at",
        "on",
        "a",
        "an",
        "am",
        "pm",
        "a.m.",
        "p.m.",
        "a.m",
        "p.m",
        "ago",
        "z",
        "utc",
        "gmt",
        "cet",
        "cest",
        "bst",
        "est",
        "edt",
        "cst",
        "cdt",
        "mst",
        "mdt",
        "pst",
        "pdt",
        "ist",
        "jst",
        "t",
        "sec",
        "secs",
        "second",
        "seconds",
        "min",
        "mins",
        "minute",
        "minutes",
        "hr",
        "hrs",
        "hour",
        "hours",
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "months",
        "year",
        "years",
        "jan",
        "january",
        "feb",
        "february",
        "mar",
        "march",
        "apr",
        "april",
        "may",
        "jun",
        "june",
        "jul",
        "july",
        "aug",
        "august",
        "sep",
        "sept",
        "september",
        "oct",
        "october",
        "nov",
        "november",
        "dec",
        "december",
        "mon",
        "monday",
        "tue",
        "tues",
        "tuesday",
        "wed",
        "wednesday",
        "thu",
        "thur",
        "thurs",
        "thursday",
        "fri",
        "friday",
        "sat",
        "saturday",
        "sun",
        "sunday",
        "st",
        "nd",
        "rd",
        "th",
        "-",
    ]
)
_PUNCTUATION = ".,;:()[]|·•-–—/"
_DEFAULT_RE = re.compile("|".join(f"(?:{p})" for p in DEFAULT_VOLATILE_PATTERNS))
#: A date on its own: 2026-03-01, 01/03/2026, 1.3.2026, march 1, 2026, 1st march 2026.
_DATE_RE = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b"
    r"|\b" + _MONTH + r" \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)? " + _MONTH + r",? \d{4}\b"
)
#: Words after which a date on its own is a revision stamp ("Last updated: 3 March 2026"),
#: when nothing but stamp words stands between: such a date moves with every re-render of
#: some sites while the text it labels does not. A date elsewhere is content (a publication
#: date, "the vote on 3 March").
DATE_LABEL_WORDS = frozenset(
    [
        "updated",
        "modified",
        "revised",
        "reviewed",
        "generated",
        "refreshed",
        "retrieved",
        "accessed",
    ]
)


def _stamp_like(token: str) -> bool:
    """A word that can be part of a stamp: it holds a digit, or is a unit, zone or month."""
    if any(c.isdigit() for c in token):
        return True
    return token.strip(_PUNCTUATION) in _STAMP_WORDS or token in _STAMP_WORDS


def _has_anchor(text: str) -> bool:
    """Whether ``text`` may hold a default stamp (each holds ``:`` then a digit, or " ago")
    or a labelled date (:data:`ANCHOR_RE`)."""
    if " ago" in text or text.startswith("ago"):
        return True
    if ANCHOR_RE.search(text) is not None:
        return True
    at = text.find(":")
    while at != -1:
        if at + 1 < len(text) and text[at + 1].isdecimal():
            return True
        at = text.find(":", at + 1)
    return False


def strip_label_stamps(text: str) -> str:
    """Remove the default stamps of ``text`` (one block, normalised) that stand as labels.

    A stamp is a maximal run of stamp-like words holding a match of
    :data:`DEFAULT_VOLATILE_PATTERNS`. It is removed when the block is mostly stamps (their
    characters at least twice as many as the rest's) or when a :data:`LABEL_WORDS` word stands among
    the :data:`LABEL_WINDOW` other words before it. Linear in the length of ``text``, and
    idempotent: runs are maximal, so what is left beside a removed run is no stamp word.

    >>> strip_label_stamps("updated 5 minutes ago")
    'updated'
    >>> strip_label_stamps("mon, 01 mar 2026 12:00:00 gmt")
    ''
    >>> strip_label_stamps("he scored in the final 4:29 of regulation")
    'he scored in the final 4:29 of regulation'
    """
    if not _has_anchor(text):
        return text
    tokens = text.split(" ")
    runs: list[tuple[int, int]] = []
    dates: list[tuple[int, int]] = []
    stamp_chars = 0
    index, count = 0, len(tokens)
    while index < count:
        if not _stamp_like(tokens[index]):
            index += 1
            continue
        end = index + 1
        while end < count and _stamp_like(tokens[end]):
            end += 1
        run = " ".join(tokens[index:end])
        if _DEFAULT_RE.search(run) is not None:
            runs.append((index, end))
            stamp_chars += len(run)
        elif _DATE_RE.search(run) is not None and _date_labelled(tokens, index):
            dates.append((index, end))
        index = end
    if not runs and not dates:
        return text
    mostly = 3 * stamp_chars >= 2 * len(text)  # the stamps at least twice the rest
    keep = [True] * count
    for start, end in runs:
        if mostly or _labelled(tokens, start):
            keep[start:end] = [False] * (end - start)
    for start, end in dates:
        keep[start:end] = [False] * (end - start)
    if all(keep):
        return text
    return " ".join(token for token, kept in zip(tokens, keep, strict=True) if kept)


def _date_labelled(tokens: list[str], start: int) -> bool:
    """Whether the word before a date's run is one of :data:`DATE_LABEL_WORDS` (the run is
    maximal, so that word is never stamp-like: removing another stamp cannot change it)."""
    return start > 0 and tokens[start - 1].strip(_PUNCTUATION) in DATE_LABEL_WORDS


def _labelled(tokens: list[str], start: int) -> bool:
    """Whether a label word stands among the :data:`LABEL_WINDOW` words before ``start``
    that are not stamp-like (so removing another stamp never changes the answer)."""
    seen: list[str] = []
    at = start - 1
    while at >= 0 and len(seen) < LABEL_WINDOW:
        token = tokens[at]
        at -= 1
        if _stamp_like(token):
            continue
        word = token.strip(_PUNCTUATION)
        if word in LABEL_WORDS:
            return True
        if word == "of" and at >= 0 and tokens[at].strip(_PUNCTUATION) == "as":
            return True
        seen.append(word)
    return False


def strip_volatile_text(
    text: str, pattern: re.Pattern[str] | None, *, default: bool, collapsed: bool
) -> str:
    """Remove volatile stamps from normalised ``text`` (one block).

    ``default``: remove the default stamps that stand as labels (:func:`strip_label_stamps`);
    ``pattern``: the patterns a policy adds (``None``: none), removed wherever they match, to a
    fixed point. ``collapsed``: ``text`` has no whitespace but single inner spaces (as
    :func:`~changewatch.fingerprint.text.normalise_text` returns).
    """
    if not collapsed:
        text = " ".join(text.split())
    if default:
        text = strip_label_stamps(text)
    if pattern is not None:
        text = _strip_to_fixed_point(text, pattern)
    return text


def _strip_to_fixed_point(text: str, pattern: re.Pattern[str]) -> str:
    # Removing a match can join its neighbours into a new one; repeat until none is left.
    while pattern.search(text) is not None:
        text = " ".join(pattern.sub(" ", text).split())
    return text


#: What every stamp :func:`strip_label_stamps` may remove holds: a time (``:`` then a digit),
#: a relative age ("ago") or a date label word. Blocks without one are not looked at.
ANCHOR_RE = re.compile(r":\d|\bago\b|\b(?:" + "|".join(sorted(DATE_LABEL_WORDS)) + r")\b")
