"""Fuzz: the sitemap parser on hostile documents — entries or a SitemapError, fast, any chunking."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changewatch.errors import SitemapError
from changewatch.sitemaps.model import Limits, SitemapURL
from changewatch.sitemaps.parse import SitemapParser, parse_sitemap

from ._timing import assert_linear
from .strategies import FUZZ, sitemap_documents

SITEMAP = "https://example.com/sitemap.xml"


def _outcome(parse: Callable[[], list[object]]) -> tuple[str, list[object]]:
    try:
        return "ok", parse()
    except SitemapError as exc:
        return type(exc).__name__, []


#: Sitemap examples are larger than URLs: half the profile's count keeps CI time in bounds.
SITEMAP_FUZZ = settings(FUZZ, max_examples=max(50, FUZZ.max_examples // 2))


@SITEMAP_FUZZ
@given(sitemap_documents())
def test_parser_returns_checked_entries_or_a_sitemap_error(data: bytes) -> None:
    """Any body: a SitemapError, or entries that are absolute http(s) URLs with UTC dates."""
    try:
        parsed = parse_sitemap(data, SITEMAP)
    except SitemapError as exc:
        error: SitemapError | None = exc
    else:
        error = None
    if error is not None:
        assert error.url == SITEMAP  # the error names the sitemap
        return
    assert len(parsed.entries) <= Limits().max_urls
    for entry in parsed.entries:
        assert entry.loc.startswith(("http://", "https://")), entry
        assert entry.sitemap == SITEMAP
        if entry.lastmod is not None:
            assert entry.lastmod.utcoffset() == timedelta(0)
        if isinstance(entry, SitemapURL):
            assert entry.loc.partition("://")[2].split("/")[0].endswith("example.com")


@SITEMAP_FUZZ
@given(sitemap_documents(), st.lists(st.integers(1, 64), min_size=1, max_size=8))
def test_any_chunking_gives_the_same_answer(data: bytes, cuts: list[int]) -> None:
    """Fed in arbitrary chunks, the parser answers as it does for the whole body."""

    def whole() -> list[object]:
        return list(parse_sitemap(data, SITEMAP).entries)

    def chunked() -> list[object]:
        parser = SitemapParser(SITEMAP)
        out: list[object] = []
        at = 0
        for size in cuts * (len(data) // max(1, sum(cuts)) + 1):
            if at >= len(data):
                break
            out += parser.feed(data[at : at + size])
            at += size
        out += parser.close()
        return out

    assert _outcome(chunked) == _outcome(whole)


#: (name, shape, first n tried).
SHAPES: list[tuple[str, Callable[[int], bytes], int]] = [
    (
        "urlset",
        lambda n: (
            "<urlset>"
            + "".join(f"<url><loc>https://example.com/{i}</loc></url>" for i in range(n))
            + "</urlset>"
        ).encode(),
        1500,
    ),
    ("text", lambda n: "\n".join(f"https://example.com/{i}" for i in range(n)).encode(), 1500),
    (
        "unknown elements",
        lambda n: ('<urlset xmlns:x="urn:x">' + "<x:y a='1'><z/></x:y>" * n + "</urlset>").encode(),
        6000,
    ),
    (
        "long loc",
        lambda n: f"<urlset><url><loc>https://example.com/{'a' * n}</loc></url></urlset>".encode(),
        400_000,
    ),
]


@pytest.mark.parametrize(("name", "shape", "start"), SHAPES, ids=[name for name, _, _ in SHAPES])
def test_parse_time_grows_linearly(name: str, shape: Callable[[int], bytes], start: int) -> None:
    """16× the input costs under 100× the time (quadratic: 256×); see _timing.assert_linear."""

    def parse(data: bytes) -> object:
        return parse_sitemap(data, SITEMAP)

    assert_linear(parse, shape, (SitemapError,), label=name, start=start)
