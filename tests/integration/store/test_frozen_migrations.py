"""Migrations are frozen: they import no live code, and together they make the live schema.

Each revision in ``migrations/versions`` holds the SQL it ran, so a change to
``changewatch.store.tables`` or ``changewatch.store.views`` can never change what an old
revision does. The live schema is then only a claim about where the revisions end up: here a
fresh SQLite file and a fresh Postgres database are upgraded through every revision, one at a
time, and what they hold (tables, columns and their types, defaults, comments, keys, checks,
indexes with their expressions, views' SQL and comments) is compared with a database built
from ``metadata`` and the live views.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from changewatch.store import create_engine
from changewatch.store.migrate import (
    alembic_config,
    head_revision,
    skip_band_index_reflection_warnings,
    upgrade,
)
from changewatch.store.simhashes import trigger_statements
from changewatch.store.tables import metadata
from changewatch.store.views import comment_statements, create_statements, page_history_statement

REPO_ROOT = Path(__file__).resolve().parents[3]
VERSIONS = REPO_ROOT / "migrations" / "versions"


def _revisions() -> list[str]:
    """Every revision, oldest first."""
    script = ScriptDirectory.from_config(alembic_config())
    return [s.revision for s in reversed(list(script.walk_revisions()))]


def _squash(sql: str | None) -> str:
    """SQL text with runs of white space as one space and no space inside brackets."""
    text = re.sub(r"\s+", " ", sql or "").strip()
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))


def _columns(inspector: Any, table: str) -> list[tuple[Any, ...]]:
    return [
        (
            c["name"],
            str(c["type"]),
            c["nullable"],
            _squash(str(c["default"])) if c.get("default") is not None else None,
            c.get("comment"),
        )
        for c in inspector.get_columns(table)
    ]


def _table(inspector: Any, table: str) -> dict[str, Any]:
    pk = inspector.get_pk_constraint(table)
    return {
        "columns": _columns(inspector, table),
        "primary key": (pk.get("name"), pk["constrained_columns"]),
        "foreign keys": sorted(
            (
                fk.get("name") or "",
                tuple(fk["constrained_columns"]),
                fk["referred_table"],
                tuple(fk["referred_columns"]),
                tuple(sorted((fk.get("options") or {}).items())),
            )
            for fk in inspector.get_foreign_keys(table)
        ),
        "unique": sorted(
            (u.get("name") or "", tuple(u["column_names"]))
            for u in inspector.get_unique_constraints(table)
        ),
        "checks": sorted(
            (c.get("name") or "", _squash(c["sqltext"]))
            for c in inspector.get_check_constraints(table)
        ),
        "comment": (
            inspector.get_table_comment(table).get("text")
            if inspector.dialect.supports_comments
            else None
        ),
    }


def _catalogue_sqlite(conn: sa.Connection) -> dict[str, Any]:
    """Index and view SQL as SQLite keeps it (it reflects no expression index)."""
    rows = conn.exec_driver_sql(
        "SELECT type, name, tbl_name, sql FROM sqlite_master "
        "WHERE type IN ('index', 'view', 'trigger') AND name NOT LIKE 'sqlite_%'"
    ).all()
    return {f"{kind} {name}": (table, _squash(sql)) for kind, name, table, sql in rows}


def _catalogue_postgres(conn: sa.Connection) -> dict[str, Any]:
    """Index definitions, view definitions and the comments of views and their columns."""
    out: dict[str, Any] = {}
    for name, definition in conn.exec_driver_sql(
        "SELECT indexname, indexdef FROM pg_indexes "
        "WHERE schemaname = 'public' AND tablename <> 'alembic_version'"
    ):
        out[f"index {name}"] = definition
    for name, definition, comment in conn.exec_driver_sql(
        "SELECT c.relname, pg_get_viewdef(c.oid, true), obj_description(c.oid, 'pg_class') "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind = 'v'"
    ):
        out[f"view {name}"] = (definition, comment)
    for name, definition in conn.exec_driver_sql(
        "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal"
    ):
        out[f"trigger {name}"] = definition
    for name, definition in conn.exec_driver_sql(
        "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'"
    ):
        out[f"function {name}"] = definition
    for view, column, comment in conn.exec_driver_sql(
        "SELECT c.relname, a.attname, col_description(c.oid, a.attnum) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
        "WHERE n.nspname = 'public' AND c.relkind = 'v'"
    ):
        out[f"view column {view}.{column}"] = comment
    return out


def schema_of(engine: sa.Engine) -> dict[str, Any]:
    """Everything a schema comparison needs, as plain values (``alembic_version`` left out)."""
    with engine.connect() as conn, skip_band_index_reflection_warnings():
        inspector = sa.inspect(conn)
        tables = sorted(set(inspector.get_table_names()) - {"alembic_version"})
        out: dict[str, Any] = {f"table {t}": _table(inspector, t) for t in tables}
        out["views"] = sorted(inspector.get_view_names())
        if engine.dialect.name == "sqlite":
            out |= _catalogue_sqlite(conn)
        else:
            out |= _catalogue_postgres(conn)
    return out


def _live(engine: sa.Engine) -> None:
    """The schema the code describes today: ``metadata`` plus the live views."""
    dialect = engine.dialect.name
    with engine.begin() as conn:
        metadata.create_all(conn)
        for statement in create_statements(dialect) + trigger_statements(dialect):
            conn.exec_driver_sql(statement)
        conn.exec_driver_sql(page_history_statement(dialect))
        if dialect == "postgresql":
            for statement in comment_statements():
                conn.exec_driver_sql(statement.replace("%", "%%"))


def test_every_revision_in_turn_ends_at_the_live_schema(
    make_database_url: Callable[..., str],
) -> None:
    """Upgraded one revision at a time from empty, a database equals the one built from
    ``metadata`` and the live views, object by object."""
    migrated = create_engine(make_database_url(migrated=False))
    live = create_engine(make_database_url(migrated=False))
    try:
        revisions = _revisions()
        assert revisions[-1] == head_revision()
        for revision in revisions:
            upgrade(migrated, revision)
        _live(live)
        got, want = schema_of(migrated), schema_of(live)
        assert sorted(got) == sorted(want)
        for key in want:
            assert got[key] == want[key], key
    finally:
        migrated.dispose()
        live.dispose()


def test_the_comparison_sees_a_changed_view_and_a_changed_comment(
    make_database_url: Callable[..., str],
) -> None:
    """The comparison above can fail: a view's SQL, an index or a missing trigger shows."""
    first = create_engine(make_database_url(migrated=False))
    second = create_engine(make_database_url(migrated=False))
    try:
        _live(first)
        _live(second)
        assert schema_of(first) == schema_of(second)
        with second.begin() as conn:
            conn.exec_driver_sql("DROP VIEW page_flip_flops")
            conn.exec_driver_sql("CREATE VIEW page_flip_flops AS SELECT 1 AS url")
            conn.exec_driver_sql("DROP INDEX ix_page_simhashes_band3")
            conn.exec_driver_sql(
                "CREATE INDEX ix_page_simhashes_band3 ON page_simhashes ((simhash & 255), simhash)"
            )
            on = " ON page_snapshots" if second.dialect.name == "postgresql" else ""
            conn.exec_driver_sql(f"DROP TRIGGER tr_page_snapshots_simhash_update{on}")
        got, want = schema_of(second), schema_of(first)
        differing = {key for key in want if got.get(key) != want[key]}
        assert "index ix_page_simhashes_band3" in differing
        assert "view page_flip_flops" in differing
        assert "trigger tr_page_snapshots_simhash_update" in differing
    finally:
        first.dispose()
        second.dispose()


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and getattr(node.func, "id", getattr(node.func, "attr", ""))
            in {"__import__", "import_module"}
        ):
            names.add("<dynamic import>")
    return names


def _live_imports(path: Path) -> list[str]:
    """The imports of a migration that could reach live code: ``changewatch``, relative
    imports (``migrations`` is no package), and dynamic ones."""
    return sorted(
        name
        for name in _imported_modules(path)
        if name.split(".")[0] in {"changewatch", "migrations", "<dynamic import>"}
        or name.startswith(".")
    )


@pytest.mark.parametrize("path", sorted(VERSIONS.glob("*.py")), ids=lambda p: p.name)
def test_no_migration_imports_live_code(path: Path) -> None:
    """A revision never imports ``changewatch`` (whose later changes would rewrite what the
    revision did), nor anything relative or dynamically; ``migrations/env.py`` may."""
    assert _live_imports(path) == [], f"{path.name} imports live code"


def test_the_import_check_finds_a_live_import(tmp_path: Path) -> None:
    """The check above does catch ``from changewatch… import`` and a relative import."""
    path = tmp_path / "0099_bad.py"
    path.write_text(
        "import sqlalchemy as sa\nfrom changewatch.store.tables import UTCDateTime\n"
        "from . import helpers\n",
        encoding="utf-8",
    )
    assert _live_imports(path) == [".", "changewatch.store.tables"]
