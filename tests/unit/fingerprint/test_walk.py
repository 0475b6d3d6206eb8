"""The block walk (fingerprint/walk.py): what it reads does not depend on what the process
read before, and its fast paths cut the same blocks as the element-by-element walk."""

from __future__ import annotations

import gzip
import subprocess
import sys

import pytest
import shared_corpus
from selectolax.lexbor import LexborHTMLParser

from changewatch.fingerprint import DEFAULT_POLICY, page_text
from changewatch.fingerprint.tree import prepare
from changewatch.fingerprint.walk import _text_length, segment


def test_links_inside_paragraphs_are_found_by_a_fresh_process() -> None:
    """The first page a process reads finds the links of its paragraphs (the walk once knew
    ``a`` only after meeting one outside a ``p``, so such links were missed)."""
    code = (
        "from changewatch.fingerprint import page_text\n"
        "html = '<p>See <a href=\"/terms\">the terms of service</a> today.</p>'\n"
        "print(page_text(html, url='https://example.com/').links)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "('https://example.com/terms',)"
    parts = page_text(
        "<p>See <a href='/terms'>the terms</a>.</p><p><area href='/map'>Map</p>",
        url="https://example.com/",
    )
    assert parts.links == ("https://example.com/map", "https://example.com/terms")


def test_fast_paths_cut_the_same_blocks() -> None:
    """The loop's shortcuts (a link of text alone, a p of text alone, a landmark's links
    counted without lexbor's text call) give the blocks, texts and link counts the general
    path gives: one page exercising each, with its exact blocks."""
    page = (
        "<html><head><title>T</title></head><body>"
        "<nav><a href='/a'>Home</a> <a href='/b'> </a><a href='/c'>\u00a0</a>"
        "<a href='/d'><b>Deep</b> link</a></nav>"
        "<main><p>Plain paragraph text only.</p>"
        "<p>With <a href='/e'>a link</a> and <a href='#top'>anchor</a>.</p>"
        "<div>Lead <a href='/f'>text link</a> tail</div>"
        "<h2><a href='#s1'>Section one</a></h2></main></body></html>"
    )
    tree = LexborHTMLParser(page)
    found = prepare(tree, DEFAULT_POLICY)
    assert found is not None
    hrefs: list[str] = []
    segments = segment(tree.root, found.main_ids, found.chrome_ids, hrefs)
    got = [(s.path, " ".join(s.text.split()), s.mark, s.link_chars) for s in segments]
    assert got == [
        ("html/title", "T", 0, 0),
        ("html/body/nav", "Home Deep link", 2, 4 + 1 + 10),  # "Deep" + " " + " link"
        ("html/body/main/p", "Plain paragraph text only.", 1, 0),
        ("html/body/main/p", "With a link and anchor .", 1, 6 + 6),
        ("html/body/main/div", "Lead text link tail", 1, 9),
        ("html/body/main/h2", "Section one", 1, 0),
    ]
    assert sorted(hrefs) == ["#s1", "#top", "/a", "/b", "/c", "/d", "/e", "/f"]


@pytest.mark.corpus
def test_text_length_is_lexbors_on_every_element_of_the_corpus() -> None:
    """_text_length equals len(text(separator=" ", skip_empty=True)) on every element of ten
    corpus pages (its shortcut for an element of text alone included)."""
    paths = sorted(shared_corpus.path("pages-readability").glob("*.html.gz"))[:10]
    assert paths
    checked = 0
    for path in paths:
        tree = LexborHTMLParser(gzip.decompress(path.read_bytes()))
        assert tree.root is not None
        for node in tree.root.traverse():
            assert _text_length(node) == len(node.text(separator=" ", skip_empty=True))
            checked += 1
    assert checked > 1000
