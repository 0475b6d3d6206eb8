"""Sitemap XML a server sends in tiny pieces: a long token costs what 64 KiB pieces cost."""

from __future__ import annotations

import pytest

from changewatch.errors import SitemapLimitError, SitemapParseError
from changewatch.sitemaps import ChildSitemap, SitemapParser, SitemapURL, parse_sitemap

from ._timing import assert_linear

URL = "https://example.com/sitemap.xml"
ENTRY = b"<url><loc>https://example.com/a</loc></url>"


def _long_attribute(size: int) -> bytes:
    return b'<urlset><url a="' + b"x" * size + b'"><loc>https://example.com/a</loc></url></urlset>'


def _feed(body: bytes, size: int) -> list[SitemapURL | ChildSitemap]:
    parser = SitemapParser(URL)
    out: list[SitemapURL | ChildSitemap] = []
    for at in range(0, len(body), size):
        out += parser.feed(body[at : at + size])
    return out + parser.close()


def test_long_token_in_1_kib_pieces_costs_linear_time() -> None:
    """A token of n bytes fed 1 KiB at a time costs O(n), not O(n²/1 KiB) (expat 2.5)."""
    assert_linear(
        lambda body: _feed(body, 1024),
        lambda n: _long_attribute(n * 4),
        label="long attribute, 1 KiB pieces",
        cap=8192,  # n stops at 16,000: 16 x 4 x 16,000 bytes, under MAX_TOKEN_BYTES
    )


def test_long_tokens_in_1_kib_pieces_keep_every_entry() -> None:
    """Two 1 MB attributes fed in 1 KiB pieces: both entries, nothing skipped."""
    token = b'<url a="' + b"x" * 1_000_000 + b'"><loc>https://example.com/a</loc></url>'
    body = b"<urlset>" + token * 2 + b"</urlset>"
    assert [entry.loc for entry in _feed(body, 1024)] == ["https://example.com/a"] * 2


def test_small_tokens_are_parsed_as_they_arrive() -> None:
    """Entries of a plain sitemap fed in small pieces come out of the feed that completes them."""
    parser = SitemapParser(URL)
    assert parser.feed(b"<urlset>") == []
    for _ in range(100):
        assert len(parser.feed(ENTRY)) == 1
    assert parser.close() == []


def test_token_over_max_token_still_refused_in_small_pieces() -> None:
    """A 2 MB attribute fed 1 KiB at a time breaks max_token, as when fed whole."""
    with pytest.raises(SitemapLimitError) as caught:
        _feed(_long_attribute(2_000_000), 1024)
    assert caught.value.limit == "max_token"


@pytest.mark.parametrize("size", [1, 7, 1024, 100_000])
def test_broken_xml_reports_the_same_position_whatever_the_pieces(size: int) -> None:
    """Where a document breaks off is reported alike for any piece size."""
    body = b"<urlset>" + ENTRY * 3 + b'<url a="' + b"x" * 200_000 + b'"><loc>x</lo></url>'
    whole = parse_sitemap(body, URL)
    parser = SitemapParser(URL)
    entries: list[SitemapURL | ChildSitemap] = []
    for at in range(0, len(body), size):
        entries += parser.feed(body[at : at + size])
    entries += parser.close()
    assert whole.truncated
    assert parser.truncated
    assert str(parser.error) == whole.error
    assert len(entries) == len(whole.entries) == 3


def test_text_after_a_long_root_tag_is_still_refused() -> None:
    """A document that is not XML past a long first tag is still refused at close."""
    with pytest.raises(SitemapParseError):
        _feed(b'<x a="' + b"y" * 100_000 + b'"', 1024)
