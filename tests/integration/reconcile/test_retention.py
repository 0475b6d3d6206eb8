"""``prune`` removes old reconcile runs with their findings, never a host's latest complete or
accepted run (the shrink guard's baseline), nor a run still going on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.store.reconcile import ReconcileStore
from changewatch.store.tables import reconcile_findings, reconcile_hosts, reconcile_runs

from .._http_server import LocalSite, Reply, serve
from ._lying_site import HOST, PAGES, pages, reconcile_site, stock, urlset

if TYPE_CHECKING:
    from conftest import Clock


@pytest.fixture
def site() -> Iterator[LocalSite]:
    yield from serve()


def _runs(watch: ChangeWatch) -> list[int]:
    with watch.store.engine.connect() as conn:
        return list(conn.execute(sa.select(reconcile_runs.c.id).order_by("id")).scalars())


def _rows(watch: ChangeWatch, table: sa.Table) -> dict[int, int]:
    c = table.c
    with watch.store.engine.connect() as conn:
        rows = conn.execute(sa.select(c.run_id, sa.func.count()).group_by(c.run_id)).all()
    return {int(run): int(n) for run, n in rows}


def test_prune_keeps_each_hosts_latest_complete_and_accepted_runs(
    make_watch: Callable[..., ChangeWatch], site: LocalSite, clock: Clock
) -> None:
    """Four daily runs: two accepted (18 of 20 pages listed, 3 unknown: 5 findings each),
    then one whose listing of nothing is withheld by the shrink guard, then one the guard
    withholds too. Ten days on, a prune of what is older than 5 days removes runs 1 and 3
    with their findings and host rows (the dry run counts them first); run 2 (the last
    accepted one, the baseline) and run 4 (the latest complete) stay, and the next run is
    still judged against run 2 (its baseline)."""
    watch = make_watch()
    stock(watch, site)
    good = urlset(*pages(site, range(2, PAGES)), *(site.url(f"/new{n}", HOST) for n in range(3)))
    sitemap = [site.url("/sitemap.xml", HOST)]
    results = []
    for body in (good, good, urlset(), urlset()):
        site.routes["/sitemap.xml"] = Reply(body=body)
        results.append(reconcile_site(watch, clock, sitemap))
        clock.advance(86400)
    checked = [next(iter(r.hosts.values())).vanished_checked for r in results]
    assert checked == [True, True, False, False]
    runs = [r.run_id for r in results]
    assert _runs(watch) == runs
    assert _rows(watch, reconcile_findings) == {runs[0]: 5, runs[1]: 5}
    clock.advance(6 * 86400)
    dry = watch.prune(1, timedelta(days=5), dry_run=True)
    assert (dry.reconcile_runs_removed, dry.reconcile_findings_removed) == (2, 5)
    assert _runs(watch) == runs
    report = watch.prune(1, timedelta(days=5))
    assert (report.reconcile_runs_removed, report.reconcile_findings_removed) == (2, 5)
    assert _runs(watch) == [runs[1], runs[3]]
    assert _rows(watch, reconcile_findings) == {runs[1]: 5}
    assert set(_rows(watch, reconcile_hosts)) == {runs[1], runs[3]}
    assert watch.prune(1, timedelta(days=5)).reconcile_runs_removed == 0
    # The shrink guard's baseline survived, with the listing it compares against.
    baseline = ReconcileStore(watch.store).previous_host(f"{HOST}:{site.port}")
    assert baseline is not None
    assert (baseline.run_id, baseline.listed) == (runs[1], PAGES - 2 + 3)


def test_prune_keeps_a_run_still_going_on(
    make_watch: Callable[..., ChangeWatch], clock: Clock
) -> None:
    """A run row left ``running`` (its process may still be writing findings) stays."""
    watch = make_watch()
    with watch.store.engine.begin() as conn:
        conn.execute(
            sa.insert(reconcile_runs),
            {"started_at": clock.now, "status": "running", "sites": "https://a.test/"},
        )
    clock.advance(30 * 86400)
    assert watch.prune(1, timedelta(days=1)).reconcile_runs_removed == 0
    assert len(_runs(watch)) == 1
