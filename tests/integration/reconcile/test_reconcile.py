"""Sitemap reconciliation against real stores (SQLite and Postgres): findings, runs, locks."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.reconcile import (
    Finding,
    ReconcileResult,
    StaticSource,
    reconcile,
    run_reconcile,
)
from changewatch.reconcile.index import DEFAULT_MAX_ROWS
from changewatch.sitemaps.model import SitemapURL
from changewatch.store.reconcile import ReconcileStore
from changewatch.store.tables import reconcile_findings, reconcile_runs
from changewatch.urls import url_digest

if TYPE_CHECKING:
    from conftest import Clock

SITE = "https://shop.example"
SITEMAP = f"{SITE}/sitemap.xml"
HOST = "shop.example"


def _entry(path: str, lastmod: datetime | None = None, host: str = SITE) -> SitemapURL:
    return SitemapURL(f"{host}{path}", lastmod, SITEMAP)


def _page(n: int) -> str:
    return f"<html><body><h1>page {n}</h1><p>{'words ' * 40} {n}</p></body></html>"


def _run(
    watch: ChangeWatch,
    clock: Clock,
    listed: Sequence[SitemapURL],
    *,
    complete: bool = True,
    record: bool = True,
    recrawl: list[str] | None = None,
    max_host_rows: int = DEFAULT_MAX_ROWS,
) -> ReconcileResult:
    hosts = frozenset({HOST})
    source = StaticSource(listed, hosts, hosts if complete else frozenset())
    return run_reconcile(
        source,
        store=ReconcileStore(watch.store),
        clock=clock,
        sites=[SITE],
        url_policy=watch.url_policy,
        record=record,
        recrawl=None if recrawl is None else recrawl.extend,
        max_host_rows=max_host_rows,
    )


#: Both ways of reading the store: the host read whole into memory (Postgres, the default),
#: and batched lookups (forced with max_host_rows=0; always so on SQLite).
HOST_ROWS = pytest.mark.parametrize(
    "host_rows", [DEFAULT_MAX_ROWS, 0], ids=["host-in-memory", "lookups"]
)


def _findings(watch: ChangeWatch, run_id: int) -> dict[str, set[str | None]]:
    f = reconcile_findings.c
    with watch.store.engine.connect() as conn:
        rows = conn.execute(sa.select(f.kind, f.url).where(f.run_id == run_id)).all()
    found: dict[str, set[str | None]] = {}
    for kind, url in rows:
        found.setdefault(kind, set()).add(url)
    return found


@pytest.fixture
def stocked(make_watch: Callable[..., ChangeWatch], clock: Clock) -> ChangeWatch:
    """A store holding /fresh, /stale, /gone on the site and /elsewhere on another host."""
    watch = make_watch()
    for n, path in enumerate(("/fresh", "/stale", "/gone")):
        assert watch.should_parse(f"{SITE}{path}", _page(n)).kind == "new"
    watch.should_parse("https://other.example/elsewhere", _page(9))
    clock.advance(3600)
    return watch


@HOST_ROWS
def test_missing_stale_vanished_fresh_exact(
    stocked: ChangeWatch, clock: Clock, host_rows: int
) -> None:
    """Each listed or stored page lands in exactly one kind; the run and findings are recorded."""
    stored_at = clock.now - timedelta(seconds=3600)
    recrawl: list[str] = []
    result = _run(
        stocked,
        clock,
        [
            _entry("/fresh", stored_at - timedelta(days=1)),
            _entry("/stale", stored_at + timedelta(minutes=5)),
            _entry("/new-page"),
            _entry("/fresh?utm_source=x"),  # the same canonical page, listed again
            SitemapURL("javascript:alert(1)", None, SITEMAP),
        ],
        recrawl=recrawl,
        max_host_rows=host_rows,
    )
    host = result.hosts[HOST]
    assert result.totals() == {"missing": 1, "stale": 1, "vanished": 1, "fresh": 1}
    assert (host.listed, host.duplicates, host.invalid) == (4, 1, 1)
    assert host.vanished_checked
    assert "other.example" not in result.hosts  # not a start host, nothing listed there
    assert sorted(recrawl) == [f"{SITE}/new-page", f"{SITE}/stale"]
    assert result.run_id is not None
    assert _findings(stocked, result.run_id) == {
        "missing": {f"{SITE}/new-page"},
        "stale": {f"{SITE}/stale"},
        "vanished": {f"{SITE}/gone"},
    }
    with stocked.store.engine.connect() as conn:
        run = conn.execute(sa.select(reconcile_runs)).one()
    assert (run.status, run.missing, run.stale, run.vanished, run.fresh, run.errors) == (
        "complete",
        1,
        1,
        1,
        1,
        0,
    )
    assert run.finished_at == clock.now
    assert run.runner_pid is None
    assert run.sites == SITE


@HOST_ROWS
def test_seen_but_never_stored_is_missing(
    stocked: ChangeWatch, clock: Clock, host_rows: int
) -> None:
    """A URL the seen-set says was seen (a Bloom false positive, say) but the store lacks is
    reported missing: the lookup is exact, in the store."""
    url = f"{SITE}/marked-only"
    assert stocked.mark_seen(url)
    assert not stocked.mark_seen(url)  # the seen-set now claims it
    listed = [_entry("/marked-only"), _entry("/fresh"), _entry("/stale")]
    result = _run(stocked, clock, listed, max_host_rows=host_rows)
    assert result.hosts[HOST].missing == 1
    assert result.run_id is not None
    assert _findings(stocked, result.run_id)["missing"] == {url}


def test_incomplete_walk_reports_no_vanished(stocked: ChangeWatch, clock: Clock) -> None:
    """A host whose walk was incomplete gets no vanished count and no vanished finding."""
    result = _run(stocked, clock, [_entry("/fresh")], complete=False)
    host = result.hosts[HOST]
    assert (host.vanished, host.vanished_checked, host.fresh) == (0, False, 1)
    assert result.run_id is not None
    assert "vanished" not in _findings(stocked, result.run_id)


@HOST_ROWS
def test_empty_sitemap_of_a_complete_host_vanishes_every_page(
    stocked: ChangeWatch, clock: Clock, host_rows: int
) -> None:
    """A complete walk that listed nothing reports every stored page of the host vanished."""
    result = _run(stocked, clock, [], max_host_rows=host_rows)
    assert result.totals() == {"missing": 0, "stale": 0, "vanished": 3, "fresh": 0}


@pytest.mark.parametrize(("policy", "shown"), [("no-query", f"{SITE}/item"), ("none", None)])
def test_url_policy_applies_to_findings(
    make_watch: Callable[..., ChangeWatch], clock: Clock, policy: str, shown: str | None
) -> None:
    """Findings keep URLs as the storage policy allows; the recrawl list keeps the full URL."""
    watch = make_watch(url_policy=policy)
    watch.should_parse(f"{SITE}/old?id=1", _page(1))
    recrawl: list[str] = []
    result = _run(watch, clock, [_entry("/item?id=7")], recrawl=recrawl)
    assert recrawl == [f"{SITE}/item?id=7"]
    assert result.run_id is not None
    found = _findings(watch, result.run_id)
    assert found["missing"] == {shown}
    assert found["vanished"] == {None if policy == "none" else f"{SITE}/old"}
    f = reconcile_findings.c
    with watch.store.engine.connect() as conn:
        digest = conn.execute(sa.select(f.url_digest).where(f.kind == "vanished")).scalar_one()
    assert bytes(digest) == url_digest(f"{SITE}/old?id=1")


@HOST_ROWS
def test_lastmod_trust_from_history(
    make_watch: Callable[..., ChangeWatch], clock: Clock, host_rows: int
) -> None:
    """agrees / ahead / behind follow the stored versions; stale and first-only don't count."""
    watch = make_watch()
    paths = ("/agrees", "/behind", "/ahead", "/stale", "/first-only")
    for n, path in enumerate(paths):
        watch.should_parse(f"{SITE}{path}", _page(n))
    t1 = clock.now
    clock.advance(100)  # t2: refetched, unchanged
    for n, path in enumerate(paths):
        watch.should_parse(f"{SITE}{path}", _page(n))
    t2 = clock.now
    clock.advance(100)  # t3: changed
    for n, path in enumerate(paths[:4]):
        assert watch.should_parse(f"{SITE}{path}", _page(n + 50)).kind in ("changed", "minor")
    t3 = clock.now
    clock.advance(100)  # t4: refetched, unchanged
    for n, path in enumerate(paths[:4]):
        watch.should_parse(f"{SITE}{path}", _page(n + 50))
    t4 = clock.now
    second = timedelta(seconds=1)
    result = _run(
        watch,
        clock,
        [
            _entry("/agrees", t2 + 50 * second),
            _entry("/behind", t2 - 50 * second),
            _entry("/ahead", t3 + 50 * second),
            _entry("/stale", t4 + second),
            _entry("/first-only", t1 - second),
        ],
        max_host_rows=host_rows,
    )
    trust = result.hosts[HOST].trust
    assert (trust.agrees, trust.ahead, trust.behind, trust.comparable) == (1, 1, 1, 3)
    assert trust.trust == pytest.approx(1 / 3)
    assert result.hosts[HOST].stale == 1


