"""Template blocks (issue 20): which blocks of a page count towards its host's template, and
how learned text hashes and block keys classify a page — pure, no store."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from changewatch.fingerprint import page_text
from changewatch.fingerprint.templates import template_set, template_values

PROSE = "<p>Table {i} is made of oak, seats six people and ships in two boxes.</p>"


def _page(promo: str, i: int = 1, *, main: bool = False) -> str:
    body = f"<div class='promo'>{promo}</div><div><h1>Table {i}</h1>{PROSE.format(i=i)}</div>"
    if main:
        body = f"<main>{body}</main>"
    return f"<html><head><title>Table {i}</title></head><body>{body}</body></html>"


def _learned(html: str, path: str) -> frozenset[bytes]:
    """The template set a store would hand back had it learned every value of ``path``."""
    values = template_values(page_text(html, with_blocks=True).blocks)
    return template_set((v.kind, v.value, v.key) for v in values if v.path == path)


def test_candidates_are_short_main_blocks_never_prose_title_or_marked() -> None:
    """The promo and the heading count (text and slot each); the title, the paragraph of
    prose and everything on a page with a main marker do not."""
    values = template_values(page_text(_page("Free shipping"), with_blocks=True).blocks)
    assert sorted((v.kind, v.path) for v in values) == [
        ("slot", "html/body/div"),
        ("slot", "html/body/div/h1"),
        ("text", "html/body/div"),
        ("text", "html/body/div/h1"),
    ]
    marked = page_text(_page("Free shipping", main=True), with_blocks=True).blocks
    assert template_values(marked) == ()


def test_a_learned_text_and_slot_make_the_block_chrome_whatever_it_says() -> None:
    """With the promo's text and slot learned, the promo is chrome; at its slot a new promo
    text is chrome too, so a site-wide promo change is a chrome change only."""
    known = _learned(_page("Free shipping"), "html/body/div")
    before = page_text(_page("Free shipping"), template_blocks=known)
    after = page_text(_page("Winter sale now on"), template_blocks=known)
    assert (before.chrome, after.chrome) == ("free shipping", "winter sale now on")
    assert before.content == after.content
    assert "shipping" not in before.content


def test_templates_never_move_prose_nor_the_explicit_main_content() -> None:
    """Every value of the page learned: the prose stays content; on a page with <main>
    nothing it marks moves; without any learned value nothing changes at all."""
    page = _page("Free shipping")
    values = template_values(page_text(page, with_blocks=True).blocks)
    everything = template_set((v.kind, v.value, v.key) for v in values)
    parts = page_text(page, template_blocks=everything)
    assert "made of oak" in parts.content
    marked = _page("Free shipping", main=True)
    assert page_text(marked, template_blocks=everything) == page_text(marked)
    assert page_text(page, template_blocks=frozenset()) == page_text(page)


def test_the_values_of_a_page_are_bounded() -> None:
    """A page of 500 unique short blocks shows at most ``limit`` values, in page order."""
    page = "<body>" + "".join(f"<div>junk {j}</div>" for j in range(500)) + "</body>"
    blocks = page_text(page, with_blocks=True).blocks
    assert len(template_values(blocks)) == 128
    assert len(template_values(blocks, limit=10)) == 10


@given(st.lists(st.sampled_from(["Sale", "Free shipping", "New", "Follow us"]), max_size=6))
def test_values_are_distinct_and_sorted(lines: list[str]) -> None:
    """Repeated blocks count once per page; the values come sorted (the store's blob)."""
    page = "<body>" + "".join(f"<div>{line}</div>" for line in lines) + "</body>"
    values = template_values(page_text(page, with_blocks=True).blocks)
    raw = [v.value for v in values]
    assert raw == sorted(set(raw))
