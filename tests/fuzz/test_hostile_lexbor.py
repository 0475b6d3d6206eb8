"""Corners of lexbor that cost more than the page's size (found by an adversarial review):
options in a select, repeated <html>/<body> tags, formatting elements rebuilt in every
paragraph. Such pages go to the tag-stripping fallback, in linear time; real pages of the
same kinds are still parsed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from changewatch import PageTooComplexError, fingerprint
from changewatch.fingerprint import normalise
from changewatch.fingerprint.guard import MAX_NESTING, MAX_OPTIONS, MAX_ROOT_TAGS, too_deep
from changewatch.fingerprint.nesting import Model
from changewatch.fingerprint.tagscan import named_tags

from ._timing import assert_linear


def _rebuilt(n: int) -> str:
    """``<p>``, ``n`` open ``<b>`` of distinct ids, then ``4n`` paragraphs: lexbor clones the
    ``n`` into each (``n`` = 1,000 and 17,000 paragraphs: 21.5 s and 6.2 GB)."""
    return "<p>" + "".join(f"<b id={i}>" for i in range(n)) + "<p>x" * (4 * n)


SHAPES: list[tuple[str, Callable[[int], str]]] = [
    ("options", lambda n: "<select>" + "<option>x" * (8 * n) + "</select>"),
    ("selected options", lambda n: "<select>" + "<option selected>x</option>" * (8 * n)),
    ("options in a cell", lambda n: "<table><tr><td><select>" + "<option>x" * (8 * n)),
    ("bodies", lambda n: "<body>" + "".join(f"<body a{i}=1 b{i}=2>" for i in range(n)) + "x"),
    ("rebuilt formatting", _rebuilt),
    ("rebuilt in closed paragraphs", lambda n: "".join(f"<p><b id={i}>x</p>" for i in range(n))),
]


@pytest.mark.parametrize(("name", "shape"), SHAPES, ids=[name for name, _ in SHAPES])
def test_lexbor_corners_cost_linear_time(name: str, shape: Callable[[int], str]) -> None:
    """16× the input under 100× the time (lexbor alone: 74-293× for 8×)."""
    assert_linear(fingerprint, shape, (PageTooComplexError,), label=name)


@pytest.mark.parametrize(
    "page",
    [
        "<select>" + "<option>x" * (MAX_OPTIONS + 1) + "</select>",
        "<body>" + "<body id=1>" * MAX_ROOT_TAGS + "x",
        _rebuilt(600),
        _rebuilt(60) + "<br>" * 20_000,  # cheap tags do not buy rebuilds
    ],
    ids=["options", "bodies", "rebuilt", "rebuilt after padding"],
)
def test_such_pages_go_to_the_fallback_and_keep_their_text(page: str) -> None:
    assert too_deep(page, page.count("<"))
    assert "x" in normalise(page)


def test_real_shapes_of_the_same_kinds_are_parsed() -> None:
    """A country list, a page with a few body tags, a sloppy unclosed <b> in each of 600
    paragraphs (modelled for its rebuilds: three identical ones at most): the parser reads
    them (as before)."""
    countries = "<form><select name=c>" + "".join(f"<option value={i}>C{i}" for i in range(300))
    bodies = "<html lang=en><body class=a>" + "<p>x</p>" * 50 + "<body onload=f()><p>y"
    sloppy = "".join(f"<p><b>Note</b> {i}: <i>see</i> <b>also" for i in range(600))
    for page in (countries + "</select></form>", bodies, sloppy):
        assert not too_deep(page, page.count("<")), page[:40]


def test_named_tags_counts_names_in_any_case_with_a_delimiter() -> None:
    found = named_tags(b"<OPTION><option/><optionx><Body\t><HTML><b><B><i></b></I></u>")
    assert (found.options, found.roots, found.unclosed) == (2, 2, 1)


def test_the_model_counts_rebuilds() -> None:
    """The model stops on the rebuilds of the hostile shape, not on balanced formatting."""
    hostile, balanced, identical = (
        Model(1 << 30, max_attributes=256, rebuilt_per_tag=2, rebuilt_slack=1 << 16) for _ in "abc"
    )
    hostile.run(_rebuilt(1000))
    balanced.run("<p><b>x</b> <i>y</i></p>" * 3000)
    identical.run("<p><b>x" * 3000)  # three identical ones at most are rebuilt (Noah's Ark)
    assert hostile.too_costly
    assert not balanced.too_costly
    assert not identical.too_costly


def test_the_walks_bound_clears_spread_pages_and_stops_deep_ones() -> None:
    """Token by token, a page of spread start tags walks about half the stack its product
    bound allows: 7,200 ``<`` of real-looking blocks pass without the model (the product
    bound sent them to it), while the deepest page under the bound, 5,792 nested divs, parses
    (its stack walks are those a page of 4,096 ``<`` may cost), and one more level does not."""
    spread = "<div><p>a <b>b</b></p><span>c</span></div>" * 900  # 7,200 "<", 3,600 starts
    bound = (2 * MAX_NESTING + 1) * (2 * MAX_NESTING + 3)  # a page of MAX_NESTING "<"
    assert named_tags(spread.encode()).walks <= bound < (2 * 7200 + 1) * (2 * 3600 + 3)
    assert not too_deep(spread, spread.count("<"))
    assert not too_deep("<div>" * 5792, 5792)
    assert too_deep("<div>" * 5793, 5793)
