"""Hostile text for label-stamp stripping: many anchors inside one long word cost one look at
the word, and the rewrite that made it so strips exactly what the earlier code stripped."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from changewatch.fingerprint import fingerprint
from changewatch.fingerprint.volatile import (
    _DATE_RE,
    _DEFAULT_RE,
    _DIGIT,
    _anchors,
    _date_labelled,
    _labelled,
    _stamp_like,
    may_hold_stamps,
    strip_label_stamps,
)

from ._timing import assert_linear
from .strategies import FUZZ


def _frozen_strip_label_stamps(text: str) -> str:
    """strip_label_stamps as of 160fccc (before the fix), which re-read the word of every
    anchor: the reference the rewrite must agree with on every text."""
    if not may_hold_stamps(text) or (_DIGIT(text) is None and "ago" not in text):
        return text
    stamps: list[tuple[int, int]] = []
    dates: list[tuple[int, int]] = []
    covered = 0
    for anchor, anchor_end in _anchors(text):
        if anchor_end <= covered:
            continue
        if text[anchor] != ":" and not text.startswith("ago", anchor):
            anchor = text.find(" ", anchor_end)
            if anchor == -1:
                continue
            anchor, anchor_end = anchor + 1, anchor + 2
        for start, end in _frozen_runs_over(text, max(anchor, covered), anchor_end):
            covered = max(covered, end)
            run = text[start:end]
            if _DEFAULT_RE.search(run) is not None:
                stamps.append((start, end))
            elif _DATE_RE.search(run) is not None and _date_labelled(text, start):
                dates.append((start, end))
    if not stamps and not dates:
        return text
    stamp_chars = sum(end - start for start, end in stamps)
    mostly = 3 * stamp_chars >= 2 * len(text)
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


def _frozen_runs_over(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """_runs_over as of 160fccc."""
    runs: list[tuple[int, int]] = []
    at = text.rfind(" ", 0, start) + 1
    while at < end:
        stop = text.find(" ", at)
        stop = len(text) if stop == -1 else stop
        if _stamp_like(text[at:stop]) and not (runs and at < runs[-1][1]):
            first = at
            while first > 0:
                before = text.rfind(" ", 0, first - 1) + 1
                if not _stamp_like(text[before : first - 1]):
                    break
                first = before
            last = stop
            while last < len(text):
                after = text.find(" ", last + 1)
                after = len(text) if after == -1 else after
                if not _stamp_like(text[last + 1 : after]):
                    break
                last = after
            runs.append((first, last))
        at = stop + 1
    return runs


#: Pieces of stamps, labels and prose; joined with and without spaces they make long words
#: full of anchors ("agoupdated1:00"), labels before stamps and dates, and near misses.
_PIECES = [
    "ago", "agog", "updated", "updated:", "modified", "generated", "revised", "accessed",
    "last", "as", "of", "posted", "at", "on", "an", "hour", "hours", "5", "12", "2026",
    "1:00", "12:30:15", ":5", "9:05 pm", "12:00 utc", "2026-03-01t12:00:00z", "2026-03-01",
    "01/03/2026", "1.3.2026", "3 march 2026", "march 3, 2026", "mon,", "minutes", "days",
    "the", "final", "of", "regulation", "word", "x", "-", "·", ":", ",", "(", ")", "",
    "aaaaaaaa", "zzz9", "st",
]  # fmt: skip
_JOINS = [" ", " ", " ", " ", "", "  ", "-", ":"]


def _random_text(rng: random.Random) -> str:
    """A text of up to 60 pieces, most joined by one space, some by none or two."""
    parts = [rng.choice(_PIECES) for _ in range(rng.randrange(61))]
    out = []
    for part in parts:
        out.append(part)
        out.append(rng.choice(_JOINS))
    text = "".join(out)
    return text.strip() if rng.random() < 0.7 else text


def test_rewrite_strips_what_the_frozen_code_stripped_on_random_texts() -> None:
    """50,000 seeded random texts of anchors, labels, stamps, dates and long words: the new
    strip_label_stamps returns exactly the frozen one's text."""
    rng = random.Random(20261201)
    for _ in range(50_000):
        text = _random_text(rng)
        assert strip_label_stamps(text) == _frozen_strip_label_stamps(text), repr(text)


_piece = st.sampled_from(_PIECES) | st.text(st.sampled_from("ago updt:19 -,."), max_size=12)


@FUZZ
@given(st.lists(st.tuples(_piece, st.sampled_from(_JOINS)), max_size=60))
def test_rewrite_strips_what_the_frozen_code_stripped(parts: list[tuple[str, str]]) -> None:
    """Hypothesis over the same pieces and joins (and random letters of the anchors): the new
    strip_label_stamps agrees with the frozen one."""
    text = "".join(piece + join for piece, join in parts)
    assert strip_label_stamps(text) == _frozen_strip_label_stamps(text)


def test_ordinary_stamps_still_go_and_prose_times_stay() -> None:
    """The rules real edits depend on: label stamps removed, times in prose kept."""
    assert strip_label_stamps("updated 5 minutes ago") == "updated"
    assert strip_label_stamps("page generated at 2026-03-01t12:00:00z") == "page generated"
    assert strip_label_stamps("last updated: 3 march 2026 by staff") == "last updated: by staff"
    prose = "he scored in the final 4:29 of regulation"
    assert strip_label_stamps(prose) == prose


def test_ago_inside_one_long_word_grows_linearly() -> None:
    """ "ago" × n in one word (no stamp): was 34.1 s through fingerprint() at 96 KB, each
    match re-reading the word."""
    assert_linear(strip_label_stamps, lambda n: "ago" * n + " x", label="ago word", start=2000)
    assert_linear(fingerprint, lambda n: "<p>" + "ago" * n + " </p>", label="ago page", start=2000)


def test_date_labels_inside_one_long_word_grow_linearly() -> None:
    """ "updated" × n then " x 1": was 58.6 s through fingerprint() at 4.5 MB, each label
    finding the word's end again."""
    assert_linear(
        strip_label_stamps, lambda n: "updated" * n + " x 1", label="label word", start=2000
    )
    assert_linear(
        fingerprint,
        lambda n: "<p>" + "updated" * n + " x 1</p>",
        label="label page",
        start=2000,
    )


def test_mixed_anchors_and_a_long_following_word_grow_linearly() -> None:
    """Anchors of both kinds alternating in one word, then a long word after it: each word
    is looked at once whichever anchor points at it."""
    assert_linear(
        strip_label_stamps,
        lambda n: "agoupdated" * n + " " + "y" * (10 * n) + " 1",
        label="mixed",
        start=1000,
    )
