"""Scale: the history queries use indexes (EXPLAIN on 100,000 version rows), and the
hash-partitioned layout of ``db upgrade --partitions`` (Postgres)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from changewatch import ChangeWatch
from changewatch.errors import ConfigError
from changewatch.store import create_engine, open_store
from changewatch.store.migrate import head_revision
from changewatch.store.partition import partition_count, partition_tables

from .._bulk import bulk_load
from .._pages import rewrite

pytestmark = pytest.mark.postgres

URL = "https://h3.bulk.example/real"


def _plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


def _explain(engine: sa.Engine, sql: str, params: Any = None) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        raw = conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + sql, params).scalar_one()
    plan = raw if isinstance(raw, list) else json.loads(raw)
    return list(_plan_nodes(plan[0]["Plan"]))


def _history_sql(watch: ChangeWatch) -> tuple[str, Any]:
    """The exact statement and parameters ``history(URL)`` sends."""
    seen: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append((statement, parameters))

    event.listen(watch.store.engine, "before_cursor_execute", capture)
    try:
        assert len(watch.history(URL)) == 3
    finally:
        event.remove(watch.store.engine, "before_cursor_execute", capture)
    [(sql, params)] = [s for s in seen if "page_versions" in s[0]]
    return sql, params


def _scans(nodes: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Node type → the relations it reads."""
    out: dict[str, set[str]] = {}
    for node in nodes:
        if "Relation Name" in node:
            out.setdefault(node["Node Type"], set()).add(node["Relation Name"])
    return out


def _tables(scans: dict[str, set[str]]) -> set[str]:
    """The tables read, a partition (``page_versions_p3``) counted as its table."""
    return {re.sub(r"_p[0-9]+$", "", r) for rs in scans.values() for r in rs}


def _populate(watch: ChangeWatch) -> None:
    for i in range(3):
        watch.should_parse(URL, rewrite(i))


def test_history_queries_use_indexes_on_100k_versions(make_pg_database: Callable[..., str]) -> None:
    url = make_pg_database()
    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        _populate(watch)
        # 25,000 pages × 4 versions on 250 hosts: 100 pages a host.
        bulk_load(watch.store.engine, pages=25_000, versions=4, hosts=250)
        with watch.store.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM page_versions").scalar() >= 100_000
        sql, params = _history_sql(watch)
        history = _scans(_explain(watch.store.engine, sql, params))
        assert "Seq Scan" not in history, history
        assert any("Index" in kind for kind in history), history
        assert "page_versions" in _tables(history)

        nodes = _explain(
            watch.store.engine,
            "SELECT * FROM page_changes WHERE host = 'h7.bulk.example' "
            "AND changed_at >= now() - interval '7 days'",
        )
        changes = _scans(nodes)
        assert "Seq Scan" not in changes, changes
        used = {str(n.get("Index Name")) for n in nodes}
        assert any(i.startswith("ix_page_versions_host_first_seen") for i in used), used
        assert {"page_versions", "page_snapshots"} <= _tables(changes)
        # The peer: with index scans off the same query must read whole tables.
        with watch.store.engine.connect() as conn:
            conn.exec_driver_sql("SET enable_indexscan = off")
            conn.exec_driver_sql("SET enable_bitmapscan = off")
            raw = conn.exec_driver_sql(
                "EXPLAIN (FORMAT JSON) SELECT * FROM page_changes WHERE host = 'h7.bulk.example' "
                "AND changed_at >= now() - interval '7 days'"
            ).scalar_one()
        forced = _scans(list(_plan_nodes(raw[0]["Plan"])))
        assert "Seq Scan" in forced, forced


# -- partitions ---------------------------------------------------------------------------


def _cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "changewatch"
    return subprocess.run(
        [str(exe), "--database-url", url, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_db_upgrade_partitions_an_empty_database(make_pg_database: Callable[..., str]) -> None:
    url = make_pg_database(migrated=False)
    first = _cli(url, "db", "upgrade", "--partitions", "4")
    assert first.returncode == 0, first.stderr
    assert f"upgraded from empty to {head_revision()}" in first.stdout
    assert "4 hash partitions each" in first.stdout
    again = _cli(url, "db", "upgrade", "--partitions", "4")
    assert again.returncode == 0, again.stderr
    assert "hash partitions" not in again.stdout  # already so: nothing done
    other = _cli(url, "db", "upgrade", "--partitions", "8")
    assert other.returncode == 1
    assert "already partitioned (4 partitions)" in other.stderr
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            assert partition_count(conn, "page_snapshots") == 4
            assert partition_count(conn, "page_versions") == 4
            pk = conn.exec_driver_sql(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conname = 'pk_page_versions'"
            ).scalar_one()
            assert pk == "PRIMARY KEY (url_digest, id)"
    finally:
        engine.dispose()

    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        _populate(watch)
        assert watch.should_parse(URL, rewrite(0)).reverted_to == 1
        assert [v.version for v in watch.history(URL)] == [1, 2, 3, 4]
        with watch.store.engine.connect() as conn:
            unlisted = conn.exec_driver_sql(
                "SELECT count(*) FROM page_snapshots s WHERE NOT EXISTS "
                "(SELECT 1 FROM page_simhashes v WHERE v.simhash = s.simhash)"
            ).scalar_one()
        assert unlisted == 0  # migration 0012's triggers were made again on the partitions
        current = watch.history(URL)[-1].simhash
        assert URL in {n.url for n in watch.near_duplicates(current, 0)}
        assert watch.prune(1, timedelta(0)).removed == 3
        with watch.store.engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT url, reversions FROM page_flip_flops").all()
        assert rows == [(URL, 1)]  # the reversion's own row stays, though version 1 is gone
        sql, params = _history_sql_after_prune(watch)
        scanned = set().union(*_scans(_explain(watch.store.engine, sql, params)).values())
        # Partition pruning: one partition of each table is read.
        assert len([r for r in scanned if r.startswith("page_versions_p")]) == 1, scanned
        assert len([r for r in scanned if r.startswith("page_snapshots_p")]) == 1, scanned


def _history_sql_after_prune(watch: ChangeWatch) -> tuple[str, Any]:
    seen: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append((statement, parameters))

    event.listen(watch.store.engine, "before_cursor_execute", capture)
    try:
        assert [v.version for v in watch.history(URL)] == [4]
    finally:
        event.remove(watch.store.engine, "before_cursor_execute", capture)
    return next(s for s in seen if "page_versions" in s[0])


def test_partitioning_refuses_rows_sqlite_and_bad_counts(
    make_pg_database: Callable[..., str], tmp_path: Path
) -> None:
    url = make_pg_database(migrated=False)  # not the (maybe partitioned) template
    with ChangeWatch(
        database_url=url, seen_url="memory:", store=open_store(url, auto_upgrade=True)
    ) as watch:
        watch.should_parse(URL, rewrite(0))
        with pytest.raises(ConfigError, match="only on an empty database, and page_snapshots"):
            partition_tables(watch.store.engine, 4)
        for bad in (1, 1000, True):
            with pytest.raises(ConfigError, match="partitions must be"):
                partition_tables(watch.store.engine, bad)
        assert watch.history(URL)  # nothing changed
    lite = _cli(f"sqlite:///{tmp_path}/x.db", "db", "upgrade", "--partitions", "4")
    assert lite.returncode == 1
    assert "needs PostgreSQL" in lite.stderr
