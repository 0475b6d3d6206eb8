"""robots.txt failures never make pages vanish (issue 16), against a real server and store.

The site's robots.txt names two sitemaps of ten pages each; its /sitemap.xml lists only the
first ten. Before issue 16 any robots.txt failure fell back to /sitemap.xml: status complete,
no error, and the other ten stored pages reported vanished.
"""

from __future__ import annotations

import gzip
import socket
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from changewatch import ChangeWatch
from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.walk import ROBOTS_MAX_BYTES

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
    """A store of the host's 20 pages; the site lists them in /a.xml and /b.xml."""
    watch = make_watch()
    stock(watch, site)
    robots = f"User-agent: *\nSitemap: {site.url('/a.xml', HOST)}\nSitemap: /b.xml\n"
    site.routes["/robots.txt"] = Reply(body=robots.encode())
    site.routes["/a.xml"] = Reply(body=urlset(*pages(site, range(10))))
    site.routes["/b.xml"] = Reply(body=urlset(*pages(site, range(10, PAGES))))
    site.routes["/sitemap.xml"] = Reply(body=urlset(*pages(site, range(10))))
    return watch


def _site_url(site: LocalSite) -> str:
    return site.url("/", HOST)


def test_a_readable_robots_txt_lists_every_page(
    stocked: ChangeWatch, site: LocalSite, clock: Clock
) -> None:
    """The control: robots.txt read, both sitemaps walked, nothing vanished, complete."""
    result = reconcile_site(stocked, clock, [_site_url(site)])
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (result.status, host.fresh, host.vanished, host.vanished_checked) == (
        "complete",
        PAGES,
        0,
        True,
    )
    assert result.errors == []


UNREACHABLE = {
    "503": Reply(503, b"maintenance"),
    "500": Reply(500),
    "429": Reply(429, headers={"Retry-After": "0"}),
    "403": Reply(403, b"forbidden"),
    "401": Reply(401),
    "400": Reply(400),
    "451": Reply(451),
    "timeout": Reply(body=b"Sitemap: /a.xml\n", delay=3.0),
    "reset": Reply(abort=True),
    "html": Reply(
        body=b"<!DOCTYPE html><html><body>Page not found</body></html>",
        headers={"Content-Type": "text/html"},
    ),
    "binary": Reply(body=b"\x00\x01\x02\x03PNG\x00junk"),
    "gzip file": Reply(body=gzip.compress(b"Sitemap: /a.xml\n")),
    "redirect loop": Reply(302, headers={"Location": "/robots.txt?again"}),
    "bad redirect": Reply(301, headers={"Location": "ftp://shop.test/robots.txt"}),
}


@pytest.mark.parametrize("answer", sorted(UNREACHABLE))
def test_an_unreadable_robots_txt_makes_the_host_incomplete(
    stocked: ChangeWatch, site: LocalSite, clock: Clock, answer: str
) -> None:
    """5xx, 429, 4xx other than 404/410, timeouts, resets, non-text bodies and refused
    redirects: an error naming robots.txt, no guess at /sitemap.xml, no vanished page."""
    site.routes["/robots.txt"] = UNREACHABLE[answer]
    site.routes["/robots.txt?again"] = Reply(302, headers={"Location": "/robots.txt"})
    result = reconcile_site(stocked, clock, [_site_url(site)])
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (host.vanished, host.vanished_checked) == (0, False)
    assert vanished_findings(stocked, result.run_id) == 0
    [problem] = result.errors
    assert problem.sitemap == site.url("/robots.txt", HOST)
    assert "the site's sitemaps are unknown" in problem.error
    assert site.hits("/sitemap.xml") == 0  # no guess
    assert result.status == "failed"  # nothing could be read for the only argument


@pytest.mark.parametrize("status", [404, 410])
def test_no_robots_txt_falls_back_to_sitemap_xml(
    stocked: ChangeWatch, site: LocalSite, clock: Clock, status: int
) -> None:
    """404 and 410 mean "no robots.txt" (RFC 9309 §2.3.1.3): /sitemap.xml, a complete walk."""
    site.routes["/robots.txt"] = Reply(status)
    site.routes["/sitemap.xml"] = Reply(body=urlset(*pages(site, range(PAGES - 1))))
    result = reconcile_site(stocked, clock, [_site_url(site)])
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (result.status, host.vanished, host.vanished_checked) == ("complete", 1, True)
    assert result.errors == []


