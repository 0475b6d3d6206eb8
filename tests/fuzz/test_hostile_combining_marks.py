"""Hostile text for NFKC: long runs of combining marks that need reordering are cut by
U+034F (the Stream-Safe Text Format), so normalising is linear; text with runs of at most
30 non-starters normalises exactly as before."""

from __future__ import annotations

import gzip
import unicodedata

import pytest
import shared_corpus
from hypothesis import given
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from changewatch.fingerprint import fingerprint, normalise_text
from changewatch.fingerprint.guard import normalise_bounded
from changewatch.fingerprint.text import (
    _BOUNDED_FROM,
    _MARK_WEIGHTS,
    _MARKS_BELOW,
    MAX_NON_STARTERS,
    _fold,
    _normalise_collapsed,
    _stream_safe,
)

from ._timing import assert_linear
from .strategies import FUZZ

_JOINER = "\u034f"


def _frozen_normalise_text(text: str) -> str:
    """normalise_text as of 160fccc (before the fix): the reference for ordinary text."""
    text = " ".join(text.split())
    if text.isascii():
        return text.lower()
    if len(text) > _BOUNDED_FROM:
        return normalise_bounded(text, _fold)
    return _normalise_collapsed(text)


def _marks() -> list[str]:
    _stream_safe("\u00e9")  # builds the table
    return sorted(_MARK_WEIGHTS)


def test_marks_over_the_limit_get_a_joiner_and_runs_within_it_none() -> None:
    """30 non-starters stay as they are, the 31st gets U+034F before it; a mark decomposing
    to two non-starters counts two."""
    assert _stream_safe("a" + "\u0301" * 30) == "a" + "\u0301" * 30
    assert _stream_safe("a" + "\u0301" * 31) == "a" + "\u0301" * 30 + _JOINER + "\u0301"
    assert _stream_safe("a" + "\u0344" * 15) == "a" + "\u0344" * 15
    assert _stream_safe("a" + "\u0344" * 16) == "a" + "\u0344" * 15 + _JOINER + "\u0344"
    assert _stream_safe("a" + "\u0301" * 20 + "b" + "\u0316" * 20) == (
        "a" + "\u0301" * 20 + "b" + "\u0316" * 20
    )
    adlam = "\U0001e944"  # a mark beyond the BMP; emoji there are starters
    assert _stream_safe("a" + adlam * 31) == "a" + adlam * 30 + _JOINER + adlam
    assert _stream_safe("\U0001f600" * 40 + adlam * 30) == "\U0001f600" * 40 + adlam * 30


def test_no_non_starter_past_the_scanned_planes() -> None:
    """Every code point from _MARKS_BELOW up is a starter whose NFKD starts with one (the
    table of marks scans only the code points below)."""
    for code in range(_MARKS_BELOW, 0x110000):
        char = chr(code)
        if 0xD800 <= code < 0xE000:
            continue
        assert unicodedata.combining(char) == 0, hex(code)
        assert unicodedata.combining(unicodedata.normalize("NFKD", char)[:1] or "a") == 0


def test_every_mark_weight_is_its_nfkd_length() -> None:
    """The table holds the characters all of whose NFKD are non-starters, with its length."""
    for char in _marks():
        form = unicodedata.normalize("NFKD", char)
        assert all(unicodedata.combining(part) for part in form)
        assert _MARK_WEIGHTS[char] == len(form)


_short_runs = st.lists(
    st.tuples(
        st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6),
        st.lists(st.sampled_from(_marks()), max_size=MAX_NON_STARTERS // 2),
    ),
    max_size=30,
)


@FUZZ
@given(_short_runs)
def test_text_with_short_mark_runs_normalises_as_before(parts: list[tuple[str, list[str]]]) -> None:
    """Random text with runs of at most 15 marks (≤ 30 non-starters) after each base:
    normalise_text equals the frozen one."""
    text = "".join(base + "".join(marks) for base, marks in parts)
    if any(
        sum(_MARK_WEIGHTS.get(char, 0) for char in run) > MAX_NON_STARTERS
        for run in _runs_of_marks(text)
    ):
        return  # two pieces' marks joined (an empty base): not a short run
    assert normalise_text(text) == _frozen_normalise_text(text)


def _runs_of_marks(text: str) -> list[str]:
    runs, current = [], ""
    for char in text:
        if char in _MARK_WEIGHTS:
            current += char
        else:
            runs.append(current)
            current = ""
    return [*runs, current]


@FUZZ
@given(st.lists(st.sampled_from([*_marks()[:40], "a", "e", " ", "\u1e08"]), max_size=200))
def test_stream_safe_normalising_is_idempotent(chars: list[str]) -> None:
    """Any run of marks, long ones included: normalising the normalised text changes nothing."""
    once = normalise_text("".join(chars))
    assert normalise_text(once) == once


@pytest.mark.corpus
@pytest.mark.skipif(not shared_corpus.PRESENT, reason=shared_corpus.REASON)
def test_corpus_pages_normalise_as_before() -> None:
    """Every page of the shared corpus (readability pages and re-fetch captures): its
    visible text has no mark run to cut (so normalise_text folds it as before), and the
    first 10,000 characters of each non-ASCII one normalise as the frozen code did."""
    paths = sorted(shared_corpus.path("pages-readability").glob("*.html.gz"))
    paths += sorted(shared_corpus.path("refetch-opentermsarchive").rglob("*.html.gz"))
    assert len(paths) > 800
    for path in paths:
        root = LexborHTMLParser(gzip.decompress(path.read_bytes())).root
        text = root.text(separator=" ") if root is not None else ""
        assert _stream_safe(text) == text, path.name
        if not text.isascii():
            head = text[:10_000]
            assert normalise_text(head) == _frozen_normalise_text(head), path.name


def test_combining_marks_needing_reordering_grow_linearly() -> None:
    """ "a" + "\\u0301\\u0316" × n: NFKC's insertion sort made it 14.0 s at 128 K characters
    through fingerprint(); the joiners make it linear."""
    _marks()
    assert_linear(normalise_text, lambda n: "a" + "\u0301\u0316" * n, label="marks", start=2000)
    assert_linear(
        fingerprint,
        lambda n: "<p>a" + "\u0301\u0316" * n + "</p>",
        label="marks page",
        start=2000,
    )


def test_ordered_mark_runs_in_nfkc_text_grow_linearly() -> None:
    """NFKC text skips the joiners (its marks are in order: nothing to sort), even where
    case folding puts a mark before the run ("İ" folds to "i" + U+0307)."""
    _marks()
    for base in ("a", "\u0130"):
        assert_linear(
            normalise_text,
            lambda n, base=base: base + "\u0316" * n + "\u0301" * n,
            label=f"ordered marks on {base!r}",
            start=2000,
        )
