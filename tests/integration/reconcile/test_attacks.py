"""A lying site's sitemaps against a real server and store: each shape ends as a correct
listing or an incomplete host with a named error — never as vanished pages (issue 16).

The store holds 20 pages; /sitemap.xml is an index of /a.xml (pages 0-9) and a second
child that should list pages 10-19 but is hostile in one way per test.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.reconcile import ReconcileResult
from changewatch.sitemaps.model import Limits
from changewatch.store.tables import reconcile_findings

from .._http_server import LocalSite, Reply, serve
from ._lying_site import (
    HOST,
    PAGES,
    index,
    pages,
    reconcile_site,
    stock,
    urlset,
    vanished_findings,
)

if TYPE_CHECKING:
    from conftest import Clock


@pytest.fixture
def site() -> Iterator[LocalSite]:
    """A real threaded HTTP server on 127.0.0.1."""
    yield from serve()


@pytest.fixture
def stocked(make_watch: Callable[..., ChangeWatch], site: LocalSite) -> ChangeWatch:
    """A store of the host's 20 pages; /a.xml lists the first ten."""
    watch = make_watch()
    stock(watch, site)
    site.routes["/a.xml"] = Reply(body=urlset(*pages(site, range(10))))
    return watch


def _walk(
    watch: ChangeWatch, site: LocalSite, clock: Clock, child: str, **options: object
) -> ReconcileResult:
    site.routes["/sitemap.xml"] = Reply(body=index(site.url("/a.xml", HOST), child))
    return reconcile_site(watch, clock, [site.url("/sitemap.xml", HOST)], **options)  # type: ignore[arg-type]


def _incomplete(watch: ChangeWatch, site: LocalSite, result: ReconcileResult, url: str) -> str:
    """Assert the host is incomplete with nothing vanished; the error message about url."""
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (host.vanished, host.vanished_checked) == (0, False)
    assert host.fresh == 10  # what was read still counts
    assert vanished_findings(watch, result.run_id) == 0
    errors = {problem.sitemap: problem.error for problem in result.errors}
    assert url in errors, errors
    assert host.vanished_withheld.startswith("the walk was incomplete: ")
    return errors[url]


