"""Fuzz: the guard against hostile pages — the nesting model, attribute limit, text cap."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from changewatch import PageTooComplexError
from changewatch.fingerprint import fingerprint, normalise, normalise_text
from changewatch.fingerprint.guard import (
    MAX_ADOPTIONS,
    MAX_ATTRIBUTES,
    MAX_NAMES,
    MAX_NAMES_FEW_TAGS,
    MAX_NESTING,
    check_names,
    normalise_bounded,
    too_deep,
)
from changewatch.fingerprint.nesting import Model, attribute_names, attributes_of, nesting_depth
from changewatch.fingerprint.tagscan import formatting_ends, long_tag_at, named_tags, scan
from changewatch.fingerprint.text import _fold, _normalise_collapsed

from .strategies import FUZZ, html_documents


def _lexbor_depth(html: str | bytes) -> int:
    """The deepest element of lexbor's tree (html counts 1)."""
    tree = LexborHTMLParser(html)
    deepest = 0
    todo = [(tree.root, 1)] if tree.root is not None else []
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        child = node.child
        while child is not None:
            if child.tag not in ("-text", "_text", "-comment", "_comment"):
                todo.append((child, depth + 1))
            child = child.next
    return deepest


@pytest.mark.parametrize(
    "page",
    [
        "<div></x>" * 5000,  # end tags that close nothing
        "<div><!--</-->" * 5000,  # end tags inside comments
        "<div><!--</div>-->" * 5000,
        "<div title='</div>'>" * 5000,  # end tags inside attribute values
        "<div><script></div></script>" * 5000,  # … inside raw text
        "<div><textarea></div></textarea>" * 5000,
        "<div><script><!--<script></div></script>--></script>" * 5000,  # double escaped
        "<svg><div/>" * 5000,  # a self-closing HTML element after breaking out of SVG
    ],
    ids=lambda page: page[:40],
)
def test_end_tags_that_close_nothing_do_not_hide_depth(page: str) -> None:
    """Each of these nests 5,000 deep for the parser and for the model (which the estimate
    it replaces put at 1 or 0): such pages take the fallback."""
    assert nesting_depth(page) > MAX_NESTING
    assert _lexbor_depth(page[: len(page) // 10]) > 400  # the parser's depth, a tenth of it


@pytest.mark.parametrize(
    ("page", "depth"),
    [
        ("<p>a<p>b<p>c", 4),  # p closes p
        ("<ul>" + "<li>x" * 100 + "</ul>", 5),
        ("<table>" + "<tr><td>a<td>b" * 100 + "</table>", 7),  # implied tbody
        ("<dl>" + "<dt>a<dd>b" * 100 + "</dl>", 5),
        ("<select>" + "<option>a" * 100 + "</select>", 5),
        ("<svg>" + "<path d='M0'/>" * 100 + "</svg>", 4),
        ("<div>" * 50 + "</div>" * 50 + "<span>x</span>" * 100, 53),
    ],
)
def test_what_the_parser_closes_is_closed(page: str, depth: int) -> None:
    """Implied end tags that real pages rely on (li, p, cells, options, SVG's />) close."""
    assert nesting_depth(page) == depth


@FUZZ
@given(html_documents())
def test_the_model_never_underestimates_the_parser(html: str | bytes) -> None:
    """For any document, the model's depth is at least the depth of lexbor's tree."""
    assert nesting_depth(html, limit=10**9) >= _lexbor_depth(html)


def test_hostile_nesting_takes_the_fallback_with_its_text() -> None:
    """The shapes of issue 16 are read by the tag-stripping fallback: text found."""
    assert normalise("<div></x>" * 20_000 + "deep text") == "deep text"
    assert normalise("<div><!--</-->" * 20_000 + "deep text") == "deep text"


def test_many_attributes_on_one_element_are_refused() -> None:
    """More than MAX_ATTRIBUTES attributes on one element: PageTooComplexError naming the
    limit; exactly MAX_ATTRIBUTES is read. Also on pages of many tags (the model's pass)."""
    names = " ".join(f"a{i}" for i in range(MAX_ATTRIBUTES))
    assert fingerprint(f"<p {names}>x</p>").text_length == 1
    for page in (f"<p {names} z>x</p>", "<i></i>" * 5000 + f"<p {names} z='>'>x</p>"):
        with pytest.raises(PageTooComplexError) as caught:
            fingerprint(page)
        assert (caught.value.limit_name, caught.value.limit) == ("attributes", MAX_ATTRIBUTES)
        assert f"more than {MAX_ATTRIBUTES} attributes" in str(caught.value)


def test_attributes_are_counted_as_the_tokenizer_reads_them() -> None:
    """Quoted values may hold spaces, ">" and "<" (one attribute each); a quoted value
    followed by a name without a space starts another attribute."""
    assert len(attribute_names(' x="a b > < c=d"' * 10)) == 10
    assert attribute_names(" a=\"\"b=''c d=e/ f") == ["a", "b", "c", "d", "f"]
    check_names("<p" + ' x="a b > < c=d"' * MAX_ATTRIBUTES + ">", 3)
    with pytest.raises(PageTooComplexError):
        check_names("<p" + ' x=""' * (MAX_ATTRIBUTES + 1), 1)  # unterminated: still read


@pytest.mark.parametrize("many", [True, False], ids=["many tags", "few tags"])
def test_many_distinct_attribute_names_are_refused(many: bool) -> None:
    """More distinct attribute names than the page may hold (spread over elements: 256,000
    took 52 s), on pages of many small tags (MAX_NAMES) or of few large ones
    (MAX_NAMES_FEW_TAGS): refused; a script's text never counts."""
    if many:
        page = "".join(f'<p a{i}="v">x</p>' for i in range(MAX_NAMES + 1))
    else:
        per = MAX_ATTRIBUTES
        page = "".join(
            "<p " + " ".join(f"a{t}_{i}" for i in range(per)) + ">x</p>"
            for t in range(MAX_NAMES_FEW_TAGS // per + 1)
        )
    with pytest.raises(PageTooComplexError) as caught:
        fingerprint(page)
    assert caught.value.limit_name == "names"
    script = "<script>'<p " + " ".join(f"a{i}" for i in range(2 * MAX_ATTRIBUTES)) + ">'</script>"
    assert fingerprint(script + "<p>x</p>" * (3000 if many else 3)).text_length > 0


def test_many_distinct_tag_names_are_refused() -> None:
    """More than MAX_NAMES distinct tag names (256,000 took 93 s): refused."""
    with pytest.raises(PageTooComplexError) as caught:
        fingerprint("".join(f"<p{i}>x</p{i}>" for i in range(MAX_NAMES + 1)))
    assert caught.value.limit_name == "names"


def test_costly_repeated_deep_blocks_take_the_fallback() -> None:
    """Blocks 4,000 deep, repeated (under the depth limit, but 16 s at 10 MiB): the stack
    walks cost over NESTING_WORK_PER_TAG per tag, so the fallback reads the page."""
    block = "<div>" * 4000 + "x" + "</div>" * 4000
    assert too_deep(block * 200, (block * 200).count("<"))
    assert not too_deep("<div>" * 4000 + "</div>" * 4000, 8000)


def test_nfkc_expansion_is_refused_past_the_cap() -> None:
    """U+FDFA normalises to 18 characters: text whose normal form would pass twice its
    length (plus 64 Ki) is refused (PageTooComplexError naming the text limit), never
    built; short runs are normalised as before."""
    count = 100_000
    with pytest.raises(PageTooComplexError) as caught:
        normalise_text("\ufdfa" * count)
    assert caught.value.limit_name == "text"
    with pytest.raises(PageTooComplexError):
        fingerprint(("<p>" + "\ufdfa" * count + "</p>").encode())
    assert len(normalise_text("\ufdfa" * 1000)) == 18_000
    text = "ﬁ ½ " * 40_000  # real expansions (ligatures, fractions) pass
    assert normalise_text(text) == _normalise_collapsed(" ".join(text.split()))


_texts = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",))
    | st.sampled_from(" \u0301\ufdfa\u1100\u1161\u11a8\u0b47\u0b3e\u00a8ﬁẞ"),
    max_size=200,
)


@FUZZ
@given(_texts, st.integers(1, 20))
def test_normalising_in_pieces_equals_normalising_whole(text: str, piece: int) -> None:
    """Folding collapsed text in pieces cut at safe boundaries never changes its normal form
    (combining marks, Hangul jamo and compositions across a cut included)."""
    text = " ".join(text.split())
    whole = _normalise_collapsed(text)
    assert normalise_bounded(text, _fold, piece=piece, limit=10**9) == whole
    assert unicodedata.is_normalized("NFKC", whole)


def test_a_refused_page_is_named_by_the_url_it_was_fingerprinted_under() -> None:
    """fingerprint(url=…) names the page in the error; without a URL it says "the page"."""
    html = "<p " + " ".join(f"a{i}=1" for i in range(MAX_ATTRIBUTES + 1)) + ">x</p>"
    with pytest.raises(PageTooComplexError) as caught:
        fingerprint(html, url="https://example.com/huge")
    assert caught.value.url == "https://example.com/huge"
    assert "'https://example.com/huge'" in str(caught.value)
    with pytest.raises(PageTooComplexError) as anonymous:
        fingerprint(html)
    assert anonymous.value.url is None
    assert "the page is refused" in str(anonymous.value)


def test_end_tags_bring_names_too() -> None:
    """lexbor keeps the names of end tags as of start tags (200,000 distinct ``</xN>``: 5.6 s
    to parse, passed by the model when it counted start tags only), and reads an end tag's
    attributes: both are counted."""
    with pytest.raises(PageTooComplexError) as caught:
        fingerprint("<p>x" + "".join(f"</x{i}>" for i in range(MAX_NAMES + 1)))
    assert caught.value.limit_name == "names"
    names = " ".join(f"a{i}" for i in range(MAX_ATTRIBUTES + 1))
    for page in (f"<p>x</p {names}>", "<i></i>" * 5000 + f"<p>x</p {names}>"):
        with pytest.raises(PageTooComplexError) as caught:
            fingerprint(page)
        assert caught.value.limit_name == "attributes"
    with pytest.raises(PageTooComplexError) as caught:
        check_names("<p>x</p " + " ".join(f"a{i}" for i in range(MAX_NAMES_FEW_TAGS + 1)), 3)
    assert caught.value.limit_name in ("attributes", "names")


def test_pages_under_the_work_bound_skip_the_model() -> None:
    """A page of more than MAX_NESTING ``<`` but few start tags (half of them end tags, as
    real pages are) is bounded without the model; its names are still checked, with a
    lower per-tag threshold (more than 4,096 tags: tags of more than 12 attributes read)."""
    page = "<span>x</span>" * 2500  # 5,000 "<", 2,500 start tags
    assert not too_deep(page, page.count("<"))
    spread = "".join(  # 30,000 names in small tags, 40,000 in large: 5,400 "<"
        "<b " + " ".join(f"n{t}_{i}" for i in range(size)) + ">x</b>"
        for t, size in enumerate([12] * 2500 + [200] * 200)
    )
    with pytest.raises(PageTooComplexError) as caught:
        too_deep(spread, spread.count("<"))
    assert caught.value.limit_name == "names"
    deep = "<span>" * 2500 + "</x>" * 2500  # the same count, nesting 2,500 deep
    assert not too_deep(deep, deep.count("<"))
    assert too_deep("<span>" * 5000 + "</x>" * 5000, 10_000)  # over the bound: modelled


def test_end_tags_walking_the_stack_take_the_fallback() -> None:
    """An end tag that closes nothing walks lexbor's stack down to a special element: 2,000
    open spans then 250,000 ``</x>`` took 2.9 s to parse (10 MiB of them: 31 s), though the
    stack is shallow; end tags count as stack walks too, so the fallback reads the page."""
    page = "<span>" * 2000 + "</x>" * 250_000
    assert too_deep(page, page.count("<"))
    assert normalise(page + "text") == "text"


@pytest.mark.parametrize(("opened", "ends"), [(700, 2690), (500, 7000), (100, MAX_ADOPTIONS + 1)])
def test_misnested_formatting_end_tags_take_the_fallback(opened: int, ends: int) -> None:
    """Each end tag of a formatting element with a special element opened since runs the
    adoption agency, which clones and moves nodes at a cost growing with the runs before
    (700 distinct ``<b>``, 700 ``<div>`` and 2,690 ``</b>``, 4,090 ``<`` in all: 3.2 s to
    parse; 7,000 ``</b>``: 152 s); past MAX_ADOPTIONS such runs the fallback reads the page,
    on pages of few ``<`` too. Well nested formatting elements run none."""
    page = "".join(f"<b id={i}>" for i in range(opened)) + "<div>" * opened + "</b>" * ends
    assert too_deep(page, page.count("<"))
    assert normalise(page + "text") == "text"
    nested = "<div><b>x</b></div>" * 2500
    assert not too_deep(nested, nested.count("<"))


_WS_CHARS = " \t\n\f\r"
_soup = st.lists(
    st.sampled_from(["<", ">", '"', "'", "=", "/", "</", "<p", "<b", "a", "bc", "</b", "<!--"])
    | st.sampled_from(list(_WS_CHARS)),
    max_size=80,
).map(lambda parts: "".join(parts).encode())
_FORMATTING_END = re.compile(
    rb"</(?i:[abisu]|big|code|em|font|nobr|small|strike|strong|tt)[\t\n\f\r />]"
)


@FUZZ
@given(_soup, st.integers(0, 4))
def test_the_scan_bounds_every_tag_the_grammar_reads(page: bytes, widest: int) -> None:
    """Tag soup of quotes, ``=``, ``>``, whitespace and names: each tag the attribute grammar
    reads from any ``<`` (wherever the tokenizer stands) with more than ``widest``
    attributes lies in a span the scan flags, the scan's sum is at least the distinct names
    the tokenizer reads, and its counts are those of the patterns they replace."""
    found = scan(page, widest, 1 << 30)
    exact = Model(1 << 62, max_attributes=1 << 62, max_names=1 << 62)
    exact.run(page)
    assert found.attributes >= len(exact.attribute_names)
    for at in range(len(page)):
        if page[at] == 0x3C and len(attribute_names(attributes_of(page, at))) > widest:
            assert any(begin <= at < stop for begin, stop in found.wide), at
            assert long_tag_at(page, found.wide, widest, 1 << 30)
    assert formatting_ends(page, found) == len(_FORMATTING_END.findall(page))
    opened = re.findall(rb"<(/?)[A-Za-z]", page)
    named = named_tags(page)
    assert (named.starts, named.tags) == (opened.count(b""), len(opened))
