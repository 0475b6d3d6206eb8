"""The readable text diff used by ``changewatch diff`` (changewatch.textdiff)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from changewatch.textdiff import diff_units, unified_text_diff


def test_diff_shows_only_the_changed_sentence() -> None:
    """A one-word edit in a long normalised text shows as one sentence out, one in."""
    before = " ".join(f"sentence {i} is about item {i}." for i in range(30))
    after = before.replace("sentence 17 is about item 17.", "sentence 17 is about a new item.")
    lines = unified_text_diff(before, after, "v1", "v2")
    assert lines[:2] == ["--- v1", "+++ v2"]
    assert [line for line in lines if line[:1] in "+-" and not line.startswith(("---", "+++"))] == [
        "-sentence 17 is about item 17.",
        "+sentence 17 is about a new item.",
    ]
    assert len(lines) < 12  # context is kept small


def test_equal_texts_give_no_diff() -> None:
    """Identical texts have an empty diff."""
    assert unified_text_diff("a. b.", "a. b.") == []


def test_long_sentences_are_wrapped() -> None:
    """A sentence longer than the width is wrapped, so no diff line is huge."""
    text = "word " * 200
    assert all(len(u) <= 40 for u in diff_units(text, width=40))
    assert " ".join(diff_units(text, width=40)) == text.strip()


@given(st.text(alphabet="ab .!?\n", max_size=200))
def test_units_keep_every_word(text: str) -> None:
    """Splitting into diff units loses no word."""
    assert " ".join(diff_units(text)).split() == text.split()
