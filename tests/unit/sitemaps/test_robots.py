"""robots.txt ``Sitemap:`` discovery over the corpus robots files; site or sitemap arguments."""

from __future__ import annotations

import pytest
import shared_corpus
from hypothesis import given
from hypothesis import strategies as st

from changewatch.errors import UnsafeURLError
from changewatch.sitemaps.netguard import check_url
from changewatch.sitemaps.walk import is_site_url, robots_sitemaps

SHARED_CORPUS = shared_corpus.ROOT
ROBOTS = SHARED_CORPUS / "sitemaps-crawler-commons" / "robots"
BASE = "https://site.test/robots.txt"
NEWSWEEK = ["http://www.newsweek.com/sitemap_index.xml"]
AMAZON = [
    "http://www.amazon.com/sitemap-manual-index.xml",
    "http://www.amazon.com/sitemap_vendor_videos_us.xml",
    "http://www.amazon.com/sitemap_vod_index.xml",
    *(
        f"http://www.amazon.com/sitemaps.{key}.SitemapIndex_0.xml.gz"
        for key in ("f3053414d236e84", "1946f6b8171de60", "bbb7d657c7e29fa", "11aafed315ee654")
    ),
    "http://www.amazon.com/sitemaps.c21f969b5f03d33.SitemapIndex_0.xml.gz",
]

#: Every robots file of the corpus and the sitemaps it lists (relative ones resolved on BASE).
EXPECTED: dict[str, list[str]] = {
    "astore.amazon.com-robots.txt": [],
    "crawl-delay-group-merging.txt": [],  # mentions "Sitemaps" only in comments
    "directive-typos-robots.txt": [],
    "dos-line-endings.txt": [],
    "extended-standard-robots.txt": [],
    "extension-robots.txt": ["https://site.test/sitemap.xml"],
    "extensions-group-merging.txt": [],  # "sitemap directive" only in a comment
    "format-errors-robots.txt": ["https://site.test/sitemap.xml"],  # "sitemap : /sitemap.xml"
    "malformed-path.txt": [],
    "many-user-agents.txt": [],
    "merge-rules.txt": [],
    "precedence-of-rules.txt": [],
    "relative-sitemap-robots.txt": ["https://site.test/sitemap.xml"],
    "rfc9309-example-longest-match-robots.txt": [],
    "rfc9309-example-rule-group-merging.txt": [],
    "rfc9309-example-simple-robots.txt": [],
    "robots-with-utf16be-bom.txt": NEWSWEEK,
    "robots-with-utf16le-bom.txt": NEWSWEEK,
    "robots-with-utf8-bom.txt": NEWSWEEK,
    "sitemap-robots-dedup.txt": ["http://example.org/sitemap.xml"],  # listed twice
    "sitemap-robots.txt": [
        "http://domain.com/sitemap.xml",  # lower-case "sitemap:" before any group
        "http://domain.com/dir/my-sitemap.xml",  # a bare URL line, as crawler-commons reads it
        "http://domain.com/dir/MixedCased-sitemap.xml",  # path case kept
    ],
    "twitter.com-robots.txt": [],
    "wildcards.txt": AMAZON,
    "www.flot.com-robots.txt": ["http://flot.com/sitemap_index.xml"],
}


@pytest.mark.corpus
def test_every_corpus_robots_file_has_an_expectation() -> None:
    """The table covers the whole corpus folder (a new file needs an expected outcome)."""
    assert sorted(path.name for path in ROBOTS.glob("*.txt")) == sorted(EXPECTED)


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_robots_sitemaps(name: str) -> None:
    """Each corpus robots.txt yields exactly its sitemaps, in order, without repeats."""
    assert robots_sitemaps((ROBOTS / name).read_bytes(), BASE) == EXPECTED[name]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b"SITEMAP: /a.xml\nsItEmAp:/b.xml",
            ["https://site.test/a.xml", "https://site.test/b.xml"],
        ),
        (
            b"User-agent: *\nDisallow: /\nSitemap: https://cdn.test/s.xml\n",
            ["https://cdn.test/s.xml"],
        ),
        (b"Sitemap: sub/s.xml # comment\r\n", ["https://site.test/sub/s.xml"]),
        (b"Sitemap: ../../up.xml", ["https://site.test/up.xml"]),
        (b"Sitemap:", []),
        (b"Sitemap: ftp://site.test/s.xml", []),  # not http(s)
        (b"Sitemap: http://user:pw@site.test/s.xml", []),  # credentials
        (b"Sitemap: http://site.test\\@evil.test/", []),  # backslash
        (b"Sitemap: http://exa mple.test/", []),
        (b"Disallow: /sitemap.xml\nAllow: http://x.test/", []),  # other directives
        (b"\xff\xfeS\x00i\x00t\x00e\x00m\x00a\x00p\x00:\x00/\x00s\x00", ["https://site.test/s"]),
        (b"Sitemap: /caf\xc3\xa9.xml", ["https://site.test/caf%C3%A9.xml"]),
        (b"Sitemap: /bad\xff.xml", ["https://site.test/bad%EF%BF%BD.xml"]),
    ],
)
def test_robots_sitemap_lines(body: bytes, expected: list[str]) -> None:
    """Sitemap lines anywhere, any case, relative ones resolved, unsafe ones dropped."""
    assert robots_sitemaps(body, BASE) == expected


@pytest.mark.parametrize(
    ("argument", "site"),
    [
        ("https://example.com", True),
        ("https://example.com/", True),
        ("https://example.com:8443/", True),
        ("https://example.com/?ref=x", True),
        ("https://example.com/sitemap.xml", False),
        ("https://example.com/sitemaps/", False),
        ("https://example.com/feed", False),
    ],
)
def test_site_or_sitemap_argument(argument: str, site: bool) -> None:
    """A SITE_OR_SITEMAP_URL is a site when its path is "/" or empty, else a sitemap."""
    assert is_site_url(argument) is site


def test_unsafe_argument_is_refused() -> None:
    """An argument that is no fetchable URL is refused with the reason."""
    with pytest.raises(UnsafeURLError, match="scheme 'file'"):
        is_site_url("file:///etc/passwd")


@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_robots_sitemaps_never_crashes_and_returns_checked_urls(body: bytes) -> None:
    """Any bytes give a list of URLs that pass the fetcher's URL check unchanged."""
    for url in robots_sitemaps(b"Sitemap: " + body, BASE) + robots_sitemaps(body, BASE):
        assert check_url(url) == url
