"""The SimHash holder index carries the URL (Postgres); page_snapshots' band indexes go.

Near-duplicate search (since 0013) reads the band buckets of ``page_simhashes``, then each
SimHash's holders through ``page_snapshots (simhash, url_digest)``, then joined the answer
back to ``page_snapshots`` by primary key for the URLs. On 1,000,000 real fingerprints that
join was 400 of the 431 buffer reads of a 100-row answer (``EXPLAIN (ANALYZE, BUFFERS)``)
and most of its time. On Postgres the holder index is built again as ``(simhash,
url_digest) INCLUDE (url)``, so the search is index-only and needs no join. SQLite has no
``INCLUDE``: its index stays as 0013 made it.

The four expression indexes on the bands of ``page_snapshots.simhash`` (migration 0002) are
read by no query since 0013 (every band lookup is on ``page_simhashes``): dropped, on both
dialects (about 43 bytes a stored page on Postgres). The downgrade builds them again, and
the holder index without ``URL``.

A hash-partitioned ``page_snapshots`` (``changewatch db upgrade --partitions``) gets the
index on every partition; each partition's copy is renamed ``<index>_p<n>``, as the
partitioning names them. Building the index locks writes to ``page_snapshots`` while it
runs (about 1 s a million rows on the benchmark machine): run the upgrade between crawls.
The SQL is written out here as it ran (no live code imported).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: (index name, expression) of band 0 (the top 16 bits) to band 3, as 0002 made them.
_BANDS = (
    ("ix_page_snapshots_simhash_band0", "(simhash >> 48) & 65535"),
    ("ix_page_snapshots_simhash_band1", "(simhash >> 32) & 65535"),
    ("ix_page_snapshots_simhash_band2", "(simhash >> 16) & 65535"),
    ("ix_page_snapshots_simhash_band3", "simhash & 65535"),
)

_HOLDERS = "ix_page_snapshots_simhash_url_digest"

# Each partition's copy of one index of page_snapshots (none when it is not partitioned):
# (copy's name, partition's name).
_COPIES = (
    "SELECT child.relname, tab.relname FROM pg_inherits i "
    "JOIN pg_class child ON child.oid = i.inhrelid "
    "JOIN pg_class parent ON parent.oid = i.inhparent "
    "JOIN pg_index x ON x.indexrelid = child.oid "
    "JOIN pg_class tab ON tab.oid = x.indrelid "
    "WHERE parent.relname = '{name}' AND tab.relname ~ '^page_snapshots_p[0-9]+$'"
)


def _create_index(name: str, definition: str) -> None:
    """``CREATE INDEX name ON page_snapshots definition``, then (Postgres, partitioned)
    each partition's copy renamed ``name_p<n>``."""
    op.execute(f"CREATE INDEX {name} ON page_snapshots {definition}")
    if op.get_bind().dialect.name != "postgresql":
        return
    for child, table in op.get_bind().exec_driver_sql(_COPIES.format(name=name)).all():
        suffix = str(table).rsplit("_", 1)[1]
        op.execute(f'ALTER INDEX "{child}" RENAME TO "{name}_{suffix}"')


def upgrade() -> None:
    """Drop the band indexes of page_snapshots; on Postgres, build the holder index again
    with ``INCLUDE (url)``."""
    for name, _expression in reversed(_BANDS):
        op.execute(f"DROP INDEX {name}")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP INDEX {_HOLDERS}")
        _create_index(_HOLDERS, "(simhash, url_digest) INCLUDE (url)")


def downgrade() -> None:
    """The holder index without the URL again; the four band indexes of 0002 again."""
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.execute(f"DROP INDEX {_HOLDERS}")
        _create_index(_HOLDERS, "(simhash, url_digest)")
    for name, expression in _BANDS:
        # Postgres wants an index expression in brackets of its own (as in 0002).
        indexed = f"({expression})" if postgres else expression
        _create_index(name, f"({indexed})")