def test_children_that_404(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """An index whose child 404s: incomplete, the error names the status."""
    child = site.url("/gone.xml", HOST)
    message = _incomplete(stocked, site, _walk(stocked, site, clock, child), child)
    assert "HTTP 404" in message


def test_a_truncated_gzip_file(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """A .xml.gz cut in the middle (sniffed by the parser): the pages before the cut are
    read, the truncation is an error."""
    whole = gzip.compress(urlset(*pages(site, range(10, PAGES))))
    site.routes["/b.xml.gz"] = Reply(body=whole[: len(whole) * 2 // 3])
    child = site.url("/b.xml.gz", HOST)
    message = _incomplete(stocked, site, _walk(stocked, site, clock, child), child)
    assert message.startswith("truncated: ")


def test_a_truncated_gzip_encoding(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """Content-Encoding: gzip cut short: a named fetch error."""
    whole = gzip.compress(urlset(*pages(site, range(10, PAGES))))
    site.routes["/b.xml"] = Reply(
        body=whole[: len(whole) // 2], headers={"Content-Encoding": "gzip"}
    )
    child = site.url("/b.xml", HOST)
    message = _incomplete(stocked, site, _walk(stocked, site, clock, child), child)
    assert "gzip" in message


def test_a_sitemap_served_as_html(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """A soft-404 HTML page with 200 where a sitemap should be: a named parse error."""
    site.routes["/b.xml"] = Reply(
        body=b"<html><head><title>Oops</title></head><body>Not here</body></html>",
        headers={"Content-Type": "text/html; charset=utf-8"},
    )
    child = site.url("/b.xml", HOST)
    message = _incomplete(stocked, site, _walk(stocked, site, clock, child), child)
    assert "html" in message.lower()


def test_a_redirect_loop(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """A child redirecting in a circle: a named redirect-loop error."""
    site.routes["/b.xml"] = Reply(302, headers={"Location": "/b2.xml"})
    site.routes["/b2.xml"] = Reply(302, headers={"Location": "/b.xml"})
    child = site.url("/b.xml", HOST)
    message = _incomplete(stocked, site, _walk(stocked, site, clock, child), child)
    assert "redirect loop" in message


def test_a_child_on_another_host(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """A child on another host is not fetched, and its pages are unknown, not absent
    (before issue 16 it was skipped silently and pages 10-19 reported vanished)."""
    site.routes["cdn.test/b.xml"] = Reply(body=urlset(*pages(site, range(10, PAGES))))
    child = site.url("/b.xml", "cdn.test")
    result = _walk(stocked, site, clock, child)
    message = _incomplete(stocked, site, result, site.url("/sitemap.xml", HOST))
    assert message.startswith("1 of its child sitemaps not read (off-host: 1): ")
    assert site.hits("/b.xml") == 0


def test_a_child_with_an_unusable_url(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """A child whose <loc> is relative or has a space is not read: incomplete, not absent."""
    site.routes["/sitemap.xml"] = Reply(
        body=index(site.url("/a.xml", HOST), "b.xml", site.url("/b c.xml", HOST))
    )
    result = reconcile_site(stocked, clock, [site.url("/sitemap.xml", HOST)])
    message = _incomplete(stocked, site, result, site.url("/sitemap.xml", HOST))
    assert message.startswith("2 of its child sitemaps not read (not http(s): 1, whitespace: 1)")


def test_duplicate_children_are_read_once(
    stocked: ChangeWatch, site: LocalSite, clock: Clock
) -> None:
    """An index listing the same child three times: read once, a correct complete listing."""
    site.routes["/b.xml"] = Reply(body=urlset(*pages(site, range(10, PAGES - 1))))
    child = site.url("/b.xml", HOST)
    site.routes["/sitemap.xml"] = Reply(body=index(site.url("/a.xml", HOST), child, child, child))
    result = reconcile_site(stocked, clock, [site.url("/sitemap.xml", HOST)])
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (host.fresh, host.vanished, host.vanished_checked) == (PAGES - 1, 1, True)
    assert result.errors == []
    assert site.hits("/b.xml") == 1


def test_an_index_of_50001_children(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """Over sitemaps.org's 50,000 entries an index is abandoned at a named limit; the
    children fetched stop at max_sitemaps, also named: incomplete, nothing vanished."""
    children = [site.url("/a.xml", HOST)] + [site.url(f"/c{n}.xml", HOST) for n in range(50_000)]
    site.routes["/sitemap.xml"] = Reply(body=index(*children))
    result = reconcile_site(
        stocked, clock, [site.url("/sitemap.xml", HOST)], limits=Limits(max_sitemaps=4)
    )
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (host.vanished, host.vanished_checked, host.fresh) == (0, False, 10)
    errors = {problem.sitemap: problem.error for problem in result.errors}
    assert "over the max_urls limit" in errors[site.url("/sitemap.xml", HOST)]
    assert any("max_sitemaps 4 reached" in message for message in errors.values())
    assert vanished_findings(stocked, result.run_id) == 0


def test_lastmod_in_the_far_future(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """lastmod 9999-12-31 (and one past the calendar in UTC): listed pages are stale or
    fresh, never vanished; the extreme date is stored exactly."""
    site.routes["/b.xml"] = Reply(
        body=urlset(*pages(site, range(10, 15)), lastmod="9999-12-31T23:59:59Z")
    )
    site.routes["/c.xml"] = Reply(
        body=urlset(*pages(site, range(15, PAGES)), lastmod="9999-12-31T23:59:59-05:00")
    )
    site.routes["/sitemap.xml"] = Reply(
        body=index(*(site.url(p, HOST) for p in ("/a.xml", "/b.xml", "/c.xml")))
    )
    result = reconcile_site(stocked, clock, [site.url("/sitemap.xml", HOST)])
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (host.stale, host.fresh, host.vanished, host.vanished_checked) == (5, 15, 0, True)
    f = reconcile_findings.c
    with stocked.store.engine.connect() as conn:
        dates = conn.execute(
            sa.select(f.sitemap_lastmod).where(f.run_id == result.run_id, f.kind == "stale")
        ).scalars()
        assert {(d.year, d.month, d.day, d.tzinfo is not None) for d in dates} == {
            (9999, 12, 31, True)
        }