def test_batches_and_sink(stocked: ChangeWatch, clock: Clock) -> None:
    """Small batches give the same answer; the sink sees every finding exactly once."""
    listed = [_entry(f"/n{i}") for i in range(25)] + [_entry("/fresh"), _entry("/stale")]
    seen: list[Finding] = []
    result = reconcile(
        StaticSource(listed, frozenset({HOST})),
        store=ReconcileStore(stocked.store),
        sink=lambda findings, _urls: seen.extend(findings),
        batch=7,
    )
    assert result.totals() == {"missing": 25, "stale": 0, "vanished": 1, "fresh": 2}
    assert sorted(f.url or "" for f in seen if f.kind == "missing") == sorted(
        f"{SITE}/n{i}" for i in range(25)
    )
    assert len(seen) == 26


def test_no_record_writes_no_run(stocked: ChangeWatch, clock: Clock) -> None:
    """--no-record: the result is computed, nothing is written to the run tables."""
    result = _run(stocked, clock, [_entry("/fresh")], record=False)
    assert result.run_id is None
    with stocked.store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(reconcile_runs)).scalar() == 0


def _hold_lock(url: str, ready: Any, release: Any) -> None:
    watch = ChangeWatch(database_url=url, seen_url="memory:")
    try:
        with ReconcileStore(watch.store).site_locks([HOST]) as busy:
            assert busy == []
            ready.set()
            release.wait(30)
    finally:
        watch.close()


