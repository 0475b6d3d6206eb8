"""Change-rate estimates kept on every write, and ``due`` (both dialects)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory

from changewatch import ChangeWatch
from changewatch.schedule import (
    DEFAULT_PRIOR_RATE_PER_DAY,
    RATE_BAND_FACTOR,
    change_rate,
    due_in_days,
    rate_band,
)
from changewatch.store.migrate import alembic_config, upgrade
from changewatch.store.rates import band_expr, rate_expr
from changewatch.store.schedule import _due
from changewatch.store.tables import page_snapshots

from .._pages import long_page, rewrite, snapshot

if TYPE_CHECKING:
    from conftest import Clock

DAY_S = 86_400.0


def _visit(watch: ChangeWatch, clock: Clock, url: str, pattern: str, every_s: float) -> bytes:
    """Fetch ``url`` once per character of ``pattern``: ``c`` a new text, ``.`` the same."""
    seed = 0
    digest = b""
    for i, step in enumerate(pattern):
        if i:
            clock.advance(every_s)
        seed += step == "c"
        digest = watch.should_parse(url, rewrite(seed)).url_digest
    return digest


@pytest.mark.parametrize("pattern", ["n", "n....", "nc.c.", "ncccc", "n.c..c..c", "n" + "." * 20])
def test_stored_rate_equals_the_estimator(watch: ChangeWatch, clock: Clock, pattern: str) -> None:
    """The rate written in SQL on every path equals change_rate(n, X, span) in Python."""
    first = clock.now
    digest = _visit(watch, clock, "https://example.com/p", pattern, 0.5 * DAY_S)
    row = snapshot(watch, digest)
    n, x = len(pattern) - 1, pattern.count("c")
    assert (row.fetch_count - 1, row.change_count) == (n, x)
    expected = change_rate(n, x, (clock.now - first) / timedelta(days=1))
    assert row.change_rate == pytest.approx(expected, rel=1e-9)
    due_at = row.last_seen + timedelta(days=due_in_days(expected))
    assert abs((row.due_at - due_at).total_seconds()) < 0.01
    assert row.rate_band == rate_band(row.change_rate)


def test_the_sql_estimate_equals_python_on_a_grid(watch: ChangeWatch, clock: Clock) -> None:
    """rate_expr and band_expr, evaluated by the database, against change_rate and
    rate_band on a grid that reaches every branch: one fetch, no change, more changes than
    intervals, a clock that went back (negative span), a span of a millionth of a day and of
    a million days, and rates past both ends of the band range (clamped)."""
    start = clock.now.replace(year=2100)
    cases = [
        (n, x, days)
        for n in (0, 1, 2, 7, 1000, 10**6)
        for x in sorted({0, 1, n // 2, n, n + 3})
        for days in (-1.0, 0.0, 1e-6, 0.5, 10.0, 1e6)
    ]
    n_, x_ = sa.bindparam("n", type_=sa.BigInteger), sa.bindparam("x", type_=sa.Integer)
    first = sa.bindparam("first", type_=page_snapshots.c.first_seen.type)
    now = sa.bindparam("now", type_=page_snapshots.c.first_seen.type)
    rate = rate_expr(n_, x_, first, now)
    query = sa.select(rate, band_expr(rate))
    # SQLite's date functions keep milliseconds: a span of 86.4 ms reads as 86 (against
    # the prior's half day, a relative error of 1e-8).
    tolerance = 1e-7 if watch.store.dialect == "sqlite" else 1e-12
    bands = set()
    with watch.store.engine.connect() as conn:
        for n, x, days in cases:
            got_rate, got_band = conn.execute(
                query, {"n": n, "x": x, "first": start, "now": start + timedelta(days=days)}
            ).one()
            expected = change_rate(n, x, days)
            assert got_rate == pytest.approx(expected, rel=tolerance), (n, x, days)
            assert got_band == rate_band(expected), (n, x, days, got_rate)
            bands.add(got_band)
    assert {-40, 40} <= bands  # both clamps reached


def test_not_modified_and_fast_path_update_the_estimate(watch: ChangeWatch, clock: Clock) -> None:
    """Raw fast-path hits and 304s count as fetches without change in the estimate."""
    url = "https://example.com/q"
    d = watch.should_parse(url, long_page())
    assert snapshot(watch, d.url_digest).change_rate == DEFAULT_PRIOR_RATE_PER_DAY
    clock.advance(DAY_S)
    assert watch.should_parse(url, long_page()).path == "raw"
    clock.advance(DAY_S)
    assert watch.should_parse(url, None, status=304).path == "not-modified"
    row = snapshot(watch, d.url_digest)
    assert row.change_rate == pytest.approx(change_rate(2, 0, 2.0))
    assert row.change_rate == pytest.approx(0.5 / 2.5)  # the prior's half change in 2.5 days


@pytest.mark.parametrize("gap_s", [0.5, 30.0, 600.0, 3 * 3600.0, 2 * DAY_S])
def test_unchanged_refetch_ranks_below_pages_fetched_once(
    watch: ChangeWatch, clock: Clock, gap_s: float
) -> None:
    """An unchanged page re-fetched seconds, minutes or days later is stored with a rate below
    the prior and ``due`` ranks it under a page fetched once at the same time (it once got
    68,153 changes a day for two fetches 0.5 s apart)."""
    twice = _visit(watch, clock, "https://example.com/twice", "n.", gap_s)
    once = watch.should_parse("https://example.com/once", long_page()).url_digest
    row = snapshot(watch, twice)
    assert row.change_rate == pytest.approx(change_rate(1, 0, gap_s / DAY_S), rel=1e-9)
    assert row.change_rate < DEFAULT_PRIOR_RATE_PER_DAY
    clock.advance(DAY_S)
    assert [p.url_digest for p in watch.due(10)] == [once, twice]


def test_due_orders_by_probability(make_watch: Callable[..., ChangeWatch], clock: Clock) -> None:
    """due() lists the pages most likely changed first, with rate, probability and expectation."""
    watch = make_watch()
    start = clock.now
    # Fetched every 6 hours for 3 days: "hot" changes every time, "warm" every other time,
    # "cold" never. Then all are left alone for a day.
    hot = _visit(watch, clock, "https://a.example/hot", "n" + "c" * 12, 6 * 3600)
    clock.now = start
    warm = _visit(watch, clock, "https://a.example/warm", "n" + "c." * 6, 6 * 3600)
    clock.now = start
    cold = _visit(watch, clock, "https://b.example/cold", "n" + "." * 12, 6 * 3600)
    clock.advance(DAY_S)
    pages = watch.due(10)
    assert [p.url_digest for p in pages] == [hot, warm, cold]
    assert [p.host for p in pages] == ["a.example", "a.example", "b.example"]
    top = pages[0]
    assert top.url == "https://a.example/hot"
    assert top.rate_per_day == pytest.approx(change_rate(12, 12, 3.0))
    assert top.expected_changes == pytest.approx(top.rate_per_day * 1.0)
    assert top.probability == pytest.approx(-math.expm1(-top.expected_changes))
    assert pages[0].probability > pages[1].probability > pages[2].probability
    assert [p.url_digest for p in watch.due(1)] == [hot]
    assert [p.url_digest for p in watch.due(10, host="b.example")] == [cold]
    assert watch.due(10, host="nowhere.example") == []
    assert watch.due(0) == []
    with pytest.raises(ValueError, match="limit"):
        watch.due(-1)
    # An explicit now: right after the last fetches nothing has had time to change.
    assert all(p.probability == 0.0 for p in watch.due(10, now=clock.now - timedelta(days=1)))
    # The index-driven answer equals the full scan here.
    assert watch.due(3) == watch.store.due(clock.now, 3, full_scan=True)


def test_due_on_an_empty_store(watch: ChangeWatch) -> None:
    """due() on an empty store is an empty list."""
    assert watch.due(5) == []


def test_due_within_the_band_guarantee(watch: ChangeWatch, clock: Clock) -> None:
    """With more pages than the limit, due() returns the exact top or pages within √2 of it."""
    start = clock.now
    for i in range(60):
        clock.now = start + timedelta(hours=i)
        # Pages alternate between changing every fetch and never, at staggered times.
        _visit(watch, clock, f"https://c.example/{i}", "n" + ("c" if i % 2 else ".") * 4, 3600 * 7)
    clock.now = start + timedelta(days=5)
    got = watch.due(10)
    exact = watch.store.due(clock.now, 10, full_scan=True)
    assert [p.probability for p in got] == sorted((p.probability for p in got), reverse=True)
    floor = got[-1].expected_changes
    missed = {p.url_digest for p in exact} - {p.url_digest for p in got}
    assert all(
        p.expected_changes <= RATE_BAND_FACTOR * floor * (1 + 1e-9)
        for p in exact
        if p.url_digest in missed
    )


def test_due_reads_through_the_band_index_on_postgres(watch: ChangeWatch, dialect: str) -> None:
    """On Postgres the due statement reads per-band index ranges, never the whole table."""
    if dialect != "postgres":
        pytest.skip("EXPLAIN plans are checked on Postgres")
    watch.should_parse_many(
        [(f"https://h{i % 50}.example/{i}", f"<p>page {i}</p>") for i in range(5000)]
    )
    with watch.store.engine.begin() as conn:
        conn.execute(sa.text("ANALYZE page_snapshots"))
        plans = []
        now = watch._clock()  # type: ignore[attr-defined]
        common = {"now": now, "limit": 40, "band_limit": 40, "min_expected": 0.5}
        for stmt, params in (
            (_due(True, False, True), common),
            (_due(True, True, True), common | {"host": "h7.example"}),
        ):
            compiled = stmt.compile(conn)
            explained = conn.exec_driver_sql(
                f"EXPLAIN {compiled}", dict(compiled.construct_params(params))
            )
            plans.append("\n".join(r[0] for r in explained))
    assert "ix_page_snapshots_rate_band_last_seen" in plans[0], plans[0]
    assert "ix_page_snapshots_host_rate_band_last_seen" in plans[1], plans[1]
    for plan in plans:
        assert "Seq Scan on page_snapshots" not in plan, plan


def test_migration_backfills_the_estimates(watch: ChangeWatch, clock: Clock) -> None:
    """Upgrading a store from before 0005 fills the scheduling columns as live writes would."""
    _visit(watch, clock, "https://m.example/a", "nc.c..c", 5 * 3600)
    _visit(watch, clock, "https://m.example/b", "n......", 9 * 3600)
    _visit(watch, clock, "https://m.example/c", "n", 3600)
    columns = ("change_count", "change_rate", "due_at", "rate_band")

    def state() -> list[tuple[object, ...]]:
        with watch.store.engine.connect() as conn:
            rows = conn.execute(
                sa.select(page_snapshots).order_by(page_snapshots.c.url_digest)
            ).all()
        return [tuple(getattr(r, c) for c in columns) for r in rows]

    live = state()
    before = ScriptDirectory.from_config(alembic_config()).get_revision("0005").down_revision
    assert isinstance(before, str)
    with watch.store.engine.begin() as conn:
        command.downgrade(alembic_config(connection=conn), before)
    upgrade(watch.store.engine)
    backfilled = state()
    for old, new in zip(live, backfilled, strict=True):
        assert (old[0], old[3]) == (new[0], new[3])
        assert new[1] == pytest.approx(old[1], rel=1e-9)
        assert abs((new[2] - old[2]).total_seconds()) < 0.01  # type: ignore[operator]


def test_migration_0011_recomputes_the_estimates(watch: ChangeWatch, clock: Clock) -> None:
    """Down to 0008 the stored rates are the old formula's (an unchanged page re-fetched a
    second later above the prior); upgrading recomputes them as live writes do now."""
    _visit(watch, clock, "https://m.example/a", "nc.c..c", 5 * 3600)
    _visit(watch, clock, "https://m.example/b", "n.", 1)
    _visit(watch, clock, "https://m.example/c", "n", 3600)
    columns = ("change_rate", "due_at", "rate_band")

    def state() -> list[tuple[object, ...]]:
        with watch.store.engine.connect() as conn:
            rows = conn.execute(
                sa.select(page_snapshots)
                .order_by(page_snapshots.c.url)
                .where(page_snapshots.c.host == "m.example")
            ).all()
        return [tuple(getattr(r, c) for c in columns) for r in rows]

    live = state()
    with watch.store.engine.begin() as conn:
        command.downgrade(alembic_config(connection=conn), "0008")
    old = state()
    assert old[1][0] == pytest.approx(math.log(1.5) * DAY_S, rel=1e-4)  # ½ change in 1 s
    assert old[2][0] == DEFAULT_PRIOR_RATE_PER_DAY
    upgrade(watch.store.engine)
    for was, now in zip(live, state(), strict=True):
        assert now[0] == pytest.approx(was[0], rel=1e-9)
        assert abs((now[1] - was[1]).total_seconds()) < 0.01  # type: ignore[operator]
        assert now[2] == was[2]
    assert live[1][0] < DEFAULT_PRIOR_RATE_PER_DAY


def test_due_matches_the_full_scan_on_varied_pages(watch: ChangeWatch, clock: Clock) -> None:
    """On 400 pages with varied histories, due() keeps the √2 guarantee for every limit."""
    rng = random.Random(3)
    watch.should_parse_many(
        [(f"https://v{i % 7}.example/{i}", f"<p>page {i}</p>") for i in range(400)]
    )
    snap = page_snapshots.c
    with watch.store.engine.begin() as conn:
        digests = [bytes(d) for d in conn.execute(sa.select(snap.url_digest)).scalars()]
        for digest in digests:
            fetches = rng.randint(1, 40)
            last = clock.now - timedelta(hours=rng.uniform(0, 24 * 20))
            conn.execute(
                sa.update(page_snapshots)
                .where(snap.url_digest == digest)
                .values(
                    fetch_count=fetches,
                    change_count=rng.randint(0, fetches - 1),
                    version_count=1,
                    first_seen=last - timedelta(days=rng.uniform(0, 60)),
                    last_seen=last,
                )
            )
        rate = rate_expr(snap.fetch_count - 1, snap.change_count, snap.first_seen, snap.last_seen)
        conn.execute(sa.update(page_snapshots).values(change_rate=rate))
        conn.execute(sa.update(page_snapshots).values(rate_band=band_expr(snap.change_rate)))
    for host in (None, "v3.example"):
        for limit in (1, 7, 50, 120, 399, 500):
            got = watch.due(limit, host=host)
            exact = watch.store.due(clock.now, limit, host, full_scan=True)
            assert len(got) == len(exact)
            floor = got[-1].expected_changes
            kept = {p.url_digest for p in got}
            for page in exact:
                if page.url_digest not in kept:
                    assert page.expected_changes <= RATE_BAND_FACTOR * floor * (1 + 1e-9)
            assert [p.expected_changes for p in got] == sorted(
                (p.expected_changes for p in got), reverse=True
            )
