"""Hostile sitemaps: each refused with a clear error naming what was wrong, memory flat."""

from __future__ import annotations

import gzip
import sys
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from changewatch.errors import (
    SitemapError,
    SitemapLimitError,
    SitemapParseError,
    SitemapRefusedError,
)
from changewatch.sitemaps import Limits, SitemapParser, parse_sitemap

URL = "https://www.example.com/sitemap.xml"
MIB = 1_048_576


def _feed_all(parser: SitemapParser, chunks: Iterator[bytes]) -> int:
    """Feed every chunk and close; returns how many entries came out (none are kept)."""
    count = 0
    for chunk in chunks:
        count += len(parser.feed(chunk))
    return count + len(parser.close())


def _peak(action: Callable[[], object]) -> tuple[int, object]:
    """(peak bytes allocated by Python while running action, what it returned or raised)."""
    tracemalloc.start()
    try:
        try:
            outcome: object = action()
        except SitemapError as exc:
            outcome = exc
        return tracemalloc.get_traced_memory()[1], outcome
    finally:
        tracemalloc.stop()


def _urls(count: int, host: str = "www.example.com") -> Iterator[bytes]:
    yield b'<?xml version="1.0" encoding="UTF-8"?>\n'
    yield b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    for i in range(count):
        yield (
            f"<url><loc>https://{host}/page/{i}</loc><lastmod>2024-01-02</lastmod></url>\n"
        ).encode()
    yield b"</urlset>\n"


# -- DTDs and entities ---------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset><url><loc>https://www.example.com/&lol9;</loc></url></urlset>
"""


def _quadratic() -> bytes:
    big = "A" * 100_000
    refs = "&a;" * 10_000
    return (
        f'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "{big}">]>'
        f"<urlset><url><loc>https://www.example.com/{refs}</loc></url></urlset>"
    ).encode()


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
@pytest.mark.parametrize("name", ["billion laughs", "quadratic blow-up", "empty doctype"])
def test_dtd_refused(name: str, chunk: int) -> None:
    """Any DOCTYPE refuses the file at once, before an entity is defined or expanded."""
    body = {
        "billion laughs": BILLION_LAUGHS,
        "quadratic blow-up": _quadratic(),
        "empty doctype": b"<!DOCTYPE urlset><urlset></urlset>",
    }[name]
    parser = SitemapParser(URL)
    peak, outcome = _peak(
        lambda: _feed_all(parser, (body[i : i + chunk] for i in range(0, len(body), chunk)))
    )
    assert isinstance(outcome, SitemapRefusedError)
    assert "DOCTYPE" in str(outcome)
    assert outcome.url == URL
    assert parser.urls == 0
    assert peak < 2 * MIB + 2 * len(body)
    # The parser stays failed: more input gives the same error, never a half-state.
    with pytest.raises(SitemapRefusedError):
        parser.feed(b"<url/>")


@pytest.fixture
def opened_paths() -> Iterator[list[str]]:
    """Every path Python opens while the test runs (an audit hook; hooks cannot be removed,
    so it records only while the fixture is active)."""
    seen: list[str] = []
    active = [True]

    def hook(event: str, args: tuple[object, ...]) -> None:
        if active[0] and event == "open" and args:
            seen.append(str(args[0]))

    sys.addaudithook(hook)
    yield seen
    active[0] = False


@pytest.mark.parametrize(
    "template",
    [
        # General external entity.
        '<!DOCTYPE u [<!ENTITY xxe SYSTEM "{uri}">]><urlset><url><loc>&xxe;</loc></url></urlset>',
        # External parameter entity (the out-of-band XXE form).
        '<!DOCTYPE u [<!ENTITY % p SYSTEM "{uri}"> %p;]><urlset/>',
        # External DTD subset.
        '<!DOCTYPE urlset SYSTEM "{uri}"><urlset/>',
    ],
)
def test_external_entity_to_a_local_file_is_never_read(
    tmp_path: Path, opened_paths: list[str], template: str
) -> None:
    """XXE: refused, the file is never opened, its content appears nowhere."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    before = len(opened_paths)
    body = template.format(uri=secret.as_uri()).encode()
    with pytest.raises(SitemapRefusedError) as caught:
        parse_sitemap(body, URL)
    assert "TOP-SECRET" not in str(caught.value)
    assert not [path for path in opened_paths[before:] if "secret" in path]


def test_undeclared_entity_and_xinclude_do_nothing(opened_paths: list[str]) -> None:
    """No DTD: an entity reference is broken XML; XInclude is not processed, just ignored."""
    body = (
        b'<urlset xmlns:xi="http://www.w3.org/2001/XInclude">'
        b"<url><loc>https://www.example.com/a</loc></url>"
        b'<xi:include href="file:///etc/passwd" parse="text"/>'
        b"<url><loc>&xxe;</loc></url></urlset>"
    )
    parsed = parse_sitemap(body, URL)
    assert [e.loc for e in parsed.entries] == ["https://www.example.com/a"]
    assert parsed.truncated
    assert not [path for path in opened_paths if "passwd" in path]