def test_site_lock_refuses_a_second_process(
    database_url: str, make_watch: Callable[..., ChangeWatch]
) -> None:
    """While one process holds a site's lock another is refused; after it ends, it is free."""
    watch = make_watch()
    store = ReconcileStore(watch.store)
    context = multiprocessing.get_context("spawn")
    ready, release = context.Event(), context.Event()
    holder = context.Process(target=_hold_lock, args=(database_url, ready, release))
    holder.start()
    try:
        assert ready.wait(30)
        with store.site_locks([HOST, "other.example"]) as busy:
            assert busy == [HOST]
        with store.site_locks(["other.example"]) as busy:
            assert busy == []
    finally:
        release.set()
        holder.join(30)
    assert holder.exitcode == 0
    with store.site_locks([HOST]) as busy:
        assert busy == []


def test_stop_request_interrupts_and_is_recorded(stocked: ChangeWatch, clock: Clock) -> None:
    """should_stop answered between batches: status interrupted, no vanished diff, row closed."""
    listed = [_entry(f"/n{i}") for i in range(3000)]
    result = run_reconcile(
        StaticSource(listed, frozenset({HOST})),
        store=ReconcileStore(stocked.store),
        clock=clock,
        sites=[SITE],
        should_stop=lambda: True,  # asked to stop as soon as the first batch is done
    )
    assert result.status == "interrupted"
    assert result.hosts[HOST].missing == 1000  # the first batch only
    assert not result.hosts[HOST].vanished_checked
    with stocked.store.engine.connect() as conn:
        run = conn.execute(sa.select(reconcile_runs)).one()
    assert (run.status, run.missing) == ("interrupted", 1000)


