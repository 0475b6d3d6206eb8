"""The shrink guard against a real server and store: a listing too small to believe
withholds vanished, says why, and is compared with the host's last accepted run (issue 16).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.errors import ConfigError
from changewatch.reconcile import ReconcileResult
from changewatch.reconcile.guard import ShrinkGuard
from changewatch.store.tables import reconcile_hosts

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
    """A store of the host's 20 pages."""
    watch = make_watch()
    stock(watch, site)
    return watch


def _serve(site: LocalSite, body: bytes) -> list[str]:
    site.routes["/sitemap.xml"] = Reply(body=body)
    return [site.url("/sitemap.xml", HOST)]


def _host(site: LocalSite, result: ReconcileResult) -> Any:
    return result.hosts[f"{HOST}:{site.port}"]


def _hosts_rows(watch: ChangeWatch) -> list[Any]:
    with watch.store.engine.connect() as conn:
        return list(conn.execute(sa.select(reconcile_hosts).order_by(reconcile_hosts.c.run_id)))


@pytest.mark.parametrize("shape", ["empty urlset", "index listing itself", "empty index"])
def test_a_listing_of_nothing_withholds_vanished(
    stocked: ChangeWatch, site: LocalSite, clock: Clock, shape: str
) -> None:
    """A complete walk that lists no page of the host: vanished withheld (before issue 16:
    all 20 stored pages vanished, status complete), and the run record says why."""
    own = site.url("/sitemap.xml", HOST)
    body = {"empty urlset": urlset(), "index listing itself": index(own), "empty index": index()}
    result = reconcile_site(stocked, clock, _serve(site, body[shape]))
    host = _host(site, result)
    assert (host.vanished, host.vanished_checked) == (0, False)
    assert vanished_findings(stocked, result.run_id) == 0
    assert (
        host.shrink
        == f"the sitemaps list no page of the host: all {PAGES} stored pages would vanish"
    )
    assert host.vanished_withheld == f"shrink guard: {host.shrink}"
    [row] = _hosts_rows(stocked)
    assert (row.run_id, row.stored, row.vanished_checked) == (result.run_id, PAGES, False)
    assert row.vanished_withheld == host.vanished_withheld
    assert row.shrink_guard == host.shrink


def test_half_the_host_vanishing_is_withheld_and_can_be_forced(
    stocked: ChangeWatch, site: LocalSite, clock: Clock
) -> None:
    """10 of 20 stored pages vanishing (50% > 20%) is withheld; force_vanished reports them
    and records that the guard was overridden."""
    arguments = _serve(site, urlset(*pages(site, range(10))))
    held = _host(site, reconcile_site(stocked, clock, arguments))
    assert (held.vanished, held.vanished_checked) == (0, False)
    assert held.shrink.startswith("10 of 20 stored pages (50%) would vanish")
    forced = reconcile_site(stocked, clock, arguments, force_vanished=True)
    host = _host(site, forced)
    assert (host.vanished, host.vanished_checked, host.shrink) == (10, True, held.shrink)
    assert vanished_findings(stocked, forced.run_id) == 10
    rows = _hosts_rows(stocked)
    assert [(r.vanished_checked, r.vanished) for r in rows] == [(False, 0), (True, 10)]
    assert rows[1].shrink_guard == held.shrink
    assert rows[1].vanished_withheld is None


def test_a_small_removal_is_reported(stocked: ChangeWatch, site: LocalSite, clock: Clock) -> None:
    """One page of 20 gone (5%): vanished reported, no guard finding."""
    result = reconcile_site(stocked, clock, _serve(site, urlset(*pages(site, range(1, PAGES)))))
    host = _host(site, result)
    assert (host.vanished, host.vanished_checked, host.shrink) == (1, True, None)


def test_pages_vanished_in_the_last_accepted_run_do_not_trip_it_again(
    stocked: ChangeWatch, site: LocalSite, clock: Clock
) -> None:
    """Once a big removal was accepted (forced), the same vanished pages next run are not
    new: reported without force. A further drop is new again and withheld."""
    arguments = _serve(site, urlset(*pages(site, range(10))))
    reconcile_site(stocked, clock, arguments, force_vanished=True)
    again = _host(site, reconcile_site(stocked, clock, arguments))
    assert (again.vanished, again.vanished_checked, again.shrink) == (10, True, None)
    _serve(site, urlset(*pages(site, range(4))))  # six more gone: 30% of the stored pages
    worse = _host(site, reconcile_site(stocked, clock, arguments))
    assert worse.vanished_checked is False
    assert worse.shrink.startswith("6 of 20 stored pages (30%) would vanish since run ")


def test_a_listing_that_shrank_since_the_last_accepted_run_is_withheld(
    stocked: ChangeWatch, site: LocalSite, clock: Clock
) -> None:
    """A listing of 100 (20 stored, 80 never crawled) that drops to 48 is suspect although
    only 2 of 20 stored pages (10%) would vanish; the baseline stays the last accepted run."""
    unstored = [site.url(f"/new{n}", HOST) for n in range(80)]
    arguments = _serve(site, urlset(*pages(site, range(PAGES)), *unstored))
    first = reconcile_site(stocked, clock, arguments)
    assert _host(site, first).missing == 80
    _serve(site, urlset(*pages(site, range(18)), *unstored[:30]))
    shrunk = _host(site, reconcile_site(stocked, clock, arguments))
    assert shrunk.vanished_checked is False
    assert shrunk.shrink == (
        f"the listing shrank from 100 pages (run {first.run_id}) to 48 (-52%), more than the "
        "shrink guard allows (20%)"
    )
    again = _host(site, reconcile_site(stocked, clock, arguments))  # still against run 1
    assert again.shrink == shrunk.shrink


def test_the_share_is_configurable_and_the_guard_can_be_off(
    stocked: ChangeWatch, site: LocalSite, clock: Clock
) -> None:
    """max_share 0.6 lets a 50% drop through; shrink_guard=None never withholds."""
    arguments = _serve(site, urlset(*pages(site, range(10))))
    loose = reconcile_site(stocked, clock, arguments, shrink_guard=ShrinkGuard(max_share=0.6))
    assert _host(site, loose).vanished == 10
    _serve(site, urlset())
    off = reconcile_site(stocked, clock, arguments, shrink_guard=None)
    assert (_host(site, off).vanished, _host(site, off).shrink) == (PAGES, None)


def test_small_hosts_are_judged_by_the_empty_rule_only(
    make_watch: Callable[..., ChangeWatch], site: LocalSite, clock: Clock
) -> None:
    """Under min_pages (10) stored pages, 2 of 3 vanishing is reported; none listed is not."""
    watch = make_watch()
    stock(watch, site, count=3)
    arguments = _serve(site, urlset(*pages(site, [0])))
    assert _host(site, reconcile_site(watch, clock, arguments)).vanished == 2
    _serve(site, urlset())
    assert _host(site, reconcile_site(watch, clock, arguments)).vanished_checked is False


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_share": 0}, "max_share"),
        ({"max_share": 1.5}, "max_share"),
        ({"min_pages": -1}, "min_pages"),
    ],
)
def test_bad_guard_settings_are_refused(options: dict[str, Any], message: str) -> None:
    """A share outside (0, 1] or a negative page floor is a ConfigError naming it."""
    with pytest.raises(ConfigError, match=message):
        ShrinkGuard(**options)
