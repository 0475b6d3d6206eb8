"""Alembic migrations: upgrade, no drift from the models, downgrade, upgrade again."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from changewatch import ChangeWatch
from changewatch.store import create_engine
from changewatch.store.migrate import (
    alembic_config,
    current_revision,
    head_revision,
    skip_band_index_reflection_warnings,
    upgrade,
)
from changewatch.store.tables import metadata

REPO_ROOT = Path(__file__).resolve().parents[3]
TABLES = {
    "page_chrome_changes",
    "host_noise",
    "host_template_pages",
    "host_templates",
    "page_simhashes",
    "page_snapshots",
    "page_texts",
    "page_versions",
    "reconcile_findings",
    "reconcile_hosts",
    "reconcile_runs",
}


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}


def _revision(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        return current_revision(conn)


def _assert_no_drift(engine: sa.Engine) -> None:
    with engine.connect() as conn, skip_band_index_reflection_warnings():
        diffs = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), metadata
        )
        assert diffs == []
    with engine.begin() as conn:
        command.check(alembic_config(connection=conn))


def test_upgrade_check_downgrade_upgrade(make_database_url: Callable[..., str]) -> None:
    """On an empty DB: upgrade head, no drift from the models, downgrade base, upgrade again."""
    url = make_database_url(migrated=False)
    engine = create_engine(url)
    try:
        assert _tables(engine) == set()
        assert _revision(engine) is None

        upgrade(engine)
        assert _tables(engine) == TABLES
        assert _revision(engine) == head_revision()
        _assert_no_drift(engine)

        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "base")
        assert _tables(engine) == set()
        assert _revision(engine) is None

        upgrade(engine)
        assert _tables(engine) == TABLES
        assert _revision(engine) == head_revision()
        _assert_no_drift(engine)
    finally:
        engine.dispose()
    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        assert watch.should_parse("https://example.com/", "<p>migrated</p>").kind == "new"


def test_drift_check_detects_a_missing_index(make_database_url: Callable[..., str]) -> None:
    """The drift check used above does fail when the database differs from the models."""
    url = make_database_url(migrated=False)
    engine = create_engine(url)
    try:
        upgrade(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("DROP INDEX ix_page_snapshots_host"))
        with engine.connect() as conn, skip_band_index_reflection_warnings():
            diffs = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), metadata
            )
        assert [d[0] for d in diffs] == ["add_index"]
    finally:
        engine.dispose()


def test_alembic_cli_upgrades_with_the_repository_ini(tmp_path: Path) -> None:
    """`alembic -c alembic.ini -x url=... upgrade head` from the repo root migrates SQLite."""
    path = tmp_path / "cli.db"
    url = f"sqlite:///{path}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGEWATCH_")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "alembic",
            "-c",
            "alembic.ini",
            "-x",
            f"url={url}",
            "upgrade",
            "head",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    engine = create_engine(url)
    try:
        assert _tables(engine) == TABLES
        assert _revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_head_revision_constant_is_alembics_head() -> None:
    """Opening a store compares against HEAD_REVISION without loading Alembic: it must name
    the head of the migration scripts."""
    from alembic.script import ScriptDirectory

    from changewatch.store.migrate import HEAD_REVISION, alembic_config

    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert heads == [HEAD_REVISION]


def test_current_revision_reads_the_version_table(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'r.db'}")
    with engine.connect() as conn:
        assert current_revision(conn) is None
        assert MigrationContext.configure(conn).get_current_revision() is None
    upgrade(engine, "0003")
    with engine.connect() as conn:
        assert current_revision(conn) == "0003"
        assert MigrationContext.configure(conn).get_current_revision() == "0003"
    engine.dispose()


def test_opening_a_store_does_not_import_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    open_store = f"ChangeWatch(database_url={url!r}, seen_url='memory:').close()\n"
    # The first open creates and migrates the database (Alembic runs); the second only checks.
    subprocess.run(
        [sys.executable, "-c", "from changewatch import ChangeWatch\n" + open_store], check=True
    )
    check = (
        "import sys\n"
        "from changewatch import ChangeWatch\n"
        + open_store
        + "assert 'alembic' not in sys.modules, 'alembic was imported'\n"
    )
    subprocess.run([sys.executable, "-c", check], check=True)


def test_0006_adds_and_removes_the_page_latest_schedule_columns(
    make_database_url: Callable[..., str],
) -> None:
    url = make_database_url(migrated=False)
    engine = create_engine(url)

    def columns() -> list[str]:
        return [c["name"] for c in sa.inspect(engine).get_columns("page_latest")]

    try:
        upgrade(engine)
        assert columns()[-3:] == ["fetches_seeing_a_change", "changes_per_day", "due_at"]
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0005")
        assert columns()[-1] == "last_modified"
        assert "due_at" not in columns()
        upgrade(engine)
        assert columns()[-1] == "due_at"
    finally:
        engine.dispose()


def test_0007_adds_and_removes_reconcile_hosts(make_database_url: Callable[..., str]) -> None:
    """Migration 0007 creates reconcile_hosts (deleted with its run) and its downgrade drops it."""
    url = make_database_url(migrated=False)
    engine = create_engine(url)
    try:
        upgrade(engine)
        assert "reconcile_hosts" in _tables(engine)
        with engine.begin() as conn:
            if engine.dialect.name == "sqlite":
                conn.exec_driver_sql("PRAGMA foreign_keys=ON")
            run_id = conn.execute(
                sa.text(
                    "INSERT INTO reconcile_runs (started_at, status, sites) "
                    "VALUES (CURRENT_TIMESTAMP, 'complete', 'x') RETURNING id"
                )
            ).scalar_one()
            conn.execute(
                sa.text(
                    "INSERT INTO reconcile_hosts (run_id, host, vanished_checked) "
                    "VALUES (:r, 'x.test', false)"
                ),
                {"r": run_id},
            )
            conn.execute(sa.text("DELETE FROM reconcile_runs"))
            assert conn.execute(sa.text("SELECT count(*) FROM reconcile_hosts")).scalar() == 0
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0006")
        assert "reconcile_hosts" not in _tables(engine)
        upgrade(engine)
        assert "reconcile_hosts" in _tables(engine)
    finally:
        engine.dispose()


def test_0012_adds_and_removes_the_template_tables(
    make_database_url: Callable[..., str],
) -> None:
    """Migration 0012 creates host_templates (its kind checked, one row per host, version and
    value) and host_template_pages; its downgrade drops both and leaves 0011's schema."""
    url = make_database_url(migrated=False)
    engine = create_engine(url)
    try:
        upgrade(engine)
        row = (
            "INSERT INTO host_templates (host, fingerprint_version, value, kind, block_key, "
            "path, pages, first_seen, last_seen) VALUES ('x.test', 4, :value, :kind, :key, "
            "'body/div', 5, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
        )
        with engine.begin() as conn:
            conn.execute(sa.text(row), {"kind": "slot", "value": b"\x01" * 8, "key": b"k" * 8})
        for kind, value in (("word", b"\x02" * 8), ("text", b"\x01" * 8)):
            with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
                conn.execute(sa.text(row), {"kind": kind, "value": value, "key": b"k" * 8})
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0011")
        # (0013, after it, is downgraded too: page_simhashes goes with it.)
        assert _tables(engine) == TABLES - {
            "host_templates",
            "host_template_pages",
            "page_simhashes",
        }
        upgrade(engine)
        assert {"host_templates", "host_template_pages"} <= _tables(engine)
    finally:
        engine.dispose()