class _Broken(StaticSource):
    def entries(self) -> Iterator[SitemapURL]:
        yield _entry("/fresh")
        raise RuntimeError("the source broke")


def test_a_failing_run_is_closed_as_failed(stocked: ChangeWatch, clock: Clock) -> None:
    """An exception inside the run propagates, and the run row is closed as failed."""
    with pytest.raises(RuntimeError, match="the source broke"):
        run_reconcile(
            _Broken([], frozenset({HOST})),
            store=ReconcileStore(stocked.store),
            clock=clock,
            sites=[SITE],
        )
    with stocked.store.engine.connect() as conn:
        run = conn.execute(sa.select(reconcile_runs)).one()
    assert run.status == "failed"
    assert run.finished_at == clock.now


def test_other_hosts_listed_get_no_vanished(stocked: ChangeWatch, clock: Clock) -> None:
    """Entries on a host that is not a start host are reconciled, but never vanished-checked."""
    result = _run(
        stocked,
        clock,
        [
            _entry("/fresh"),
            _entry("/elsewhere", host="https://other.example"),
            _entry("/x", host="https://other.example"),
        ],
    )
    other = result.hosts["other.example"]
    assert (other.fresh, other.missing, other.vanished, other.vanished_checked) == (1, 1, 0, False)
    assert result.hosts[HOST].vanished == 2  # /stale and /gone


def _collect(
    watch: ChangeWatch, listed: Sequence[SitemapURL], max_host_rows: int
) -> tuple[ReconcileResult, set[tuple[Any, ...]]]:
    found: set[tuple[Any, ...]] = set()
    recrawl: list[str] = []

    def sink(findings: Sequence[Finding], urls: Sequence[str]) -> None:
        found.update(
            (f.kind, f.url, f.url_digest, f.sitemap_lastmod, f.stored_last_seen) for f in findings
        )
        recrawl.extend(urls)

    result = reconcile(
        StaticSource(listed, frozenset({HOST})),
        store=ReconcileStore(watch.store),
        sink=sink,
        batch=37,
        max_host_rows=max_host_rows,
    )
    found.add(("recrawl", tuple(sorted(recrawl))))
    return result, found


def test_host_in_memory_and_lookups_give_the_same_answer(
    make_watch: Callable[..., ChangeWatch], clock: Clock
) -> None:
    """A host read whole and a host looked up in batches agree on every count, every trust
    verdict and every finding — with pages of one, two and three versions, lastmods on both
    sides of every stored time, repeats within and across batches, and pages never stored."""
    import random

    rng = random.Random(7)
    watch = make_watch()
    times: dict[int, list[datetime]] = {}
    for n in range(240):
        watch.should_parse(f"{SITE}/p/{n}", _page(n))
        times[n] = [clock.now]
    for round_ in range(1, 3):
        clock.advance(600)
        for n in range(0, 240, round_ + 1):
            version = n + 1000 * round_ if rng.random() < 0.6 else n  # changed or refetched
            watch.should_parse(f"{SITE}/p/{n}", _page(version))
            times[n].append(clock.now)
    clock.advance(600)
    listed = []
    for n in rng.sample(range(320), 260):  # 0-239 stored, 240-319 never stored
        base = rng.choice(times.get(n, [clock.now]))
        lastmod = rng.choice([None, base, base + timedelta(seconds=rng.randint(-900, 900))])
        listed.append(_entry(f"/p/{n}", lastmod))
    listed += rng.sample(listed, 40)  # repeats, some within a batch of 37, some across
    rng.shuffle(listed)

    in_memory, found_in_memory = _collect(watch, listed, DEFAULT_MAX_ROWS)
    lookups, found_lookups = _collect(watch, listed, 0)
    a, b = in_memory.hosts[HOST], lookups.hosts[HOST]
    assert in_memory.totals() == lookups.totals()
    assert (a.listed, a.duplicates, a.invalid, a.vanished_checked) == (
        b.listed,
        b.duplicates,
        b.invalid,
        b.vanished_checked,
    )
    assert (a.trust.agrees, a.trust.ahead, a.trust.behind) == (
        b.trust.agrees,
        b.trust.ahead,
        b.trust.behind,
    )
    assert found_in_memory == found_lookups
    # The scenario exercises every outcome, so agreement means something.
    totals = in_memory.totals()
    assert all(totals[kind] > 0 for kind in ("missing", "stale", "vanished", "fresh"))
    assert a.duplicates >= 40
    assert min(a.trust.agrees, a.trust.ahead, a.trust.behind) > 0


