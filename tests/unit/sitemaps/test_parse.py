"""The streaming sitemap parser: every format, bad entries, truncation, chunked input."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from xml.sax.saxutils import escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changewatch.errors import InvalidURLError, SitemapError, SitemapParseError
from changewatch.sitemaps import (
    ChildSitemap,
    Limits,
    ParsedSitemap,
    SitemapParser,
    SitemapURL,
    parse_sitemap,
)

EX = "http://www.example.com/sitemap.xml"
URL_WWW = "https://www.example.com/sitemap.xml"


def _parse_chunks(data: bytes, url: str, sizes: list[int]) -> ParsedSitemap:
    """Feed ``data`` in pieces of the given sizes (the rest in one), like parse_sitemap."""
    parser = SitemapParser(url)
    entries: list[SitemapURL | ChildSitemap] = []
    position = 0
    for size in sizes:
        entries += parser.feed(data[position : position + size])
        position += size
    entries += parser.feed(data[position:])
    entries += parser.close()
    assert parser.kind is not None
    error = str(parser.error) if parser.error is not None else None
    return ParsedSitemap(parser.kind, entries, dict(parser.skipped), parser.truncated, error)


def test_gzip_body_already_decoded_is_not_inflated_twice() -> None:
    """gzipped=False: gzip bytes inside are refused, never inflated."""
    data = gzip.compress(b"<urlset><url><loc>http://www.example.com/</loc></url></urlset>")
    with pytest.raises(SitemapParseError, match="never inflated twice"):
        parse_sitemap(data, EX, gzipped=False)
    # And gzipped=True on plain bytes is a clear error, not a crash.
    with pytest.raises(SitemapParseError, match="gzip"):
        parse_sitemap(b"<urlset></urlset>", EX, gzipped=True)


def test_multi_member_gzip_and_trailing_garbage() -> None:
    """RFC 1952 members concatenated are one body; bytes after the last member are ignored."""
    half = b"<urlset><url><loc>http://www.example.com/a</loc></url>"
    rest = b"<url><loc>http://www.example.com/b</loc></url></urlset>"
    data = gzip.compress(half) + gzip.compress(rest) + b"\x00\x00garbage"
    parsed = parse_sitemap(data, EX)
    assert [e.loc for e in parsed.entries] == [
        "http://www.example.com/a",
        "http://www.example.com/b",
    ]
    assert _parse_chunks(data, EX, [1] * len(data)) == parsed


def test_sitemap_url_without_host_is_rejected() -> None:
    with pytest.raises(InvalidURLError):
        SitemapParser("/sitemap.xml")
    with pytest.raises(InvalidURLError):
        parse_sitemap(b"", "not a url")
    with pytest.raises(InvalidURLError):
        SitemapParser("http://[::1/sitemap.xml")


def test_limits_are_the_protocol_defaults() -> None:
    limits = Limits()
    assert (limits.max_urls, limits.max_bytes) == (50_000, 52_428_800)


def test_rss_feed() -> None:
    """RSS 2.0: <item><link>, pubDate in RFC 822; channel-level links are not entries."""
    body = b"""<?xml version="1.0"?>
<rss version="2.0"><channel><title>t</title><link>http://www.example.com/</link>
<item><title>a</title><link>http://www.example.com/a</link>
  <pubDate>Sat, 07 Sep 2002 09:42:31 +0100</pubDate></item>
<item><link> http://www.example.com/b </link><pubDate>not a date</pubDate></item>
<item><title>no link</title></item>
</channel></rss>"""
    parsed = parse_sitemap(body, "http://www.example.com/feed.rss")
    assert parsed.kind == "rss"
    assert [(e.loc, e.lastmod) for e in parsed.entries] == [
        ("http://www.example.com/a", datetime(2002, 9, 7, 8, 42, 31, tzinfo=UTC)),
        ("http://www.example.com/b", None),
    ]
    assert parsed.skipped == {"bad lastmod": 1, "missing loc": 1}


def test_sitemapindex_entries_are_child_sitemaps() -> None:
    body = b"""\xef\xbb\xbf  \n<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://example.com/s1.xml.gz</loc><lastmod>2024-05-01T10:00Z</lastmod></sitemap>
