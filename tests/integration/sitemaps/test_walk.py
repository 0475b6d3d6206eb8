"""discover() and walk() against a real HTTP server on 127.0.0.1 serving corpus sitemaps.

Host names (``www.example.com``, ``cdn.test``…) resolve to 127.0.0.1 through an injected
resolver, so the corpus sitemaps' own hosts are served locally and the per-host rules are
exercised for real; the server tells the virtual hosts apart by their Host header.
"""

from __future__ import annotations

import gzip
import html
import re
from collections.abc import Iterator

import httpx
import pytest
import shared_corpus

from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.model import Limits
from changewatch.sitemaps.walk import SitemapFetched, WalkReport, discover, starts_for, walk

from .._http_server import LocalSite, Reply, serve

SHARED_CORPUS = shared_corpus.ROOT
CC = SHARED_CORPUS / "sitemaps-crawler-commons"
HOST = "www.example.com"


@pytest.fixture
def site() -> Iterator[LocalSite]:
    """A real threaded HTTP server on 127.0.0.1, torn down after the test."""
    yield from serve()


def local_client(**options: object) -> SafeClient:
    """Every host name resolves to 127.0.0.1; small timeouts, no real sleeping."""
    defaults: dict[str, object] = {
        "allow_private": True,
        "resolve": lambda host, port: ["127.0.0.1"],
        "connect_timeout": 2.0,
        "read_timeout": 2.0,
        "total_timeout": 5.0,
        "sleep": lambda seconds: None,
        "retries": 1,
    }
    defaults.update(options)
    return SafeClient(**defaults)  # type: ignore[arg-type]


def index(*locs: str) -> bytes:
    """A sitemapindex listing ``locs``."""
    body = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return (
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{body}</sitemapindex>"
    ).encode()


def urlset(*locs: str) -> bytes:
    """A urlset listing ``locs``."""
    body = "".join(f"<url><loc>{loc}</loc><lastmod>2026-01-02</lastmod></url>" for loc in locs)
    return (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{body}</urlset>"
    ).encode()


@pytest.mark.corpus
def test_site_walk_covers_index_gzip_text_cycles_and_failures(site: LocalSite) -> None:
    """robots.txt → index → gzip (both ways), text; self-listing, A→B→A, a 500 child recorded."""
    u = lambda path: site.url(path, host=HOST)  # noqa: E731
    site.routes["/robots.txt"] = Reply(
        body=(CC / "robots" / "relative-sitemap-robots.txt").read_bytes()
    )
    site.routes["/sitemap.xml"] = Reply(
        body=index(
            u("/sitemap.xml"),  # the index lists itself
            u("/file.xml.gz"),  # a gzip file, no Content-Encoding: the parser sniffs it
            u("/encoded.xml"),  # Content-Encoding: gzip, decoded once by the client
            u("/list.txt.gz"),  # a gzipped plain-text sitemap
            u("/loop-a.xml"),
            u("/down.xml"),
        ),
        headers={"Content-Type": "application/xml"},
    )
    site.routes["/file.xml.gz"] = Reply(
        body=(CC / "sitemaps" / "xmlSitemap.gz").read_bytes(),
        headers={"Content-Type": "application/x-gzip"},
    )
    site.routes["/encoded.xml"] = Reply(
        body=gzip.compress(urlset(f"http://{HOST}/encoded-1", f"http://{HOST}/encoded-2")),
        headers={"Content-Encoding": "gzip", "Content-Type": "application/xml"},
    )
    site.routes["/list.txt.gz"] = Reply(body=(CC / "sitemaps" / "sitemap.txt.gz").read_bytes())
    site.routes["/loop-a.xml"] = Reply(body=index(u("/loop-b.xml")))
    site.routes["/loop-b.xml"] = Reply(body=index(u("/loop-a.xml"), u("/sitemap.xml")))
    site.routes["/down.xml"] = Reply(500)

    fetched: list[str] = []

    def progress(done: SitemapFetched, report: WalkReport) -> None:
        fetched.append(done.url)
        assert report.sitemaps[-1] is done

    with local_client() as client:
        starts, hosts = starts_for(f"http://{HOST}:{site.port}/", client)
        assert starts == [u("/sitemap.xml")]
        run = walk(starts, client, allowed_hosts=hosts, progress=progress)
        locs = [entry.loc for entry in run]
    report = run.report

    corpus_xml = gzip.decompress((CC / "sitemaps" / "xmlSitemap.gz").read_bytes()).decode()
    corpus_text = gzip.decompress((CC / "sitemaps" / "sitemap.txt.gz").read_bytes()).decode()
    expected = [
        *(html.unescape(loc) for loc in re.findall(r"<loc>([^<]+)</loc>", corpus_xml)),
        f"http://{HOST}/encoded-1",
        f"http://{HOST}/encoded-2",
        *corpus_text.split(),
    ]
    assert len(expected) == 5 + 2 + 5
    assert locs == expected  # breadth-first, in listing order
    assert report.urls == len(locs)
    by_url = {fetch.url: fetch for fetch in report.sitemaps}
    assert by_url[u("/sitemap.xml")].kind == "sitemapindex"
    assert by_url[u("/sitemap.xml")].children == 6
    assert by_url[u("/file.xml.gz")].kind == "urlset"
    assert by_url[u("/list.txt.gz")].kind == "text"
    assert by_url[u("/encoded.xml")].urls == 2
    # Each sitemap fetched once: the self-listing and the A→B→A cycle are skipped, not refetched.
    for path in ("/sitemap.xml", "/loop-a.xml", "/loop-b.xml", "/file.xml.gz"):
        assert site.hits(path) == 1, path
    assert report.skipped["sitemap_seen"] == 3
    assert fetched == [fetch.url for fetch in report.sitemaps]
    # The broken child is recorded (after its retry) and the walk went on past it.
    assert [url for url, _ in report.errors] == [u("/down.xml")]
    assert "HTTP 500" in report.errors[0][1]
    assert site.hits("/down.xml") == 2
    assert report.complete is False