def test_a_robots_txt_without_sitemap_lines_falls_back_to_sitemap_xml(
    stocked: ChangeWatch, site: LocalSite, clock: Clock
) -> None:
    """A plain robots.txt naming no sitemap: /sitemap.xml is walked, the host complete."""
    site.routes["/robots.txt"] = Reply(body=b"User-agent: *\nDisallow: /private\n")
    site.routes["/sitemap.xml"] = Reply(
        body=index(site.url("/a.xml", HOST), site.url("/b.xml", HOST))
    )
    result = reconcile_site(stocked, clock, [_site_url(site)])
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (result.status, host.fresh, host.vanished_checked) == ("complete", PAGES, True)


def test_a_robots_txt_over_the_size_limit_is_an_error_and_its_head_is_walked(
    stocked: ChangeWatch, site: LocalSite, clock: Clock
) -> None:
    """A Sitemap: line past 512,000 bytes is unknown: the first sitemap is walked (its
    pages are fresh), the cut is an error, vanished is not computed."""
    filler = b"Disallow: /" + b"x" * 60 + b"\n"
    body = (
        f"Sitemap: {site.url('/a.xml', HOST)}\n".encode()
        + filler * (ROBOTS_MAX_BYTES // len(filler) + 10)
        + b"Sitemap: /b.xml\n"
    )
    site.routes["/robots.txt"] = Reply(body=body)
    result = reconcile_site(stocked, clock, [_site_url(site)])
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (host.fresh, host.vanished, host.vanished_checked) == (10, 0, False)
    assert vanished_findings(stocked, result.run_id) == 0
    [problem] = result.errors
    assert "longer than 512,000 bytes" in problem.error
    assert site.hits("/b.xml") == 0


def test_a_robots_txt_of_exactly_the_limit_is_read_whole(
    stocked: ChangeWatch, site: LocalSite, clock: Clock
) -> None:
    """512,000 bytes are read whole: its last line counts, and the host is complete."""
    tail = b"Sitemap: /b.xml\n"
    head = f"Sitemap: {site.url('/a.xml', HOST)}\n".encode()
    filler = b"#" * (ROBOTS_MAX_BYTES - len(head) - len(tail) - 1) + b"\n"
    body = head + filler + tail
    assert len(body) == ROBOTS_MAX_BYTES
    site.routes["/robots.txt"] = Reply(body=body)
    result = reconcile_site(stocked, clock, [_site_url(site)])
    assert result.errors == []
    assert result.hosts[f"{HOST}:{site.port}"].fresh == PAGES


def test_connection_refused_is_an_error_not_a_guess(
    make_watch: Callable[..., ChangeWatch], clock: Clock
) -> None:
    """Nothing listening on the site's port: an error, status failed, nothing vanished."""
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    watch = make_watch()
    watch.should_parse(f"http://{HOST}:{port}/p0", "<p>stored</p>")
    result = reconcile_site(watch, clock, [f"http://{HOST}:{port}/"])
    assert result.status == "failed"
    [problem] = result.errors
    assert "robots.txt unreachable (cannot connect" in problem.error
    assert result.hosts[f"{HOST}:{port}"].vanished_checked is False


def test_robots_txt_redirecting_to_a_private_address_is_an_error(
    make_watch: Callable[..., ChangeWatch], clock: Clock
) -> None:
    """A public site's robots.txt redirecting to cloud metadata: refused, and an error of
    the run, not a fall-back to /sitemap.xml."""
    requested: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requested.append(request.url.path)
        if request.url.path == "/robots.txt":
            return httpx.Response(302, headers={"Location": "http://169.254.169.254/latest"})
        return httpx.Response(200, content=urlset("http://public.example/p0"))

    watch = make_watch()
    for n in range(3):
        watch.should_parse(f"http://public.example/p{n}", f"<p>stored {n}</p>")
    client = SafeClient(
        resolve=lambda host, port: ["93.184.215.14"], transport=httpx.MockTransport(handler)
    )
    result = reconcile_site(watch, clock, ["http://public.example/"], client=client)
    [problem] = result.errors
    assert "169.254.169.254" in problem.error
    assert "the site's sitemaps are unknown" in problem.error
    assert requested == ["/robots.txt"]
    assert result.hosts["public.example"].vanished_checked is False