<sitemap><loc>https://evil.test/s2.xml</loc></sitemap>
</sitemapindex>"""
    parsed = parse_sitemap(body, "https://example.com/index.xml")
    assert parsed.entries == [
        ChildSitemap(
            "https://example.com/s1.xml.gz",
            datetime(2024, 5, 1, 10, 0, tzinfo=UTC),
            "https://example.com/index.xml",
        )
    ]
    assert parsed.skipped == {"off-host": 1}


@pytest.mark.parametrize(
    ("loc", "reason"),
    [
        ("", "missing loc"),
        ("   ", "missing loc"),
        ("/relative/path", "not http(s)"),
        ("javascript:alert(1)", "not http(s)"),
        ("ftp://www.example.com/f", "not http(s)"),
        ("file:///etc/passwd", "not http(s)"),
        ("http://www.example.com\\@evil.test/", "backslash"),
        ("http://www.example.com/a\x7fb", "control characters"),  # DEL is legal XML 1.0
        ("http://www.example.com/a\u0085b", "control characters"),
        ("http://www.example.com/a b", "whitespace"),
        ("http://www.example.com@evil.test/", "credentials"),
        ("http://user:pw@www.example.com/", "credentials"),
        ("http://www.example.com:99999/", "invalid URL"),
        ("http://[::1/", "invalid URL"),
        ("http:///path", "no host"),
        ("http://evil.test/", "off-host"),
        ("http://example.com/", "off-host"),  # sitemaps.org: www.example.com is another host
        ("http://www.example.com/" + "a" * 2100, "too long"),
    ],
)
def test_bad_locs_are_skipped_and_counted(loc: str, reason: str) -> None:
    """Each bad <loc> is skipped under its reason; the good entry around it is kept."""
    body = (
        "<urlset><url><loc>http://www.example.com/ok</loc></url>"
        f"<url><loc>{escape(loc)}</loc></url></urlset>"
    ).encode()
    parsed = parse_sitemap(body, EX)
    assert [e.loc for e in parsed.entries] == ["http://www.example.com/ok"]
    assert parsed.skipped == {reason: 1}


def test_text_sitemap_rules() -> None:
    """Blank lines ignored, CRLF handled, bad lines skipped, an over-long line not stored."""
    body = (
        b"http://www.example.com/1\r\n\r\n  http://www.example.com/2  \n"
        b"ftp://www.example.com/3\nhttp://www.example.com/\xff\nhttp://www.example.com/\x01\n"
        + b"http://www.example.com/"
        + b"x" * 20_000
        + b"\nhttp://www.example.com/4"
    )
    parsed = parse_sitemap(body, EX)
    assert [e.loc for e in parsed.entries] == [
        "http://www.example.com/1",
        "http://www.example.com/2",
        "http://www.example.com/4",
    ]
    assert parsed.skipped == {
        "not http(s)": 1,
        "not UTF-8": 1,
        "too long": 1,
        "control characters": 1,
    }
    assert _parse_chunks(body, EX, [7] * 3000) == parsed


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"", "empty document"),
        (b" \n\t ", "empty document"),
        (b"<html><body>hi</body></html>", "root element is <html>"),
        (b"<<<>>>", "not well-formed XML"),
        (b"Hello, world\nhttp://www.example.com/", "neither XML nor a list of URLs"),
        (b"<!-- only a comment -->", "not well-formed XML"),
        (b"\x00\x01\x02\x03", "neither XML nor a list of URLs"),
    ],
)
def test_not_a_sitemap(body: bytes, match: str) -> None:
    with pytest.raises(SitemapParseError, match=match):
        parse_sitemap(body, EX, content_type="text/html")


def test_truncated_xml_keeps_entries_and_says_so() -> None:
    """A body cut mid-way keeps the entries before the cut, sets truncated, counts it."""
    entries = "".join(f"<url><loc>http://www.example.com/{i}</loc></url>" for i in range(10))
    body = f"<urlset>{entries}<url><loc>http://www.exa".encode()
    parser = SitemapParser(EX)
    got = parser.feed(body) + parser.close()
    assert len(got) == 10
    assert parser.truncated
    assert parser.skipped == {"truncated": 1}
    assert parser.error is not None
    assert "broken XML" in str(parser.error)
    parsed = parse_sitemap(body, EX)
    assert parsed.truncated
    assert parsed.error == str(parser.error)
    assert _parse_chunks(body, EX, [3] * len(body)) == parsed
    # strict=True makes the same document an error.
    with pytest.raises(SitemapParseError, match="broken XML"):
        parse_sitemap(body, EX, strict=True)
    # A truncated gzip body likewise.
    packed = gzip.compress(body + b"ample.com/x</loc></url></urlset>")[:-20]
    parsed = parse_sitemap(packed, EX)
    assert parsed.truncated
    assert len(parsed.entries) >= 1


def test_broken_in_the_middle_stops_reading() -> None:
    """Malformed XML after good entries: entries before kept, nothing after is trusted."""
    body = (
        b"<urlset><url><loc>http://www.example.com/a</loc></url><url></bad>"
        b"<url><loc>http://www.example.com/b</loc></url></urlset>"
    )
    parsed = parse_sitemap(body, EX)
    assert [e.loc for e in parsed.entries] == ["http://www.example.com/a"]
    assert parsed.truncated


def test_parser_is_single_use() -> None:
    parser = SitemapParser(EX)
    parser.feed(b"http://www.example.com/")
    parser.close()
    with pytest.raises(SitemapParseError, match="already closed"):
        parser.feed(b"x")


def test_counters() -> None:
    body = b"<urlset><url><loc>http://www.example.com/a</loc></url></urlset>"
    packed = gzip.compress(body)
    parser = SitemapParser(EX)
    parser.feed(packed)
    parser.close()
    assert (parser.urls, parser.bytes_in, parser.bytes_out) == (1, len(packed), len(body))


def test_utf16_and_declared_encodings() -> None:
    """UTF-16 with a BOM and a declared ISO-8859-1 encoding are decoded by expat."""
    text = (
        '<?xml version="1.0" encoding="UTF-16"?><urlset>'
        "<url><loc>https://www.example.com/caf\u00e9</loc></url></urlset>"
    )
    parsed = parse_sitemap(text.encode("utf-16"), URL_WWW)
    assert [e.loc for e in parsed.entries] == ["https://www.example.com/caf\u00e9"]
    latin = text.replace("UTF-16", "ISO-8859-1").encode("latin-1")
    assert parse_sitemap(latin, URL_WWW) == parsed


def test_atom_link_and_date_choice() -> None:
    """Atom: the first alternate link (rel absent or "alternate"), updated before published."""
    body = b"""<feed xmlns="http://www.w3.org/2005/Atom">
