"""Hash-partition ``page_snapshots`` and ``page_versions`` by ``url_digest`` (Postgres).

``changewatch db upgrade --partitions N`` migrates an empty database to head, then rebuilds
the two (still empty) tables as ``PARTITION BY HASH (url_digest)`` with N partitions each
(``page_snapshots_p0`` …, ``page_versions_p0`` …), from the same SQLAlchemy metadata, so the
columns, CHECKs, comments and indexes are those of an unpartitioned store. Postgres needs the
partition key in every unique key: ``page_snapshots``' primary key is ``url_digest`` already,
the unique ``(url_digest, version_no)`` includes it, and ``page_versions``' primary key
becomes ``(url_digest, id)`` (``id`` stays unique: it comes from one sequence). Every query of
the store filters or joins on ``url_digest``, so each touches one partition.

Later migrations run on the partitioned tables as usual (adding a column or an index to a
partitioned table reaches every partition).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import MetaData, PrimaryKeyConstraint
from sqlalchemy.engine import Connection, Engine

from changewatch.errors import ConfigError
from changewatch.store.errors import translate_errors
from changewatch.store.simhashes import trigger_statements
from changewatch.store.tables import NAMING_CONVENTION, page_snapshots, page_versions
from changewatch.store.views import (
    HISTORY_VIEW,
    comment_statements,
    create_statements,
    drop_statements,
    page_history_statement,
)

__all__ = ["MAX_PARTITIONS", "partition_count", "partition_tables"]

#: More partitions than this only cost planning time.
MAX_PARTITIONS = 256
_TABLES = ("page_snapshots", "page_versions")


def partition_count(conn: Connection, table: str) -> int:
    """How many partitions ``table`` has (0 when it is not partitioned)."""
    return int(
        conn.execute(
            sa.text(
                "SELECT COUNT(i.inhrelid) FROM pg_partitioned_table p "
                "LEFT JOIN pg_inherits i ON i.inhparent = p.partrelid "
                "WHERE p.partrelid = to_regclass(:t)"
            ),
            {"t": table},
        ).scalar_one()
    )


def _partitioned_metadata() -> MetaData:
    md = MetaData(naming_convention=NAMING_CONVENTION)
    snap = page_snapshots.to_metadata(md)
    ver = page_versions.to_metadata(md)
    for table in (snap, ver):
        table.dialect_options["postgresql"]["partition_by"] = "HASH (url_digest)"
    ver.c.id.primary_key = False  # the key becomes (url_digest, id)
    ver.append_constraint(PrimaryKeyConstraint("url_digest", "id", name="pk_page_versions"))
    return md


def _external_foreign_keys(conn: Connection) -> list[tuple[str, str, str]]:
    """(table, name, definition) of foreign keys from other tables to ours."""
    rows = conn.execute(
        sa.text(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
            "FROM pg_constraint WHERE contype = 'f' "
            "AND confrelid IN (to_regclass('page_snapshots'), to_regclass('page_versions')) "
            "AND conrelid NOT IN (to_regclass('page_snapshots'), to_regclass('page_versions'))"
        )
    ).all()
    return [(str(t), str(n), str(d)) for t, n, d in rows]


def _check(conn: Connection, partitions: Any) -> bool:
    """Validate; True when the tables already have exactly ``partitions`` partitions."""
    if conn.dialect.name != "postgresql":
        raise ConfigError("--partitions needs PostgreSQL: SQLite tables cannot be partitioned")
    if isinstance(partitions, bool) or not isinstance(partitions, int):
        raise ConfigError(f"partitions must be an integer, got {partitions!r}")
    if not 2 <= partitions <= MAX_PARTITIONS:
        raise ConfigError(f"partitions must be from 2 to {MAX_PARTITIONS}, got {partitions}")
    counts = {t: partition_count(conn, t) for t in _TABLES}
    if set(counts.values()) == {partitions}:
        return True
    if any(counts.values()):
        raise ConfigError(
            f"the tables are already partitioned ({counts['page_snapshots']} partitions); "
            f"cannot repartition into {partitions}"
        )
    for table in _TABLES:
        if conn.execute(sa.text(f"SELECT EXISTS (SELECT 1 FROM {table})")).scalar_one():
            raise ConfigError(f"--partitions works only on an empty database, and {table} has rows")
    return False


def _name_partition_indexes(conn: Connection) -> None:
    """Rename each partition's copy of an index ``<index>_p<n>`` (Postgres names them
    ``page_snapshots_p0_expr_idx2`` and so on), so plans name the index they use."""
    rows = conn.exec_driver_sql(
        "SELECT child.relname, parent.relname, tab.relname FROM pg_inherits i "
        "JOIN pg_class child ON child.oid = i.inhrelid "
        "JOIN pg_class parent ON parent.oid = i.inhparent AND parent.relkind = 'I' "
        "JOIN pg_index x ON x.indexrelid = child.oid "
        "JOIN pg_class tab ON tab.oid = x.indrelid "
        "WHERE tab.relname ~ '^page_(snapshots|versions)_p[0-9]+$'"
    ).all()
    for child, parent, table in rows:
        suffix = str(table).rsplit("_", 1)[1]
        conn.exec_driver_sql(f'ALTER INDEX "{child}" RENAME TO "{parent}_{suffix}"')


def partition_tables(engine: Engine, partitions: int) -> bool:
    """Rebuild the empty, migrated tables with ``partitions`` hash partitions each.

    Returns False when they already had exactly that many (nothing done). ``ConfigError``
    on SQLite, for a bad count, for tables with rows or partitioned otherwise. One
    transaction: on any error nothing changes.
    """
    url = engine.url.render_as_string(hide_password=False)
    with translate_errors(url), engine.begin() as conn:
        if _check(conn, partitions):
            return False
        conn.exec_driver_sql(f"DROP VIEW IF EXISTS {HISTORY_VIEW}")  # on both tables
        for statement in drop_statements():
            conn.exec_driver_sql(statement)
        foreign = _external_foreign_keys(conn)
        for table, name, _ in foreign:
            conn.exec_driver_sql(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
        conn.exec_driver_sql("DROP TABLE page_versions")
        conn.exec_driver_sql("DROP TABLE page_snapshots")
        _partitioned_metadata().create_all(conn)
        for table in _TABLES:
            for remainder in range(partitions):
                conn.exec_driver_sql(
                    f"CREATE TABLE {table}_p{remainder} PARTITION OF {table} "
                    f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder})"
                )
        _name_partition_indexes(conn)
        for statement in trigger_statements("postgresql"):
            conn.exec_driver_sql(statement)
        for statement in create_statements("postgresql"):
            conn.exec_driver_sql(statement)
        conn.exec_driver_sql(page_history_statement("postgresql"))
        for statement in comment_statements():
            conn.exec_driver_sql(statement.replace("%", "%%"))
        for table, name, definition in foreign:
            conn.exec_driver_sql(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    return True