def test_host_index_is_read_on_postgres_only_and_within_the_cap(stocked: ChangeWatch) -> None:
    store = ReconcileStore(stocked.store)
    index = store.host_index(HOST, DEFAULT_MAX_ROWS)
    if store.dialect != "postgresql":
        assert index is None  # SQLite lookups are in-process already
        return
    assert index is not None
    with stocked.store.engine.connect() as conn:
        stored = conn.execute(
            sa.text("SELECT count(*) FROM page_snapshots WHERE host = :h"), {"h": HOST}
        ).scalar_one()
    assert len(index) == stored == 3
    assert index.nbytes >= 3 * 41  # 41 bytes a page, plus the bucket table
    assert store.host_index(HOST, 2) is None  # over the cap: batched lookups instead
    assert store.host_index(HOST, 0) is None
    empty = store.host_index("nothing-stored.example", DEFAULT_MAX_ROWS)
    assert empty is not None
    assert len(empty) == 0


def test_the_walk_goes_on_while_a_start_host_is_read(stocked: ChangeWatch, clock: Clock) -> None:
    """Entries read while the start host's pages are still loading wait in a stash and are
    classified once the index arrives: the walk is not held up, the answer is the same."""
    import threading

    released = threading.Event()
    read_before_release: list[int] = []

    class SlowStore(ReconcileStore):
        def host_index(self, host: str, max_rows: int) -> Any:
            if not released.wait(10):  # without the stash the walk waits for this read
                raise TimeoutError("the walk was held up while the host was read")
            return super().host_index(host, max_rows)

    class Source(StaticSource):
        def entries(self) -> Iterator[SitemapURL]:
            for n, entry in enumerate(self.listed):
                if n == 3_500:
                    read_before_release.append(n)
                    released.set()
                yield entry

    listed = [_entry(f"/n{i}") for i in range(5_000)] + [_entry("/fresh"), _entry("/stale")]
    result = reconcile(
        Source(listed, frozenset({HOST})),
        store=SlowStore(stocked.store),
        sink=lambda _findings, _urls: None,
    )
    assert read_before_release == [3_500]  # 3 batches went by before the read finished
    assert result.totals() == {"missing": 5_000, "stale": 0, "vanished": 1, "fresh": 2}
    assert result.hosts[HOST].listed == 5_002


def test_hosts_held_in_memory_share_one_budget(stocked: ChangeWatch, clock: Clock) -> None:
    """max_host_rows bounds the stored pages held over all hosts: the second host does not
    fit in what the first left and is looked up in batches, with the same answer."""
    asked: list[tuple[str, int, bool]] = []

    class Recording(ReconcileStore):
        def host_index(self, host: str, max_rows: int) -> Any:
            index = super().host_index(host, max_rows)
            asked.append((host, max_rows, index is not None))
            return index

    stocked.should_parse("https://other.example/two", _page(10))
    stocked.should_parse("https://other.example/three", _page(11))
    listed = [
        _entry("/fresh"),
        _entry("/new"),
        _entry("/elsewhere", host="https://other.example"),
        _entry("/missing", host="https://other.example"),
    ]
    result = reconcile(
        StaticSource(listed, frozenset({HOST})),
        store=Recording(stocked.store),
        sink=lambda _findings, _urls: None,
        max_host_rows=4,
    )
    assert result.hosts[HOST].fresh == result.hosts[HOST].missing == 1
    assert result.hosts["other.example"].fresh == result.hosts["other.example"].missing == 1
    if stocked.store.dialect == "postgresql":
        # shop.example (3 pages) is read whole; other.example (3) does not fit in 4 - 3 = 1.
        assert asked == [(HOST, 4, True), ("other.example", 1, False)]
    else:
        assert all(not in_memory for _, _, in_memory in asked)
