"""The guard's numpy scan (fingerprint/tagscan.py): the shapes an attacker would try against
its bounds — quotes that knock a sequential scan out of step, ``>`` inside quoted values,
whitespace before a quote, tag names of many ``<`` — are still refused or read exactly."""

from __future__ import annotations

import doctest

import pytest

from changewatch import PageTooComplexError
from changewatch.fingerprint import attributes, fingerprint, tagscan
from changewatch.fingerprint.guard import (
    MAX_ATTRIBUTES,
    MAX_NAMES_FEW_TAGS,
    check_names,
    too_deep,
)
from changewatch.fingerprint.nesting import Model, attribute_names, attributes_of
from changewatch.fingerprint.tagscan import formatting_ends, long_tag_at, named_tags, scan


def _names(count: int, prefix: str = "a") -> str:
    return " ".join(f"{prefix}{i}" for i in range(count))


def test_a_quote_in_a_script_does_not_hide_a_wide_tag() -> None:
    """A script's text read as markup opens a quoted value that runs over the script's end
    and a real tag of 300 attributes (the regex findall of before skipped it: the page
    passed, and 30,000 attributes took lexbor 1.75 s); every ``<`` is tried now."""
    wide = f"<p {_names(MAX_ATTRIBUTES + 44)}>"
    page = '<script>"<x' + " a" * 16 + " b='</script>" + wide + "'\"</script><p>x</p>"
    with pytest.raises(PageTooComplexError) as caught:
        fingerprint(page.encode())
    assert caught.value.limit_name == "attributes"
    harmless = '<script>"<x' + " a" * 16 + " b='</script><p a>'\"</script><p>x</p>"
    check_names(harmless, harmless.count("<"))


@pytest.mark.parametrize(
    "value",
    ['">"', '= ">"', '=  ">"', '= \t\n">"', "='>'", '="\'>"', "='\">'", '="a>b>c"'],
    ids=repr,
)
def test_a_gt_inside_quoted_values_does_not_cut_a_tag(value: str) -> None:
    """A ``>`` inside a quoted value (after ``=`` and any whitespace, in either quote) does
    not end the tag: a tag of 300 such attributes is refused, whichever way it is quoted."""
    value = value if value.startswith("=") else "=" + value
    tag = "<p " + " ".join(f"a{i}{value}" for i in range(MAX_ATTRIBUTES + 44)) + ">x</p>"
    with pytest.raises(PageTooComplexError) as caught:
        fingerprint(tag.encode())
    assert caught.value.limit_name == "attributes"
    assert scan(tag.encode(), MAX_ATTRIBUTES, MAX_NAMES_FEW_TAGS).wide


def test_names_spread_over_tags_holding_quoted_gt_are_counted() -> None:
    """70,000 distinct names over 4,096 tags whose values all hold ``>`` (so the page's ``>``
    fall inside tags): the bound passes the limit, the page is read, refused."""
    page = "".join("<p " + " ".join(f'n{t}_{i}=">"' for i in range(18)) + ">" for t in range(4000))
    assert scan(page.encode(), MAX_ATTRIBUTES, MAX_NAMES_FEW_TAGS).attributes > 70_000
    with pytest.raises(PageTooComplexError) as caught:
        too_deep(page.encode(), page.count("<"))
    assert caught.value.limit_name == "names"


def test_a_tag_name_of_many_lt_is_read_within_a_budget() -> None:
    """``<y<y<y…`` is one tag name the tokenizer reads once, but trying the grammar at each of
    its ``<`` reads the rest of it each time (4,000 before 1 MiB of name took the guard
    8.1 s): past the budget the scan gives up (the model then reads the page, linearly)."""
    for rest in ("y" * 100_000, " " * 100_000):  # a name; whitespace after the last attribute
        page = ("<p>" + "<y" * 4000 + rest + ">x").encode()
        found = scan(page, MAX_ATTRIBUTES, MAX_NAMES_FEW_TAGS)
        assert found.wide
        assert long_tag_at(page, found.wide, MAX_ATTRIBUTES, budget=1 << 20)  # gave up
        assert not too_deep(page, page.count(b"<"))  # read by the model: no wide tag
        small = page[:3000] + page[-4000:]  # 1,500 <y, 4,000 bytes: read whole, 3.4 MB
        assert not long_tag_at(small, ((0, len(small)),), MAX_ATTRIBUTES, budget=1 << 23)


@pytest.mark.parametrize(
    "page",
    [
        b'<a href="x">y</a><p class="a b c" id=\'q>r\'>t</p>',
        b"<p a=\"b\"c='d'e f/g>x</p>",
        b'<p ="x>" a b c d>',  # "=" starts a name: its quote opens nothing
        b'<script>if (a<b && c>d) { x = "<i a b c>" }</script><b c d>',
        b"<!-- <p a b c d e> --><p a b>",
        b"<p a b c",  # unterminated: lexbor reads its attributes
    ],
)
def test_the_bounds_hold_what_the_tokenizer_reads(page: bytes) -> None:
    """Each tag the attribute grammar reads from any ``<`` (wherever the tokenizer is) lies in
    a span whose bound holds it, and all of them together under ``attributes``."""
    found = scan(page, 1, 1 << 30)
    exact = Model(1 << 62, max_attributes=1 << 62, max_names=1 << 62)
    exact.run(page)
    assert found.attributes >= len(exact.attribute_names)
    for at in range(len(page)):
        held = len(attribute_names(attributes_of(page, at))) if page[at] == 0x3C else 0
        if held > 1:
            assert any(a <= at < b for a, b in found.wide), at


def test_counts_match_the_patterns_they_replace() -> None:
    """Tag starts, end tags and formatting end tags (any case, followed by a delimiter)."""
    page = b"<p>a</P><b>x</B ><big>y</big/></bigger></i\t></s></strong></a-></tt>< p></ b>"
    found = named_tags(page)
    assert (found.starts, found.tags) == (3, 12)
    assert formatting_ends(page, scan(page, 16, 1 << 20)) == 6


def test_trailing_separators_in_a_tag_are_read_once() -> None:
    """A tag's attribute text ending in a long run of whitespace or ``/`` (no name after it):
    each byte of the run started a name search that read the rest of it (200,000 spaces in
    one tag of a modelled page took the guard 21 s); the run holds no name, so it is cut."""
    for run in (" " * 200_000, " /" * 100_000, "\t\n\f\r" * 50_000):
        assert attribute_names(' a b="c d" e=f' + run) == ["a", "b", "e"]
        assert attribute_names((' a b="c d" e=f' + run).encode()) == [b"a", b"b", b"e"]
        page = "<p" + run + ">x</p>" + "<i></i>" * 5000  # modelled: past the cheap bound
        assert not too_deep(page.encode(), page.count("<"))


def test_tagscan_and_attributes_doctests() -> None:
    """The doctest examples of the scan and of the attribute grammar hold."""
    for module in (tagscan, attributes):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__
        assert result.attempted >= 2, module.__name__
