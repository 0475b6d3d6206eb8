"""Fuzz: label-stamp stripping on hostile text — one pass, idempotent, linear time."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changewatch.fingerprint import FingerprintPolicy, fingerprint, normalise_text, strip_volatile

from ._timing import assert_linear
from .strategies import FUZZ

#: Words that make stamps, labels and prose, so that random texts hold many near-stamps.
_WORDS = [
    "5", "1:00", "12:30:15", "2026-03-01t12:00:00z", "hours", "ago", "an", "hour", "at", "on",
    "pm", "utc", "march", "3,", "2026", "mon,", "updated", "updated:", "generated", "as", "of",
    "last", "posted", "the", "final", "of", "regulation", "word", "-", "·", ":", "1.3.2026",
]  # fmt: skip


@FUZZ
@given(st.lists(st.sampled_from(_WORDS) | st.text(max_size=8), max_size=80))
def test_strip_volatile_is_idempotent_and_only_removes_words(parts: list[str]) -> None:
    """Any mix of stamps, labels and words: stripping twice equals stripping once, and what
    is kept is the text's own words in order."""
    text = normalise_text(" ".join(parts))
    once = strip_volatile(text)
    assert strip_volatile(once) == once
    words = iter(text.split(" "))
    assert all(word in words for word in once.split(" ") if word)


SHAPES: list[tuple[str, Callable[[int], str]]] = [
    # The quadratic case of version 3: each removal joined "5" and "hours ago" into a new
    # stamp, so stripping to a fixed point took one pass per layer (k = 8,000: 45 s).
    ("nested layers", lambda n: "5 1:00 " * n + "hours ago " * n),
    ("labelled nested layers", lambda n: "updated " + "5 1:00 " * n + "hours ago " * n),
    ("labels and stamps", lambda n: "updated 12:00 " * n),
    ("stamps in prose", lambda n: "the race at 1:00 went on and on " * n),
    ("labelled dates", lambda n: "last updated: 3 march 2026 and " * n),
]


@pytest.mark.parametrize(("name", "shape"), SHAPES, ids=[name for name, _ in SHAPES])
def test_strip_volatile_time_grows_linearly(name: str, shape: Callable[[int], str]) -> None:
    """16× the text costs under 100× the time (quadratic: 256×); see _timing.assert_linear."""
    assert_linear(strip_volatile, shape, label=name)


def test_stamps_in_a_page_block_grow_linearly() -> None:
    """The same nested layers inside one paragraph of a page, through fingerprint()."""
    assert_linear(
        fingerprint, lambda n: "<p>" + "5 1:00 " * n + "hours ago " * n + "</p>", label="block"
    )


def test_a_policys_patterns_over_nested_layers_grow_linearly() -> None:
    """A policy's own pattern over k nested layers ("5 " × k, then "hours ago " × k): each
    pass removes one layer, so passes are bounded (volatile.MAX_STRIP_PASSES); unbounded,
    16× the layers cost 256× the time."""
    policy = FingerprintPolicy(volatile=(r"\b\d+ hours ago\b",))
    assert_linear(
        lambda html: fingerprint(html, policy=policy),
        lambda n: "<p>" + "5 " * n + "hours ago " * n + "</p>",
        label="policy layers",
    )


def test_a_policys_patterns_still_remove_a_few_nested_layers() -> None:
    """Within the bound, layers a removal joins are removed too."""
    policy = FingerprintPolicy(volatile=(r"\b\d+ hours ago\b",))
    nested = fingerprint("<p>price list " + "5 " * 3 + "hours ago " * 3 + "</p>", policy=policy)
    assert nested.content_sha256 == fingerprint("<p>price list</p>", policy=policy).content_sha256
