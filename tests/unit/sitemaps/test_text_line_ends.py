"""Plain-text sitemaps end their lines with CR LF, LF or a lone CR, whole or in any chunks."""

from __future__ import annotations

import pytest

from changewatch.sitemaps import ParsedSitemap, SitemapParser, parse_sitemap

SITEMAP = "https://www.example.com/sitemap.txt"
#: A text sitemap as sites write them: a blank line, indented and trailing-space lines, an
#: encoded and a raw UTF-8 path, a query, one bad line and one from another host.
LINES = [
    "https://www.example.com/",
    "https://www.example.com/about-us",
    "",
    "  https://www.example.com/products/widget-2000?colour=blue&size=xl  ",
    "https://www.example.com/blog/2024/05/caf%C3%A9-opening",
    "https://www.example.com/blog/2024/06/crème-brûlée",
    "ftp://www.example.com/files/catalogue.pdf",
    "https://other.example.org/not-ours",
    "https://www.example.com/contact",
]
EXPECTED = [
    "https://www.example.com/",
    "https://www.example.com/about-us",
    "https://www.example.com/products/widget-2000?colour=blue&size=xl",
    "https://www.example.com/blog/2024/05/caf%C3%A9-opening",
    "https://www.example.com/blog/2024/06/crème-brûlée",
    "https://www.example.com/contact",
]


def _body(end: str, *, final_end: bool = True) -> bytes:
    text = end.join(LINES) + (end if final_end else "")
    return text.encode("utf-8")


def _one_byte_chunks(data: bytes) -> ParsedSitemap:
    parser = SitemapParser(SITEMAP)
    entries = []
    for i in range(len(data)):
        entries += parser.feed(data[i : i + 1])
    entries += parser.close()
    assert parser.kind is not None
    return ParsedSitemap(parser.kind, entries, dict(parser.skipped), parser.truncated, None)


@pytest.mark.parametrize("end", ["\r\n", "\n", "\r"], ids=["crlf", "lf", "cr"])
@pytest.mark.parametrize("final_end", [True, False], ids=["final-end", "no-final-end"])
def test_text_sitemap_line_ends(end: str, final_end: bool) -> None:
    """Every line end style gives the same URLs and skips, fed whole or byte by byte."""
    body = _body(end, final_end=final_end)
    whole = parse_sitemap(body, SITEMAP)
    assert whole.kind == "text"
    assert [entry.loc for entry in whole.entries] == EXPECTED
    assert whole.skipped == {"not http(s)": 1, "off-host": 1}
    assert _one_byte_chunks(body) == whole


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    """A CR ending one chunk and the LF opening the next end one line, not two entries."""
    parser = SitemapParser(SITEMAP)
    entries = parser.feed(b"https://www.example.com/a\r")
    entries += parser.feed(b"\nhttps://www.example.com/b\r")
    entries += parser.feed(b"\n")
    entries += parser.close()
    assert [entry.loc for entry in entries] == [
        "https://www.example.com/a",
        "https://www.example.com/b",
    ]
    assert parser.skipped == {}


def test_cr_only_sitemap_of_many_lines() -> None:
    """A CR-only sitemap of 10,000 URLs is 10,000 entries, not one over-long line."""
    body = b"".join(b"https://www.example.com/p/%d\r" % i for i in range(10_000))
    parsed = parse_sitemap(body, SITEMAP)
    assert len(parsed.entries) == 10_000
    assert parsed.entries[-1].loc == "https://www.example.com/p/9999"
    assert parsed.skipped == {}
