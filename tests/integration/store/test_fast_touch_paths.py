"""The fast touch (changewatch.store.fasttouch, on connections of its own) against the general
paths: the same decisions and rows as the SQLAlchemy statement and as the batch; every fetch
counted under threads and processes on one SQLite file or Postgres database; a locked SQLite
database is a retryable StoreError that writes nothing; the connections are bounded and
closed with the store."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.errors import StoreError
from changewatch.store import open_store
from changewatch.values import Decision

from .._pages import snapshot_rows, version_rows
from .._race_workers import run_processes
from ._touch_workers import URLS, body, refetch_worker

# Editions each page is fetched in, in order: unchanged re-fetches, a change, a flip back.
EDITIONS = [0, 0, 0, 1, 1, 0, 0]


def _decision(d: Decision) -> tuple[Any, ...]:
    return (
        d.kind,
        d.url,
        d.url_digest,
        d.content_sha256,
        d.simhash,
        d.distance,
        d.version,
        d.reverted_to,
    )


def _fetch_all(watch: ChangeWatch, clock: Any, one: Callable[..., Decision]) -> list[Any]:
    """Every page through EDITIONS, an hour apart, by ``one(watch, url, html)``."""
    decisions = []
    for edition in EDITIONS:
        clock.advance(3600)
        for i, url in enumerate(URLS):
            decisions.append(_decision(one(watch, url, body(i, edition))))
    return decisions


def _one_by_one(watch: ChangeWatch, url: str, html: str) -> Decision:
    return watch.should_parse(url, html)


def _as_batch(watch: ChangeWatch, url: str, html: str) -> Decision:
    return watch.should_parse_many([(url, html)])[0]


def test_fast_touch_sqlalchemy_touch_and_batch_decide_and_store_the_same(
    make_watch: Callable[..., ChangeWatch], make_database_url: Callable[..., str], clock: Any
) -> None:
    """Unchanged re-fetches, a change and a flip back: the decisions and every column of
    every snapshot and version row are equal whether the unchanged fetches went through the
    driver's cursor on the touch's own connection, through SQLAlchemy, or through the batch
    (which never uses the one-statement path)."""
    start = clock.now
    results = []
    for how in ("fast", "sqlalchemy", "batch"):
        clock.now = start
        watch = make_watch(database_url=make_database_url())
        if how == "sqlalchemy":
            sa.event.listen(watch.store.engine, "before_cursor_execute", lambda *_: None)
        fast = watch.store._fast_touch  # type: ignore[attr-defined]
        assert fast.usable() == (how != "sqlalchemy")
        decisions = _fetch_all(watch, clock, _as_batch if how == "batch" else _one_by_one)
        rows = [r._asdict() for r in snapshot_rows(watch)]
        versions = [r._asdict() for r in version_rows(watch)]
        results.append((decisions, rows, versions))
        if how == "fast":
            assert len(fast._owned) == 1  # one connection of its own served every touch
    assert results[0] == results[1] == results[2]
    decisions, rows, _versions = results[0]
    assert Counter(d[0] for d in decisions) == {"new": 5, "unchanged": 20, "changed": 10}
    assert {r["fetch_count"] for r in rows} == {len(EDITIONS)}


def test_threads_share_a_bounded_set_of_connections(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """Twelve threads re-fetching at once: every fetch is counted, every answer is
    "unchanged", and the touch never holds more connections of its own than the pool's
    size (past that it borrows pooled ones)."""
    watch = make_watch()
    watch.should_parse_many([(url, body(i, 0)) for i, url in enumerate(URLS)])
    threads, rounds = 12, 20
    barrier = threading.Barrier(threads)
    kinds: list[str] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            barrier.wait(timeout=60)
            for _ in range(rounds):
                for i, url in enumerate(URLS):
                    kinds.append(watch.should_parse(url, body(i, 0)).kind)
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=120)
    assert not errors
    assert Counter(kinds) == {"unchanged": threads * rounds * len(URLS)}
    assert {r.fetch_count for r in snapshot_rows(watch)} == {1 + threads * rounds}
    fast = watch.store._fast_touch  # type: ignore[attr-defined]
    assert 1 <= len(fast._owned) <= watch.store.engine.pool.size()  # type: ignore[attr-defined]


def _assert_processes_count_every_fetch(database_url: str) -> None:
    """4 processes (two on the fast touch, two on SQLAlchemy's; one moving page 0 to new
    editions): fetch_count is every call, version_count and the version rows every decision
    that was not "unchanged"."""
    with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
        watch.should_parse_many([(url, body(i, 0)) for i, url in enumerate(URLS)])
    workers, rounds = 4, 12
    reports = run_processes(refetch_worker, [(database_url, w, rounds) for w in range(workers)])
    calls: Counter[str] = Counter()
    versions: Counter[str] = Counter({url: 1 for url in URLS})  # the first fetch: "new"
    for report in reports:
        for url, kind in report:
            calls[url] += 1
            versions[url] += kind != "unchanged"
    assert sum(calls.values()) == workers * rounds * len(URLS)
    assert versions[URLS[0]] > 1  # the race did happen on page 0
    with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
        for url in URLS:
            history = watch.history(url)
            assert len(history) == versions[url], url
        rows = {r.url: r for r in snapshot_rows(watch)}
    for url in URLS:
        assert (rows[url].fetch_count, rows[url].version_count) == (
            1 + calls[url],
            versions[url],
        ), url


@pytest.mark.slow
def test_processes_on_one_sqlite_file_count_every_fetch(tmp_path: Path) -> None:
    _assert_processes_count_every_fetch(f"sqlite:///{tmp_path}/touch.db")


@pytest.mark.slow
@pytest.mark.postgres
def test_processes_on_postgres_count_every_fetch(make_pg_database: Callable[..., str]) -> None:
    _assert_processes_count_every_fetch(make_pg_database())


def test_a_locked_sqlite_database_is_a_retryable_error_that_writes_nothing(
    tmp_path: Path, clock: Any
) -> None:
    """Another process's write lock held past the busy timeout (SQLITE_BUSY): the unchanged
    re-fetch raises a retryable StoreError, counts nothing, and its connection serves the
    next call once the lock is gone."""
    path = tmp_path / "busy.db"
    store = open_store(f"sqlite:///{path}", busy_timeout_s=0.05)
    with ChangeWatch(store=store, seen_url="memory:", clock=clock) as watch:
        assert watch.should_parse(URLS[0], body(0, 0)).kind == "new"
        assert watch.should_parse(URLS[0], body(0, 0)).kind == "unchanged"
        before = [r._asdict() for r in snapshot_rows(watch)]
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the database's one write lock
        try:
            clock.advance(60)
            with pytest.raises(StoreError, match="locked") as info:
                watch.should_parse(URLS[0], body(0, 0))
            assert info.value.retryable
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert [r._asdict() for r in snapshot_rows(watch)] == before
        d = watch.should_parse(URLS[0], body(0, 0))
        assert (d.kind, d.path) == ("unchanged", "raw")
        assert [r.fetch_count for r in snapshot_rows(watch)] == [3]
        fast = watch.store._fast_touch  # type: ignore[attr-defined]
        assert len(fast._owned) == len(fast._idle) == 1  # kept, not leaked nor replaced


def test_closing_the_store_closes_the_touchs_own_connections(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """``close()`` closes the fast touch's connections with the pooled ones; a later touch
    opens a new one."""
    watch = make_watch()
    watch.should_parse(URLS[0], body(0, 0))
    assert watch.should_parse(URLS[0], body(0, 0)).kind == "unchanged"
    fast = watch.store._fast_touch  # type: ignore[attr-defined]
    (driver,) = [cursor.connection for _fairy, cursor in fast._idle]
    watch.close()
    assert fast._owned == fast._idle == []
    with pytest.raises(Exception, match="closed"):
        driver.execute("SELECT 1")
