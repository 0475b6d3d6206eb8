"""The unchanged re-fetch on the driver's cursor (changewatch.store.fasttouch): it writes what
the SQLAlchemy statement writes, its errors are StoreErrors, a dropped connection is
replaced, and statement listeners still see every statement."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.errors import StoreError

from .._pages import long_page, snapshot_rows, terminate_other_connections

URLS = [f"https://fast.example/p/{i}" for i in range(5)]
HEADERS = {"ETag": '"v7"', "Last-Modified": "Tue, 01 Dec 2026 10:00:00 GMT"}


def _refetch(watch: ChangeWatch, clock: Any) -> list[Any]:
    """Store the pages, re-fetch them unchanged twice (later, with validators); the rows."""
    watch.should_parse_many([(url, long_page(i)) for i, url in enumerate(URLS)])
    for step in (3600, 86_400):
        clock.advance(step)
        for i, url in enumerate(URLS):
            d = watch.should_parse(url, long_page(i), headers=HEADERS if step > 3600 else None)
            assert (d.kind, d.path) == ("unchanged", "raw")
    return snapshot_rows(watch)


def test_the_driver_path_writes_what_the_sqlalchemy_statement_writes(
    make_watch: Callable[..., ChangeWatch], make_database_url: Callable[..., str], clock: Any
) -> None:
    """Counts, last_seen, validators, change rate, due_at and rate band: the same, column by
    column, whether the touch ran on the driver's cursor or through SQLAlchemy."""
    fast = make_watch(database_url=make_database_url())
    assert fast.store._fast_touch.usable()  # type: ignore[attr-defined]
    start = clock.now
    fast_rows = _refetch(fast, clock)
    clock.now = start
    slow = make_watch(database_url=make_database_url())
    sa.event.listen(slow.store.engine, "before_cursor_execute", lambda *_: None)
    assert not slow.store._fast_touch.usable()  # type: ignore[attr-defined]
    slow_rows = _refetch(slow, clock)
    assert [r._asdict() for r in fast_rows] == [r._asdict() for r in slow_rows]
    assert {r.fetch_count for r in fast_rows} == {3}
    assert {r.etag for r in fast_rows} == {'"v7"'}


def test_a_failing_driver_path_raises_store_error_and_recovers(watch: ChangeWatch) -> None:
    """A statement the database refuses is a StoreError (not a driver exception), writes
    nothing, and the pooled connection serves the next call."""
    watch.should_parse(URLS[0], long_page())
    with watch.store.engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE page_snapshots RENAME COLUMN etag TO etag_gone")
    with pytest.raises(StoreError, match="failed"):
        watch.should_parse(URLS[0], long_page())
    with watch.store.engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE page_snapshots RENAME COLUMN etag_gone TO etag")
    d = watch.should_parse(URLS[0], long_page())
    assert (d.kind, d.path) == ("unchanged", "raw")
    assert [r.fetch_count for r in snapshot_rows(watch)] == [2]


@pytest.mark.postgres
def test_a_dropped_connection_is_retryable_and_replaced(
    make_pg_database: Callable[..., str],
) -> None:
    """A server-side kill of the pooled connection: a retryable StoreError, then the next
    call gets a new connection (the dead one was invalidated, not put back in the pool)."""
    url = make_pg_database()
    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        watch.should_parse(URLS[0], long_page())
        terminate_other_connections(url)
        with pytest.raises(StoreError) as info:
            watch.should_parse(URLS[0], long_page())
        assert info.value.retryable
        d = watch.should_parse(URLS[0], long_page())
        assert (d.kind, d.path) == ("unchanged", "raw")