<link href="https://www.example.com/feed-level"/>
<entry><link rel="edit" href="https://www.example.com/e/edit"/>
  <link rel="alternate" href="https://www.example.com/e1"/>
  <link href="https://www.example.com/e1-second"/>
  <published>2020-01-01T00:00:00Z</published><updated>2021-06-01T12:00:00+02:00</updated>
</entry>
<entry><link href="https://www.example.com/e2"/><published>2020-02-02</published></entry>
<entry><link rel="enclosure" href="https://www.example.com/file.mp3"/></entry>
</feed>"""
    parsed = parse_sitemap(body, URL_WWW)
    assert parsed.kind == "atom"
    assert [(e.loc, e.lastmod) for e in parsed.entries] == [
        ("https://www.example.com/e1", datetime(2021, 6, 1, 10, tzinfo=UTC)),
        ("https://www.example.com/e2", datetime(2020, 2, 2, tzinfo=UTC)),
    ]
    assert parsed.skipped == {"missing loc": 1}


def test_extension_elements_named_loc_are_not_entries() -> None:
    """<image:loc>, <video:content_loc> and a nested <loc> in a foreign namespace are ignored;
    only the sitemap namespace (or none, or the root's) counts."""
    body = b"""<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" xmlns:x="urn:x">
<url><image:loc>https://www.example.com/img.jpg</image:loc>
  <x:loc>https://www.example.com/x</x:loc><loc>https://www.example.com/page</loc>
  <x:lastmod>1999-01-01</x:lastmod></url>
</urlset>"""
    parsed = parse_sitemap(body, URL_WWW)
    assert [(e.loc, e.lastmod) for e in parsed.entries] == [("https://www.example.com/page", None)]


def test_junk_after_the_document_is_not_a_truncation() -> None:
    """Bytes after </urlset> (NUL padding, a second root): all entries read, not truncated."""
    body = b"<urlset><url><loc>https://www.example.com/a</loc></url></urlset>\n"
    for junk in (b"\x00\x00\x00", b"<urlset/>", b"garbage"):
        parsed = parse_sitemap(body + junk, URL_WWW)
        assert [e.loc for e in parsed.entries] == ["https://www.example.com/a"]
        assert not parsed.truncated
        assert parsed.skipped == {"junk after document": 1}
        assert _parse_chunks(body + junk, URL_WWW, [1] * len(body + junk)) == parsed


@pytest.mark.parametrize("encoding", ["UTF-i", "shift_jis", "utf-32", "rot13"])
def test_unusable_declared_encoding_is_a_parse_error(encoding: str) -> None:
    """An encoding expat cannot use (unknown, multi-byte, not text) is "not XML", no crash."""
    body = f'<?xml version="1.0" encoding="{encoding}"?><urlset/>'.encode()
    with pytest.raises(SitemapParseError, match="not well-formed XML"):
        parse_sitemap(body, URL_WWW)


def test_cdata_and_character_references_in_loc() -> None:
    """<![CDATA[…]]> and &#x…; are common in generated sitemaps: decoded, not refused."""
    body = b"""<urlset>
<url><loc><![CDATA[https://www.example.com/a?x=1&y=2]]></loc>
  <lastmod><![CDATA[ 2024-01-01 ]]></lastmod></url>
<url><loc>https://www.example.com/&#x62;&#99;</loc></url>
</urlset>"""
    parsed = parse_sitemap(body, URL_WWW)
    assert [(e.loc, e.lastmod) for e in parsed.entries] == [
        ("https://www.example.com/a?x=1&y=2", datetime(2024, 1, 1, tzinfo=UTC)),
        ("https://www.example.com/bc", None),
    ]


def test_html_soft_404_is_refused_by_name() -> None:
    """A server answering /sitemap.xml with an HTML page: refused, saying what it saw."""
    with pytest.raises(SitemapError, match=r"<!DOCTYPE html>"):
        parse_sitemap(b"<!DOCTYPE html>\n<html><body>Not found</body></html>", URL_WWW)
    with pytest.raises(SitemapParseError, match=r"root element is <html>"):
        parse_sitemap(b"<html><body>Not found</body></html>", URL_WWW)


_paths = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x2FFF, exclude_characters="\\"),
    max_size=40,
).filter(lambda text: not any(0x7F <= ord(c) <= 0x9F or c.isspace() for c in text))
_stamps = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_paths, st.none() | _stamps), max_size=30),
    st.sampled_from(["urlset", "sitemapindex"]),
    st.integers(min_value=1, max_value=200),
    st.booleans(),
)
def test_generated_sitemaps_round_trip(
    pages: list[tuple[str, datetime | None]], root: str, chunk: int, packed: bool
) -> None:
    """Any sitemap we write (escaped paths, ISO dates) reads back exactly, in any chunking.
    (Paths exclude what the rules refuse: whitespace, controls, backslashes.)"""
    tag = "url" if root == "urlset" else "sitemap"
    parts = [f'<?xml version="1.0" encoding="UTF-8"?><{root} xmlns="{NS}">']
    for path, stamp in pages:
        date = f"<lastmod>{stamp.isoformat()}</lastmod>" if stamp else ""
        parts.append(f"<{tag}><loc>{escape('https://www.example.com/' + path)}</loc>{date}</{tag}>")
    body = ("".join(parts) + f"</{root}>").encode()
    if packed:
        body = gzip.compress(body)
    parsed = _parse_chunks(body, URL_WWW, [chunk] * (len(body) // chunk))
    kind = SitemapURL if root == "urlset" else ChildSitemap
    expected = [kind("https://www.example.com/" + p, s, URL_WWW) for p, s in pages]
    assert parsed.entries == expected
    assert parsed.skipped == {}


NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def test_gzip_inside_gzip_is_not_inflated_twice() -> None:
    """A .gz file gzipped again (a double-encoded body): the inner layer is refused."""
    inner = gzip.compress(b"<urlset><url><loc>http://www.example.com/</loc></url></urlset>")
    with pytest.raises(SitemapParseError, match="never inflated twice"):
        parse_sitemap(gzip.compress(inner), EX)