def test_no_robots_falls_back_to_sitemap_xml(site: LocalSite) -> None:
    """Without robots.txt (404) discovery tries /sitemap.xml; a clean walk is complete."""
    site.routes["/sitemap.xml"] = Reply(body=urlset(f"http://{HOST}/only"))
    with local_client() as client:
        starts = discover(f"http://{HOST}:{site.port}", client)
        run = walk(starts, client)
        assert [entry.loc for entry in run] == [f"http://{HOST}/only"]
    assert starts == [site.url("/sitemap.xml", host=HOST)]
    assert run.report.complete is True
    assert run.report.errors == []


def test_cross_host_sitemap_in_robots_is_honoured(site: LocalSite) -> None:
    """A robots.txt Sitemap on another host may list the robots host's pages; alone it may not."""
    cdn = site.url("/shop-sitemap.xml", host="cdn.test")
    site.routes["shop.test/robots.txt"] = Reply(body=f"User-agent: *\nSitemap: {cdn}\n".encode())
    site.routes["cdn.test/shop-sitemap.xml"] = Reply(
        body=urlset("http://shop.test/a", "http://shop.test/b", "http://elsewhere.test/c")
    )
    with local_client() as client:
        starts, hosts = starts_for(f"http://shop.test:{site.port}/", client)
        vouched = walk(starts, client, allowed_hosts=hosts)
        assert [entry.loc for entry in vouched] == ["http://shop.test/a", "http://shop.test/b"]
        alone = walk([cdn], client)
        assert list(alone) == []
    assert starts == [cdn]
    assert vouched.report.skipped["off-host"] == 1
    assert alone.report.skipped["off-host"] == 3


