"""The sitemap parser over every file of the crawler-commons corpus, whole and chunked."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
import shared_corpus

from changewatch.errors import SitemapError, SitemapParseError
from changewatch.sitemaps import (
    ChildSitemap,
    ParsedSitemap,
    SitemapParser,
    SitemapURL,
    parse_sitemap,
)

SHARED_CORPUS = shared_corpus.ROOT
pytestmark = pytest.mark.corpus
CC = SHARED_CORPUS / "sitemaps-crawler-commons"


@dataclass(frozen=True)
class Expected:
    """What one corpus file must parse to, read from the sitemap URL ``url``."""

    url: str
    kind: str | None = None
    count: int = 0
    #: (index, loc, lastmod ISO or None) samples.
    samples: tuple[tuple[int, str, str | None], ...] = ()
    skipped: dict[str, int] | None = None
    error: type[SitemapError] | None = None


EX = "http://www.example.com/sitemap.xml"
UTC_0 = "+00:00"

#: Every file of the corpus, with its outcome. A new file without a row fails the test below.
CORPUS: dict[str, Expected] = {
    "sitemaps/atom.xml": Expected(
        "http://example.org/feed/",
        "atom",
        1,
        # The first link of the entry without rel (= alternate), not the rel="edit" one.
        ((0, "http://example.org/2003/12/13/atom03", "2003-12-13T18:30:02" + UTC_0),),
    ),
    "sitemaps/do-not-visit.txt": Expected(
        EX, "text", 1, ((0, "http://www.example.com/do-not-visit-here", None),)
    ),
    "sitemaps/extension/hebdenbridgetimes-articles-sitemap.xml": Expected(
        "http://www.hebdenbridgetimes.co.uk/sitemap.xml",
        "urlset",
        74,
        (
            (
                0,
                "http://www.hebdenbridgetimes.co.uk/news/local/"
                "video-tour-de-yorkshire-in-calderdale-1-7242580",
                # 2015-05-03T18:51:50+01:00 in UTC
                "2015-05-03T17:51:50" + UTC_0,
            ),
            (
                73,
                "http://www.hebdenbridgetimes.co.uk/news/local/"
                "now-you-see-it-now-you-don-t-it-s-off-the-wall-1-7229940",
                "2015-04-26T16:47:55" + UTC_0,
            ),
        ),
    ),
    "sitemaps/extension/pagemaps-sitemap.xml": Expected(
        EX,
        "urlset",
        2,
        ((0, "http://www.example.com/foo", None), (1, "http://www.example.com/bar", None)),
    ),
    "sitemaps/extension/shinpaideshou-news-sitemap.xml": Expected(
        "https://shinpaideshou.wordpress.com/sitemap.xml",
        "urlset",
        3,
        (
            (
                0,
                "https://shinpaideshou.wordpress.com/2017/04/25/"
                "job-opening-reischauer-policy-research-fellow/",
                None,  # news:publication_date is an extension: not a lastmod
            ),
        ),
    ),
    "sitemaps/extension/sitemap-images.xml": Expected(
        # image:loc (on example.com) is not an entry: one URL, nothing off-host.
        EX,
        "urlset",
        1,
        ((0, "http://www.example.com/images/some_image_landing_page.html", None),),
        skipped={},
    ),
    "sitemaps/extension/sitemap-links.xml": Expected(
        EX,
        "urlset",
        3,
        (
            (0, "http://www.example.com/english/", None),
            (2, "http://www.example.com/schweiz-deutsch/", None),
        ),
    ),
    "sitemaps/extension/sitemap-mobile.xml": Expected(
        EX, "urlset", 3, ((2, "http://www.example.com/no-mobile/", None),)
    ),
    "sitemaps/extension/sitemap-news.xml": Expected(
        "http://www.example.org/sitemap.xml",
        "urlset",
        2,
        ((1, "http://www.example.org/empty_news_name.html", None),),
    ),
    "sitemaps/extension/sitemap-videos-tvshow.xml": Expected(
        "https://example.org/sitemap.xml",
        "urlset",
        1,
        ((0, "https://example.org/my-tv-show/23/13/", None),),
    ),
    "sitemaps/extension/sitemap-videos.xml": Expected(
        EX,
        "urlset",
        3,
        ((2, "http://www.example.com/videos/some_video_landing_page-3.html", None),),
    ),
    "sitemaps/sitemap-with-bom.txt": Expected(
        "http://www.domain.com/sitemap.txt",
        "text",
        2,
        ((0, "http://www.domain.com/page1.html", None),),  # the BOM is not part of the URL
    ),
    "sitemaps/sitemap.badns.xml": Expected(
        # Google's old namespace: tolerated; the loc with surrounding whitespace is trimmed.
        EX,
        "urlset",
        2,
        ((1, "http://www.example.com/2", None),),
    ),
    "sitemaps/sitemap.index.xml": Expected(
        # <sitemap>URL</sitemap> without <loc>: accepted (the URL is the element's own text).
        "https://example.com/sitemap_index.xml",
        "sitemapindex",
        15,
        (
            (0, "https://example.com/sitemap.jss?portalCode=10260&lang=en", None),
            (14, "https://example.com/sitemap.jss?portalCode=10570&lang=en", None),
        ),
    ),
    "sitemaps/sitemap.ns.xml": Expected(EX, "urlset", 2, ((0, "http://www.example.com/1", None),)),
    "sitemaps/sitemap.txt": Expected(
        "http://www.domain.com/sitemap.txt",
        "text",
        2,
        ((1, "http://www.domain.com/page2.html", None),),
    ),
    "sitemaps/sitemap.txt.gz": Expected(
        EX,
        "text",
        5,
        ((4, "http://www.example.com/catalog?item=83&desc=vacation_usa", None),),
    ),
    "sitemaps/xmlSitemap.gz": Expected(
        EX,
        "urlset",
        5,
        (
            (0, "http://www.example.com/", "2005-01-01T00:00:00" + UTC_0),
            (1, "http://www.example.com/catalog?item=12&desc=vacation_hawaii", None),
            (
                3,
                "http://www.example.com/catalog?item=74&desc=vacation_newfoundland",
                "2004-12-23T18:00:15" + UTC_0,
            ),
        ),
        skipped={},
    ),
}
# robots.txt files are not sitemaps: each is refused as "not a sitemap or feed", never read
# as a list of URLs (the UTF-16 ones have a BOM expat takes for XML and fail as not XML).
ROBOTS_URL = "http://www.example.com/robots.txt"
CORPUS.update(
    {
        f"robots/{path.name}": Expected(
            "http://www.example.com/robots.txt", error=SitemapParseError
        )
        for path in sorted((CC / "robots").glob("*"))
    }
)


def _corpus_files() -> list[str]:
    return sorted(
        str(path.relative_to(CC))
        for path in CC.rglob("*")
        if path.is_file() and path.name != "LICENSE"
    )


def test_every_corpus_file_has_an_expected_outcome() -> None:
    """The table covers the corpus exactly: a new or renamed file fails here."""
    files = _corpus_files()
    assert len(files) >= 40
    assert sorted(CORPUS) == files


def _parse_chunks(data: bytes, url: str, sizes: list[int], **kwargs: object) -> ParsedSitemap:
    parser = SitemapParser(url, **kwargs)  # type: ignore[arg-type]
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


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_file(name: str) -> None:
    """Each real file parses to its expected kind, count and samples (or its error)."""
    expected = CORPUS[name]
    data = (CC / name).read_bytes()
    if expected.error is not None:
        with pytest.raises(expected.error, match="not a sitemap or feed"):
            parse_sitemap(data, expected.url)
        return
    parsed = parse_sitemap(data, expected.url)
    assert parsed.kind == expected.kind
    assert len(parsed.entries) == expected.count
    assert not parsed.truncated
    for index, loc, lastmod in expected.samples:
        entry = parsed.entries[index]
        assert entry.loc == loc
        assert entry.sitemap == expected.url
        assert (entry.lastmod.isoformat() if entry.lastmod else None) == lastmod
    if expected.skipped is not None:
        assert parsed.skipped == expected.skipped
    kind = ChildSitemap if expected.kind == "sitemapindex" else SitemapURL
    assert all(type(entry) is kind for entry in parsed.entries)
    # Same result fed one byte at a time.
    assert _parse_chunks(data, expected.url, [1] * len(data)) == parsed


@pytest.mark.parametrize("name", [n for n, e in CORPUS.items() if e.error is None])
def test_corpus_file_random_chunks(name: str) -> None:
    """Random chunk sizes (seeded per file) give the same result as one feed."""
    expected = CORPUS[name]
    data = (CC / name).read_bytes()
    whole = parse_sitemap(data, expected.url)
    rng = random.Random(name)
    for _ in range(5):
        sizes = [rng.randint(1, 300) for _ in range(len(data) // 50 + 1)]
        assert _parse_chunks(data, expected.url, sizes) == whole


def test_corpus_off_host_when_read_from_another_host() -> None:
    """The same file read as another host's sitemap lists nothing: every loc is off-host."""
    data = (CC / "sitemaps/sitemap.txt").read_bytes()
    parsed = parse_sitemap(data, "https://other.test/sitemap.txt")
    assert parsed.entries == []
    assert parsed.skipped == {"off-host": 2}
    allowed = parse_sitemap(data, "https://other.test/s.txt", allowed_hosts=["WWW.Domain.com"])
    assert len(allowed.entries) == 2