def test_0009_adds_and_removes_host_noise(make_database_url: Callable[..., str]) -> None:
    """Migration 0009 creates host_noise (its kind checked, one row per host, version, kind
    and value) and its downgrade drops it."""
    url = make_database_url(migrated=False)
    engine = create_engine(url)
    try:
        upgrade(engine)
        assert "host_noise" in _tables(engine)
        row = (
            "INSERT INTO host_noise (host, fingerprint_version, kind, value, path, observations, "
            "changes, first_seen, last_seen) VALUES ('x.test', 4, :kind, :value, 'body/div', "
            "3, 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
        )
        with engine.begin() as conn:
            conn.execute(sa.text(row), {"kind": "shape", "value": b"\x01" * 8})
        for kind, value in (("other", b"\x02" * 8), ("shape", b"\x01" * 8)):
            with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
                conn.execute(sa.text(row), {"kind": kind, "value": value})
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0008")
        assert "host_noise" not in _tables(engine)
        upgrade(engine)
        assert "host_noise" in _tables(engine)
    finally:
        engine.dispose()


def test_0013_adds_and_removes_page_simhashes(make_database_url: Callable[..., str]) -> None:
    """Migration 0013's downgrade drops page_simhashes (and its triggers); upgrading again
    fills it from the SimHashes page_snapshots holds."""
    url = make_database_url()
    watch = ChangeWatch(url, "memory:")
    try:
        watch.should_parse("https://example.com/a", "<p>one page of text stored first</p>")
        watch.should_parse("https://example.com/b", "<p>another page, other words in it</p>")
    finally:
        watch.close()
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0012")
        assert _tables(engine) == TABLES - {"page_simhashes"}
        upgrade(engine)
        with engine.connect() as conn:
            stored = conn.execute(sa.text("SELECT simhash FROM page_snapshots")).scalars().all()
            held = conn.execute(sa.text("SELECT simhash FROM page_simhashes")).scalars().all()
        assert sorted(held) == sorted(stored)
        assert len(held) == 2
    finally:
        engine.dispose()