def test_depth_and_sitemap_count_limits_make_the_walk_incomplete(site: LocalSite) -> None:
    """Index nesting past max_depth and sitemaps past max_sitemaps are reported, not fetched."""
    for level in range(4):
        site.routes[f"/deep{level}.xml"] = Reply(body=index(site.url(f"/deep{level + 1}.xml")))
    site.routes["/deep4.xml"] = Reply(body=urlset(site.url("/bottom")))
    with local_client() as client:
        deep = walk([site.url("/deep0.xml")], client, limits=Limits(max_depth=2))
        assert list(deep) == []
        assert [url for url, _ in deep.report.errors] == [site.url("/deep3.xml")]
        assert "max_depth 2" in deep.report.errors[0][1]
        assert deep.report.complete is False
        assert site.hits("/deep3.xml") == 0

        children = [site.url(f"/part{n}.xml") for n in range(5)]
        site.routes["/many.xml"] = Reply(body=index(*children))
        for n in range(5):
            site.routes[f"/part{n}.xml"] = Reply(body=urlset(site.url(f"/page{n}")))
        many = walk([site.url("/many.xml")], client, limits=Limits(max_sitemaps=3))
        assert len(list(many)) == 2
        assert "max_sitemaps 3 reached (3 sitemaps left)" in many.report.errors[0][1]
        assert many.report.complete is False
        assert site.hits("/part4.xml") == 0


def test_redirects_between_sitemaps_are_loop_safe(site: LocalSite) -> None:
    """A redirect loop fails only that sitemap; a redirect onto one already read is skipped."""
    site.routes["/root.xml"] = Reply(
        body=index(site.url("/spin.xml"), site.url("/alias.xml"), site.url("/real.xml"))
    )
    site.routes["/spin.xml"] = Reply(302, headers={"Location": "/spin2.xml"})
    site.routes["/spin2.xml"] = Reply(302, headers={"Location": "/spin.xml"})
    site.routes["/alias.xml"] = Reply(301, headers={"Location": "/root.xml"})
    site.routes["/real.xml"] = Reply(body=urlset(site.url("/page")))
    with local_client() as client:
        run = walk([site.url("/root.xml")], client)
        assert [entry.loc for entry in run] == [site.url("/page")]
    assert [url for url, _ in run.report.errors] == [site.url("/spin.xml")]
    assert "redirect loop" in run.report.errors[0][1]
    assert run.report.skipped["sitemap_seen"] == 1
    assert site.hits("/root.xml") == 2  # fetched, then reached again by the alias redirect


def test_broken_and_hostile_sitemaps_are_recorded(site: LocalSite) -> None:
    """A DOCTYPE, a non-sitemap, a truncated document and a bomb each fail alone."""
    site.routes["/root.xml"] = Reply(
        body=index(*(site.url(f"/{name}.xml") for name in ("dtd", "html", "cut", "bomb", "ok")))
    )
    site.routes["/dtd.xml"] = Reply(
        body=b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><urlset/>'
    )
    site.routes["/html.xml"] = Reply(body=b"<html><body>Not found</body></html>")
    site.routes["/cut.xml"] = Reply(body=urlset(site.url("/kept"))[:-30])
    site.routes["/bomb.xml"] = Reply(
        body=gzip.compress(b" " * 30_000_000, compresslevel=9),
        headers={"Content-Encoding": "gzip"},
    )
    site.routes["/ok.xml"] = Reply(body=urlset(site.url("/fine")))
    with local_client() as client:
        run = walk([site.url("/root.xml")], client)
        locs = [entry.loc for entry in run]
    assert site.url("/fine") in locs
    failed = dict(run.report.errors)
    assert set(failed) == {site.url(f"/{name}.xml") for name in ("dtd", "html", "cut", "bomb")}
    assert "max_ratio" in failed[site.url("/bomb.xml")]
    assert run.report.complete is False


def test_public_index_child_redirecting_to_private_is_refused_and_the_walk_goes_on() -> None:
    """Without allow_private a child sitemap redirecting to 10.0.0.1 is refused, others read."""

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/index.xml":
            return httpx.Response(
                200,
                content=index("http://public.example/evil.xml", "http://public.example/good.xml"),
            )
        if path == "/evil.xml":
            return httpx.Response(302, headers={"Location": "http://10.0.0.1/latest/meta-data"})
        return httpx.Response(200, content=urlset("http://public.example/page"))

    with SafeClient(
        resolve=lambda host, port: ["93.184.215.14"], transport=httpx.MockTransport(handler)
    ) as client:
        run = walk(["http://public.example/index.xml"], client)
        assert [entry.loc for entry in run] == ["http://public.example/page"]
    [(url, message)] = run.report.errors
    assert url == "http://public.example/evil.xml"
    assert "10.0.0.1 is private" in message
    assert run.report.complete is False