# -- size, ratio and count limits ----------------------------------------------------------


def _bomb(inflated: int, prefix: bytes = b"<urlset>") -> bytes:
    """A gzip body of ``prefix`` then spaces, ``inflated`` bytes in all: ~1000:1."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(prefix)]
    block = b" " * MIB
    for _ in range(inflated // MIB):
        parts.append(packer.compress(block))
    parts.append(packer.flush())
    return b"".join(parts)


def test_gzip_bomb_refused_by_ratio_with_flat_memory() -> None:
    """200 MiB from ~200 KiB: refused by max_ratio after ~1 MiB inflated, memory small."""
    bomb = _bomb(200 * MIB)
    assert len(bomb) < 400_000
    parser = SitemapParser(URL)
    peak, outcome = _peak(lambda: _feed_all(parser, iter([bomb])))
    assert isinstance(outcome, SitemapLimitError)
    assert outcome.limit == "max_ratio"
    assert outcome.value == 100
    assert "over the max_ratio limit (100)" in str(outcome)
    assert parser.bytes_out < 2 * MIB
    assert peak < MIB


def test_gzip_bomb_refused_by_size_having_inflated_at_most_the_cap() -> None:
    """With the ratio check lifted, max_bytes stops it at the cap, never past it."""
    bomb = _bomb(64 * MIB)
    limits = Limits(max_bytes=8 * MIB, max_ratio=1_000_000)
    parser = SitemapParser(URL, limits=limits)
    peak, outcome = _peak(
        lambda: _feed_all(parser, (bomb[i : i + 4096] for i in range(0, len(bomb), 4096)))
    )
    assert isinstance(outcome, SitemapLimitError)
    assert outcome.limit == "max_bytes"
    assert outcome.value == 8 * MIB
    assert "over the max_bytes limit (8388608)" in str(outcome)
    assert "after decompression" in str(outcome)
    assert 8 * MIB < parser.bytes_out <= 8 * MIB + 1
    assert peak < MIB


def test_plain_body_over_max_bytes() -> None:
    body = b"<urlset>" + b" " * 5000 + b"</urlset>"
    with pytest.raises(SitemapLimitError) as caught:
        parse_sitemap(body, URL, limits=Limits(max_bytes=4096))
    assert caught.value.limit == "max_bytes"


def test_50001_urls_refused_50000_accepted() -> None:
    """The protocol's 50,000 limit: the 50,001st entry refuses the sitemap."""
    parser = SitemapParser(URL)
    assert _feed_all(parser, _urls(50_000)) == 50_000
    parser = SitemapParser(URL)
    seen: list[object] = []

    def run() -> None:
        for chunk in _urls(50_001):
            seen.extend(parser.feed(chunk))
        parser.close()

    with pytest.raises(SitemapLimitError) as caught:
        run()
    assert caught.value.limit == "max_urls"
    assert caught.value.value == 50_000
    assert "over the max_urls limit (50000)" in str(caught.value)
    assert len(seen) == 50_000  # every entry before the limit was delivered


def test_max_urls_counts_skipped_entries_too() -> None:
    """Listed entries count, valid or not: 3 off-host entries break a limit of 2."""
    with pytest.raises(SitemapLimitError, match="max_urls"):
        parse_sitemap(b"".join(_urls(3, "evil.test")), URL, limits=Limits(max_urls=2))
    with pytest.raises(SitemapLimitError, match="max_urls"):
        parse_sitemap(b"https://www.example.com/\n" * 3, URL, limits=Limits(max_urls=2))


def test_huge_token_refused() -> None:
    """A tag that never ends is not buffered whole: refused past 1 MiB."""
    body = [b"<urlset><url a='"] + [b"x" * 65_536] * 40
    parser = SitemapParser(URL)
    peak, outcome = _peak(lambda: _feed_all(parser, iter(body)))
    assert isinstance(outcome, SitemapLimitError)
    assert outcome.limit == "max_token"
    assert peak < 4 * MIB


def test_huge_text_in_an_extension_is_streamed_not_refused() -> None:
    """Long character data arrives in pieces, so 5 MiB of image caption is fine (and dropped)."""
    chunks = [
        b"<urlset><url><loc>https://www.example.com/a</loc><image:caption xmlns:image='i'>",
        *([b"y" * 65_536] * 80),
        b"</image:caption></url></urlset>",
    ]
    parser = SitemapParser(URL)
    peak, outcome = _peak(lambda: _feed_all(parser, iter(chunks)))
    assert outcome == 1
    assert peak < 2 * MIB


def test_deep_nesting_refused() -> None:
    body = b"<urlset>" + b"<a>" * 10_000 + b"</a>" * 10_000 + b"</urlset>"
    with pytest.raises(SitemapLimitError, match="nested too deep"):
        parse_sitemap(body, URL)