def _snapshot_indexes(engine: sa.Engine) -> dict[str, str]:
    """page_snapshots' indexes by name, with their SQL."""
    if engine.dialect.name == "sqlite":
        sql = "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = :t"
    else:
        sql = "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = :t"
    with engine.connect() as conn:
        rows = conn.execute(sa.text(sql), {"t": "page_snapshots"}).all()
    return {str(name): str(text) for name, text in rows}


def _simhashes_comment(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        return conn.execute(
            sa.text("SELECT obj_description('page_simhashes'::regclass, 'pg_class')")
        ).scalar_one()


def test_0014_drops_the_snapshot_band_indexes_and_keeps_the_holders(
    make_database_url: Callable[..., str],
) -> None:
    """Migration 0014 drops page_snapshots' four band indexes, keeps the (simhash,
    url_digest) index without INCLUDE (an 8 KiB URL must fit: test_long_urls) and, on
    Postgres, says in page_simhashes' comment that prune deletes from it; its downgrade
    restores 0013's indexes and comment, and the search answers the same after upgrading
    again."""
    url = make_database_url()
    watch = ChangeWatch(url, "memory:")
    try:
        for page in ("a", "b"):  # one text at two URLs: b is a's near duplicate at 0
            watch.should_parse(f"https://example.com/{page}", "<p>one page of text stored</p>")
        before = watch.near_duplicates("https://example.com/a")
    finally:
        watch.close()
    engine = create_engine(url)
    bands = {f"ix_page_snapshots_simhash_band{band}" for band in range(4)}
    holders = "ix_page_snapshots_simhash_url_digest"
    postgres = engine.dialect.name == "postgresql"
    try:
        indexes = _snapshot_indexes(engine)
        assert not bands & set(indexes)
        assert "INCLUDE" not in indexes[holders]
        if postgres:
            assert "prune deletes those no row holds" in (_simhashes_comment(engine) or "")
        with engine.begin() as conn:
            command.downgrade(alembic_config(connection=conn), "0013")
        indexes = _snapshot_indexes(engine)
        assert bands <= set(indexes)
        assert "INCLUDE" not in indexes[holders]
        if postgres:
            assert "never deleted" in (_simhashes_comment(engine) or "")
        upgrade(engine)
        _assert_no_drift(engine)
        indexes = _snapshot_indexes(engine)
        assert not bands & set(indexes)
    finally:
        engine.dispose()
    watch = ChangeWatch(url, "memory:")
    try:
        assert watch.near_duplicates("https://example.com/a") == before
        assert [(n.url, n.distance) for n in before] == [("https://example.com/b", 0)]
    finally:
        watch.close()
