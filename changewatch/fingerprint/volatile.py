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
    "DATE_LABEL_WORDS",
    "DEFAULT_VOLATILE_PATTERNS",
    "LABEL_WINDOW",
    "LABEL_WORDS",
    "may_hold_stamps",
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
DATE_LABEL_WORDS = frozenset(  # may_hold_stamps spells them out too
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
    if _DIGIT(token) is not None:
        return True
    return token.strip(_PUNCTUATION) in _STAMP_WORDS or token in _STAMP_WORDS


_DIGIT = re.compile(r"\d").search


def may_hold_stamps(text: str) -> bool:
    """Whether ``text`` may hold a stamp :func:`strip_label_stamps` removes: a ``:`` (every
    time has one), "ago" or a date label word — substring tests, much cheaper than a regex
    over the whole text.

    >>> may_hold_stamps("built 12:00"), may_hold_stamps("a plain sentence")
    (True, False)
    """
    return (
        ":" in text
        or "ago" in text
        or "updated" in text
        or "modified" in text
        or "revised" in text
        or "reviewed" in text
        or "generated" in text
        or "refreshed" in text
        or "retrieved" in text
        or "accessed" in text
    )  # DATE_LABEL_WORDS, unrolled: a generator over them costs more than the tests


def _anchors(text: str) -> list[tuple[int, int]]:
    """Spans of the words every removable stamp holds, in order: a ``:`` before a digit,
    "ago" (inside "agog" too: runs are checked later), and a date label word (which anchors
    the date after it) — one scan by :data:`_ANCHOR_RE` (none of these can overlap another).

    >>> _anchors("at 12:05, 3 days ago; last updated: 1 may 2026; agog")
    [(5, 7), (17, 20), (27, 34), (48, 51)]
    """
    return [match.span() for match in _ANCHOR_RE.finditer(text)]


_ANCHOR_RE = re.compile(r":\d|ago|" + "|".join(sorted(DATE_LABEL_WORDS)))


def strip_label_stamps(text: str) -> str:
    """Remove the default stamps of ``text`` (one block, normalised) that stand as labels.

    A stamp is a maximal run of stamp-like words holding a match of
    :data:`DEFAULT_VOLATILE_PATTERNS`. It is removed when the block is mostly stamps (their
    characters at least twice as many as the rest's) or when a :data:`LABEL_WORDS` word
    stands among the :data:`LABEL_WINDOW` other words before it; a run holding only a date
    is removed when a :data:`DATE_LABEL_WORDS` word stands right before it. Runs are found
    from the patterns' matches (in C) and grown word by word around them, each word looked
    at once: linear in the length of ``text``. Idempotent: runs are maximal, so what is left
    beside a removed run is no stamp word, and label windows skip stamp words.

    >>> strip_label_stamps("updated 5 minutes ago")
    'updated'
    >>> strip_label_stamps("mon, 01 mar 2026 12:00:00 gmt")
    ''
    >>> strip_label_stamps("he scored in the final 4:29 of regulation")
    'he scored in the final 4:29 of regulation'
    """
    if not may_hold_stamps(text) or (_DIGIT(text) is None and "ago" not in text):
        return text  # every default stamp but "an hour ago" holds a digit
    stamps: list[tuple[int, int]] = []
    dates: list[tuple[int, int]] = []
    covered = 0
    # Facts about the words looked at, so that the anchors inside one long word ("ago" ×
    # 32,000, "updated" × 640,000: 34 s and 59 s when each re-read its word) look at it
    # once: ``own`` is the last anchor's word found not stamp-like, ``following`` the start
    # of the last word after a label found not stamp-like, ``space`` the first space after
    # the last label looked at (anchors come in order, so each stays true for the next).
    own = (0, 0)
    following = -1
    space = -1
    for anchor, anchor_end in _anchors(text):
        if anchor_end <= covered:
            continue  # inside a run already found
        label = text[anchor] != ":" and not text.startswith("ago", anchor)
        if label:
            # A date label word: the run that may be a date starts at the word after it.
            if space < anchor_end:
                space = text.find(" ", anchor_end)
                space = len(text) if space == -1 else space
            at = space + 1
            if at > len(text) or at == following:
                continue
        elif own[0] <= anchor and anchor_end <= own[1]:
            continue
        else:
            at = text.rfind(" ", 0, anchor) + 1
        stop = text.find(" ", at)
        stop = len(text) if stop == -1 else stop
        if not _stamp_like(text[at:stop]):
            if label:
                following = at
            else:
                own = (at, stop)
            continue
        start, end = _run_around(text, at, stop)
        covered = max(covered, end)
        run = text[start:end]
        if _DEFAULT_RE.search(run) is not None:
            stamps.append((start, end))
        elif _DATE_RE.search(run) is not None and _date_labelled(text, start):
            dates.append((start, end))
    if not stamps and not dates:
        return text
    stamp_chars = sum(end - start for start, end in stamps)
    mostly = 3 * stamp_chars >= 2 * len(text)  # the stamps at least twice the rest
    removed = sorted([span for span in stamps if mostly or _labelled(text, span[0])] + dates)
    if not removed:
        return text
    pieces = []
    last = 0
    for start, end in removed:
        pieces.append(text[last:start].strip())
        last = end
    pieces.append(text[last:].strip())
    return " ".join(piece for piece in pieces if piece)


def _run_around(text: str, at: int, stop: int) -> tuple[int, int]:
    """The maximal run of stamp-like words around the stamp-like word ``text[at:stop]``, as a
    character span; each word beside it is looked at once."""
    first = at
    while first > 0:  # grow left
        before = text.rfind(" ", 0, first - 1) + 1
        if not _stamp_like(text[before : first - 1]):
            break
        first = before
    last = stop
    while last < len(text):  # grow right
        after = text.find(" ", last + 1)
        after = len(text) if after == -1 else after
        if not _stamp_like(text[last + 1 : after]):
            break
        last = after
    return first, last


def _date_labelled(text: str, start: int) -> bool:
    """Whether the word before a date's run is one of :data:`DATE_LABEL_WORDS` (the run is
    maximal, so that word is never stamp-like: removing another stamp cannot change it)."""
    if start == 0:
        return False
    before = text.rfind(" ", 0, start - 1) + 1
    return text[before : start - 1].strip(_PUNCTUATION) in DATE_LABEL_WORDS


def _labelled(text: str, start: int) -> bool:
    """Whether a label word stands among the :data:`LABEL_WINDOW` words before ``start``
    that are not stamp-like (so removing another stamp never changes the answer)."""
    seen = 0
    end = start - 1  # the space before the run
    previous = ""
    while end > 0 and seen < LABEL_WINDOW:
        begin = text.rfind(" ", 0, end) + 1
        token = text[begin:end]
        end = begin - 1
        if _stamp_like(token):
            continue
        word = token.strip(_PUNCTUATION)
        if word in LABEL_WORDS or (previous == "of" and word == "as"):
            return True
        if word == "of" and end > 0:
            before = text.rfind(" ", 0, end) + 1
            if text[before:end].strip(_PUNCTUATION) == "as":
                return True
        previous = word
        seen += 1
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


#: Passes of a policy's volatile patterns over a block. Removing a match can join its
#: neighbours into a new one ("5 5 hours ago hours ago"), so the patterns are applied again;
#: a page can nest such layers without end (k layers cost k passes: quadratic), so after
#: this many passes whatever is left stays. Real stamps nest one or two layers.
MAX_STRIP_PASSES = 8


def _strip_to_fixed_point(text: str, pattern: re.Pattern[str]) -> str:
    for _ in range(MAX_STRIP_PASSES):
        if pattern.search(text) is None:
            break
        text = " ".join(pattern.sub(" ", text).split())
    return text