def test_long_loc_not_kept_in_memory() -> None:
    """A 10 MiB <loc> is counted "too long" without being held."""
    chunks = [b"<urlset><url><loc>https://www.example.com/", *([b"z" * 65_536] * 160)]
    chunks.append(b"</loc></url></urlset>")
    parser = SitemapParser(URL, limits=Limits(max_bytes=20 * MIB))
    peak, outcome = _peak(lambda: _feed_all(parser, iter(chunks)))
    assert outcome == 0
    assert parser.skipped == {"too long": 1}
    assert peak < 2 * MIB


def _feed_iter_all(parser: SitemapParser, chunks: Iterator[bytes]) -> int:
    count = 0
    for chunk in chunks:
        count += sum(1 for _ in parser.feed_iter(chunk))
    return count + len(parser.close())


def _chunks(data: bytes, size: int) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


def test_memory_flat_whatever_the_sitemap_size() -> None:
    """Peak memory for 40,000 URLs is that of 2,000: nothing grows with the document.
    Plain bodies through feed(), gzip bodies (64 KiB chunks inflating ~8x) through
    feed_iter(), which hands entries over per 64 KiB of XML."""
    plain, packed = {}, {}
    for count in (2_000, 40_000):
        body = b"".join(_urls(count))
        zipped = gzip.compress(body)
        parser = SitemapParser(URL)
        plain[count], outcome = _peak(lambda: _feed_all(parser, _urls(count)))  # noqa: B023
        assert outcome == count
        parser = SitemapParser(URL)
        packed[count], outcome = _peak(
            lambda: _feed_iter_all(parser, _chunks(zipped, 65_536))  # noqa: B023
        )
        assert outcome == count
    assert plain[40_000] < plain[2_000] + 64 * 1024
    assert plain[40_000] < 256 * 1024
    # (the difference left is parse_lastmod's bounded cache filling up)
    assert packed[40_000] < packed[2_000] + 256 * 1024
    assert packed[40_000] < MIB


def test_feed_iter_gives_what_feed_gives() -> None:
    body = gzip.compress(b"".join(_urls(3_000)))
    one, two = SitemapParser(URL), SitemapParser(URL)
    listed = [e for c in _chunks(body, 4096) for e in one.feed(c)] + one.close()
    iterated = [e for c in _chunks(body, 4096) for e in two.feed_iter(c)] + two.close()
    assert listed == iterated
    assert len(listed) == 3_000


# -- any bytes at all ----------------------------------------------------------------------

_PREFIXES = [
    b"",
    b"<urlset>",
    b"<sitemapindex><sitemap><loc>",
    b"<rss><channel><item><link>",
    b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="',
    b"https://www.example.com/\n",
    b"\xef\xbb\xbf",
    b"\x1f\x8b",
]


@settings(max_examples=300, deadline=2_000, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.sampled_from(_PREFIXES),
    data=st.binary(max_size=2_000),
    cut=st.integers(min_value=1, max_value=64),
    gzip_it=st.booleans(),
)
def test_any_bytes_give_entries_or_a_sitemap_error(
    prefix: bytes, data: bytes, cut: int, gzip_it: bool
) -> None:
    """Whatever the bytes, the parser returns entries or raises a SitemapError — nothing else,
    and chunking never changes the outcome."""
    body = prefix + data
    if gzip_it:
        body = gzip.compress(body)

    def run(size: int) -> object:
        parser = SitemapParser(URL, limits=Limits(max_urls=50, max_bytes=100_000))
        out: list[object] = []
        try:
            for i in range(0, len(body), size):
                out += parser.feed(body[i : i + size])
            out += parser.close()
        except SitemapError as exc:
            return type(exc)
        return (out, parser.kind, parser.skipped, parser.truncated)

    whole = run(max(1, len(body)))
    assert run(cut) == whole


@settings(max_examples=200, deadline=2_000)
@given(st.lists(st.text(max_size=80), max_size=20))
def test_any_text_lines(lines: list[str]) -> None:
    """Text sitemaps with arbitrary lines: every entry returned is on the sitemap's host."""
    body = "\n".join(["https://www.example.com/first", *lines]).encode("utf-8", "surrogatepass")
    try:
        parsed = parse_sitemap(body, URL)
    except SitemapError:
        return
    assert parsed.entries[0].loc == "https://www.example.com/first"
    for entry in parsed.entries:
        assert entry.loc.lower().startswith("https://www.example.com")
        assert "\\" not in entry.loc
        assert not any(ord(char) < 0x20 for char in entry.loc)


def test_not_a_sitemap_error_is_a_parse_error() -> None:
    """The error class for plain garbage is SitemapParseError (a SitemapError)."""
    with pytest.raises(SitemapParseError):
        parse_sitemap(b"\x00garbage", URL)
