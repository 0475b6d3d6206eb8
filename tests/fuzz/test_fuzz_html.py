"""Fuzz: normalise and fingerprint on hostile HTML — always an answer, consistent, fast."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given

from changewatch import PageTooComplexError, fingerprint
from changewatch.fingerprint import content_sha256, normalise, raw_sha256

from ._timing import assert_linear
from .strategies import FUZZ, html_documents


@FUZZ
@given(html_documents())
def test_normalise_and_fingerprint_agree_on_any_document(html: str | bytes) -> None:
    """Any str/bytes body: a text, the same twice, and a fingerprint built from that text."""
    text = normalise(html)
    assert isinstance(text, str)
    assert normalise(html) == text
    fp = fingerprint(html)
    assert fp.raw_sha256 == raw_sha256(html)
    if fp.binary:
        assert (fp.simhash, fp.text_length) == (0, 0)
        return
    assert fp.content_sha256 == content_sha256(text)
    assert fp.text_length == len(text)
    assert 0 <= fp.simhash < 2**64


SHAPES: list[tuple[str, Callable[[int], str]]] = [
    ("deep nesting", lambda n: "<div>" * n + "x" + "</div>" * n),
    ("unclosed tags", lambda n: "<p><b><i>word " * n),
    ("repeated attributes", lambda n: "<p " + " ".join('a="v"' for i in range(n)) + ">x</p>"),
    ("many elements with attributes", lambda n: "".join(f'<p a="{i}">x</p>' for i in range(n))),
    ("comments", lambda n: "<!-- c -->x" * n),
    ("volatile text", lambda n: "<p>" + "updated 12:00 UTC 5 minutes ago " * n + "</p>"),
    ("entities", lambda n: "<p>" + "&amp;&#x41;&nbsp;" * n + "</p>"),
    ("long word", lambda n: "<p>" + "a" * (40 * n) + "</p>"),
    ("scripts", lambda n: "<script>var x = '<p>';</script><p>y</p>" * n),
    # Issue 16: end tags that close nothing, and end tags inside comments, hid the depth
    # from the old estimate (80,000 of the first took 12.8 s).
    ("end tags that close nothing", lambda n: "<div></x>" * n),
    ("end tags in comments", lambda n: "<div><!--</-->" * n),
]


@pytest.mark.parametrize(("name", "shape"), SHAPES, ids=[name for name, _ in SHAPES])
def test_fingerprint_time_grows_linearly(name: str, shape: Callable[[int], str]) -> None:
    """16× the input costs under 100× the time (quadratic: 256×); see _timing.assert_linear.

    The margin over 16× absorbs cache effects and a loaded machine (CI shares its cores).
    A page refused before parsing (PageTooComplexError: over 4,096 attributes) counts too.
    """
    assert_linear(fingerprint, shape, (PageTooComplexError,), label=name)


def test_distinct_attribute_names_on_one_element_grow_linearly() -> None:
    """16× the distinct attribute names of one element: under 100× the time. Past
    MAX_ATTRIBUTES the page is refused (PageTooComplexError) before it is parsed; below it
    lexbor's duplicate check is quadratic but bounded (90,000 names took 30 s)."""

    def shape(n: int) -> str:
        return "<p " + " ".join(f'a{i}="v"' for i in range(n)) + ">x</p>"

    assert_linear(
        fingerprint,
        shape,
        (PageTooComplexError,),
        label="distinct names",
        min_seconds=0.002,
        large_repeats=1,
    )
