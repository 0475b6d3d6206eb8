"""page_snapshots' band indexes go; page_simhashes' comment says prune deletes from it.

The four expression indexes on the bands of ``page_snapshots.simhash`` (migration 0002) are
read by no query since 0013 (every band lookup is on ``page_simhashes``): dropped, on both
dialects (about 43 bytes a stored page on Postgres, and four index entries fewer for every
write that is not a HOT update — every touch of a re-fetch). The downgrade builds them again;
on a hash-partitioned ``page_snapshots`` each partition's copy is renamed ``<index>_p<n>``,
as the partitioning names them.

``changewatch prune`` now deletes the SimHashes no stored page holds from ``page_simhashes``
(``changewatch.store.simhashes``); on Postgres its comment, which said they were never
deleted, says that instead.

The holder index ``(simhash, url_digest)`` stays as 0013 made it. Building it again with
``INCLUDE (url)`` halved near-duplicate search's p99 (its answer's URLs read from the index)
but made every page whose canonical URL does not fit a btree entry (about 2.7 KB; URLs may
be 8 KiB) fail to store: a batch holding one such page failed whole. The SQL is written out
here as it ran (no live code imported).

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

_SIMHASHES_COMMENT = (
    "Each SimHash a page_snapshots row holds, about once (added by triggers; prune deletes "
    "those no row holds): the band buckets near-duplicate search reads"
)
_SIMHASHES_COMMENT_0013 = (
    "Each SimHash a page_snapshots row has held, about once (kept by triggers; never "
    "deleted): the band buckets near-duplicate search reads"
)

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
    """Drop the band indexes of page_snapshots; on Postgres, page_simhashes' new comment."""
    for name, _expression in reversed(_BANDS):
        op.execute(f"DROP INDEX {name}")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"COMMENT ON TABLE page_simhashes IS '{_SIMHASHES_COMMENT}'")


def downgrade() -> None:
    """The four band indexes of 0002 again, and 0013's comment."""
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.execute(f"COMMENT ON TABLE page_simhashes IS '{_SIMHASHES_COMMENT_0013}'")
    for name, expression in _BANDS:
        # Postgres wants an index expression in brackets of its own (as in 0002).
        indexed = f"({expression})" if postgres else expression
        _create_index(name, f"({indexed})")
