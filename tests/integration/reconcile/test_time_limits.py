"""Per-host and per-run time limits against a real server that drips one byte at a time.

Each dripping sitemap would hold its fetch to the client's 120 s total timeout, and an index
lists 30 of them: about an hour for one site without a limit. With a limit of about a second
the walk must stop there, say so, and leave the host incomplete. Bounds are generous (tens
of seconds against an hour), never tight wall-clock asserts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from changewatch import ChangeWatch
from changewatch.reconcile import ReconcileResult
from changewatch.sitemaps.fetch import SafeClient

from .._http_server import LocalSite, Reply, serve
from ._lying_site import HOST, index, local_client, pages, reconcile_site, stock, urlset

if TYPE_CHECKING:
    from conftest import Clock

CHILDREN = 30
#: Seconds between the bytes of a dripping answer.
DRIP_S = 0.25
#: Far below an unlimited walk (CHILDREN × 120 s), far above the limits used (about 1 s).
GENEROUS_S = 30.0


@pytest.fixture
def site() -> Iterator[LocalSite]:
    """A real threaded HTTP server on 127.0.0.1."""
    yield from serve()


def _patient_client() -> SafeClient:
    """The client's own defaults: 30 s read timeout, 120 s total per fetch."""
    return local_client(read_timeout=30.0, total_timeout=120.0)


def _dripping_index(site: LocalSite, host: str = HOST) -> None:
    """/sitemap.xml lists CHILDREN sitemaps, each answered one byte every DRIP_S seconds."""
    children = [site.url(f"/drip{n}.xml", host) for n in range(CHILDREN)]
    site.routes[f"{host}/sitemap.xml"] = Reply(body=index(*children))
    for n in range(CHILDREN):
        body = urlset(*pages(site, [n]))
        site.routes[f"{host}/drip{n}.xml"] = Reply(body=body, drip=DRIP_S)


def _timed(run: Callable[[], ReconcileResult]) -> tuple[ReconcileResult, float]:
    began = time.monotonic()
    result = run()
    return result, time.monotonic() - began


def test_the_host_time_limit_stops_a_dripping_walk(
    make_watch: Callable[..., ChangeWatch], site: LocalSite, clock: Clock
) -> None:
    """A 1 s host limit stops the walk in seconds, not hours: the fetch in progress is cut,
    the other sitemaps are not fetched, the host is incomplete and the errors say why."""
    watch = make_watch()
    stock(watch, site)
    _dripping_index(site)
    argument = site.url("/sitemap.xml", HOST)
    result, took = _timed(
        lambda: reconcile_site(
            watch,
            clock,
            [argument],
            client=_patient_client(),
            source_options={"host_time_limit": 1.0},
        )
    )
    assert took < GENEROUS_S
    host = result.hosts[f"{HOST}:{site.port}"]
    assert (host.vanished, host.vanished_checked) == (0, False)
    messages = [problem.error for problem in result.errors]
    assert messages[0] == "the host's time limit of 1 s passed"
    assert messages[1].startswith("not fetched: the host's time limit of 1 s passed (")
    assert sum(site.hits(f"/drip{n}.xml") for n in range(CHILDREN)) <= 2


def test_the_limit_grows_the_walk_and_nothing_else(
    make_watch: Callable[..., ChangeWatch], site: LocalSite, clock: Clock
) -> None:
    """Tripling the host limit roughly triples the time spent (a ratio, not a time)."""
    watch = make_watch()
    stock(watch, site)
    _dripping_index(site)
    argument = site.url("/sitemap.xml", HOST)
    took = []
    for limit in (0.5, 1.5):
        _, seconds = _timed(
            lambda limit=limit: reconcile_site(  # type: ignore[misc]
                watch,
                clock,
                [argument],
                client=_patient_client(),
                source_options={"host_time_limit": limit},
                record=False,
            )
        )
        took.append(seconds)
    assert 1.5 < took[1] / took[0] < 6.0, took


def test_the_run_time_limit_spans_hosts(
    make_watch: Callable[..., ChangeWatch], site: LocalSite, clock: Clock
) -> None:
    """A run limit stops the first host's walk and the second host is not walked at all:
    both incomplete, each error naming the run's limit."""
    watch = make_watch()
    stock(watch, site)
    _dripping_index(site)
    _dripping_index(site, "other.test")
    arguments = [site.url("/sitemap.xml", HOST), site.url("/sitemap.xml", "other.test")]
    result, took = _timed(
        lambda: reconcile_site(
            watch,
            clock,
            arguments,
            client=_patient_client(),
            source_options={"run_time_limit": 1.0, "host_time_limit": None},
        )
    )
    assert took < GENEROUS_S
    hosts = result.hosts
    assert not hosts[f"{HOST}:{site.port}"].vanished_checked
    assert not hosts[f"other.test:{site.port}"].vanished_checked
    errors = {problem.sitemap: problem.error for problem in result.errors}
    assert errors[arguments[1]] == "not walked: the run's time limit of 1 s passed"
    assert site.hits("/drip0.xml") == 1  # only the first host's first child was started


def test_a_dripping_robots_txt_is_cut_at_the_host_limit(
    make_watch: Callable[..., ChangeWatch], site: LocalSite, clock: Clock
) -> None:
    """Discovery counts against the host's limit: a robots.txt dripped byte by byte ends as
    an error naming the limit, and nothing is guessed."""
    watch = make_watch()
    stock(watch, site)
    site.routes["/robots.txt"] = Reply(body=b"User-agent: *\n" * 40, drip=DRIP_S)
    result, took = _timed(
        lambda: reconcile_site(
            watch,
            clock,
            [site.url("/", HOST)],
            client=_patient_client(),
            source_options={"host_time_limit": 1.0},
        )
    )
    assert took < GENEROUS_S
    [problem] = result.errors
    assert "the host's time limit of 1 s passed" in problem.error
    assert "the site's sitemaps are unknown" in problem.error
    assert site.hits("/sitemap.xml") == 0


def test_arguments_of_one_host_share_its_limit(
    make_watch: Callable[..., ChangeWatch], site: LocalSite, clock: Clock
) -> None:
    """Two sitemap arguments of the same host spend one budget: the second is not walked."""
    watch = make_watch()
    stock(watch, site)
    site.routes["/slow-a.xml"] = Reply(body=urlset(*pages(site, range(5))), drip=DRIP_S)
    site.routes["/b.xml"] = Reply(body=urlset(*pages(site, range(5, 10))))
    arguments = [site.url("/slow-a.xml", HOST), site.url("/b.xml", HOST)]
    result = reconcile_site(
        watch,
        clock,
        arguments,
        client=_patient_client(),
        source_options={"host_time_limit": 1.0},
    )
    errors = {problem.sitemap: problem.error for problem in result.errors}
    assert errors[arguments[0]] == "the host's time limit of 1 s passed"
    assert errors[arguments[1]] == "not walked: the host's time limit of 1 s passed"
    assert site.hits("/b.xml") == 0


def test_time_limits_must_be_positive() -> None:
    """A zero or negative limit is refused with a message naming it."""
    from changewatch.reconcile.sources import WalkSource
    from changewatch.sitemaps.model import Limits

    with local_client() as client:
        with pytest.raises(ValueError, match="host_time_limit"):
            WalkSource(["https://x.test/"], client, limits=Limits(), host_time_limit=0)
        with pytest.raises(ValueError, match="run_time_limit"):
            WalkSource(["https://x.test/"], client, limits=Limits(), run_time_limit=-1.0)
