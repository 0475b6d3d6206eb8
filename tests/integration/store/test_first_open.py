"""The first open of a SQLite store: serialised across processes and atomic (issue 15).

Several processes opening a file that does not exist yet all succeed, and a process killed
while it creates the schema leaves either no schema or the whole of it, so the next open
works; a store half-created by an older release (tables but no revision) is repaired.
"""

from __future__ import annotations

import random
import signal
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.errors import ConfigError
from changewatch.store import create_engine, open_store
from changewatch.store.migrate import head_revision, upgrade

from ._first_open_workers import (
    open_in_children,
    open_killed_after,
    open_then_die_after_statements,
    upgrade_in_children,
)

OPENERS = 24


def _objects(path: Path) -> set[tuple[str, str]]:
    """Every table, index and view of a SQLite file, and its revision as a pseudo-object."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ).fetchall()
        if ("table", "alembic_version") in rows:
            rows += [("revision", r[0]) for r in conn.execute("SELECT * FROM alembic_version")]
    conn.close()
    return set(rows)


@pytest.fixture(scope="module")
def complete_schema(tmp_path_factory: pytest.TempPathFactory) -> set[tuple[str, str]]:
    """The objects of a store created by one process alone."""
    path = tmp_path_factory.mktemp("reference") / "ref.db"
    open_store(f"sqlite:///{path}").close()
    objects = _objects(path)
    assert ("revision", head_revision()) in objects
    return objects


def _statements_of_a_first_open(tmp_path: Path) -> int:
    """How many SQL statements one first open runs (a kill point past the last never lands)."""
    seen = 0

    def count(*_args: object) -> None:
        nonlocal seen
        seen += 1

    sa.event.listen(sa.Engine, "after_cursor_execute", count)
    try:
        open_store(f"sqlite:///{tmp_path / 'count.db'}").close()
    finally:
        sa.event.remove(sa.Engine, "after_cursor_execute", count)
    return seen


def test_concurrent_first_opens_all_succeed(
    tmp_path: Path, complete_schema: set[tuple[str, str]]
) -> None:
    """24 processes opening one file that does not exist yet: every open succeeds and the
    schema is created once, complete (before: 9 of 24 failed, `table … already exists`)."""
    path = tmp_path / "fresh.db"
    outcomes = open_in_children(f"sqlite:///{path}", OPENERS)
    failures = [detail for status, detail in outcomes if status != "ok"]
    assert failures == [], failures[0]
    assert _objects(path) == complete_schema


def test_sigkill_at_each_point_of_the_creation_leaves_an_openable_store(
    tmp_path: Path, complete_schema: set[tuple[str, str]]
) -> None:
    """A process SIGKILLed right after its n-th statement of the first open, for n spread over
    the whole creation: the next open works and the schema is complete (before: 'table
    page_snapshots already exists' on every later open)."""
    total = _statements_of_a_first_open(tmp_path)
    assert total > 20
    for n in sorted({3, 6, total // 4, total // 2, (3 * total) // 4, total - 2}):
        path = tmp_path / f"killed{n}.db"
        url = f"sqlite:///{path}"
        assert open_then_die_after_statements(url, n) == -signal.SIGKILL, n
        open_store(url).close()
        assert _objects(path) == complete_schema, n


def test_sigkill_at_random_moments_of_the_first_open(
    tmp_path: Path, complete_schema: set[tuple[str, str]]
) -> None:
    """SIGKILL at random moments while a process opens a new store, several times over: each
    next open works and finds the whole schema."""
    rng = random.Random(15)
    killed = 0
    for attempt in range(8):
        path = tmp_path / f"random{attempt}.db"
        url = f"sqlite:///{path}"
        killed += open_killed_after(url, rng.uniform(0.0, 0.4)) == -signal.SIGKILL
        open_store(url).close()
        assert _objects(path) == complete_schema, attempt
    assert killed >= 1


def test_a_half_created_store_without_rows_is_created_again(
    tmp_path: Path, complete_schema: set[tuple[str, str]]
) -> None:
    """A store an older release left half-created (tables, no revision, no rows) is repaired
    on the next open instead of refused."""
    path = tmp_path / "half.db"
    url = f"sqlite:///{path}"
    engine = create_engine(url)
    upgrade(engine, "0003")
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM alembic_version"))
    engine.dispose()
    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        assert watch.should_parse("https://example.com/", "<p>repaired</p>").kind == "new"
    assert _objects(path) - {("revision", head_revision())} <= complete_schema
    assert _objects(path) == complete_schema


def test_tables_with_rows_but_no_revision_are_refused_untouched(tmp_path: Path) -> None:
    """A file whose changewatch tables hold rows but that has no revision was not made by
    these migrations: the open refuses it, naming the tables, and deletes nothing."""
    path = tmp_path / "foreign.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE page_snapshots (url_digest BLOB PRIMARY KEY)")
        conn.execute("INSERT INTO page_snapshots VALUES (x'00')")
    conn.close()
    with pytest.raises(ConfigError, match="page_snapshots"):
        open_store(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM page_snapshots").fetchone() == (1,)
    conn.close()


@pytest.mark.postgres
def test_concurrent_upgrades_of_an_empty_postgres_database_all_succeed(
    make_pg_database: Callable[..., str],
) -> None:
    """8 processes upgrading one empty Postgres database at once: the advisory lock runs them
    one after another, every one succeeds and the database is at head (before: all but one
    failed on the duplicate alembic_version table)."""
    url = make_pg_database(migrated=False)
    outcomes = upgrade_in_children(url, 8)
    failures = [detail for status, detail in outcomes if status != "ok"]
    assert failures == [], failures[0]
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").all() == [
                (head_revision(),)
            ]
    finally:
        engine.dispose()


def test_opening_waits_for_another_connections_write_lock(tmp_path: Path) -> None:
    """Another connection holds the write lock of a database not yet in WAL mode (as a
    process creating a new store does): opening it waits for the lock instead of failing at
    once with "database is locked" (switching to WAL skips SQLite's busy handler)."""
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    release = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        engine = create_engine(f"sqlite:///{path}", busy_timeout_s=10)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        engine.dispose()
    finally:
        release.join()
        holder.close()
