"""The distinct SimHashes of page_snapshots in a table of their own, kept by triggers.

A near-duplicate search reads the rows sharing a 16-bit band with the query (migration
0002). Real fingerprints cluster: thousands of stored pages hold one of a few dozen SimHashes
of one page's near-copies, so a band bucket of ``page_snapshots`` holds thousands of rows and
a search near a cluster read them all to return 100. ``page_simhashes`` holds each SimHash a
stored page has held, about once, with the four band indexes on ``(band, simhash)``: a band
bucket there is one entry per distinct SimHash. The search then reads, per SimHash within
the distance, the holders in URL-digest order with a ``LIMIT`` through the new
``(simhash, url_digest)`` index on ``page_snapshots``.

Triggers keep the table: after an insert into ``page_snapshots``, and after an update that
changes ``simhash``, the new SimHash is added unless it is there already. There is no unique
key, on purpose: a unique key would make two transactions storing the same new SimHash wait
on each other (and two batches storing two such SimHashes in opposite orders deadlock); a
rare duplicate row costs one index entry and the search de-duplicates. Values are never
deleted (a SimHash no page holds any more costs one entry per band and matches no row), so a
transaction that sees a value committed can rely on it. The existing rows are copied in.

SQLite keeps expression indexes and triggers as written and cannot reflect them: a later
migration that rebuilds ``page_snapshots`` or ``page_simhashes`` in batch mode must create
them again. The SQL is written out here as it ran (no live code imported); the frozen
migration test compares it with ``changewatch.store.simhashes``.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: (index name, band expression) of band 0 (the top 16 bits) to band 3.
_BANDS = (
    ("ix_page_simhashes_band0", "(simhash >> 48) & 65535"),
    ("ix_page_simhashes_band1", "(simhash >> 32) & 65535"),
    ("ix_page_simhashes_band2", "(simhash >> 16) & 65535"),
    ("ix_page_simhashes_band3", "simhash & 65535"),
)

_COMMENT = (
    "Each SimHash a page_snapshots row has held, about once (kept by triggers; never "
    "deleted): the band buckets near-duplicate search reads"
)

# Add NEW.simhash unless present; the lookup is an index scan of the band-3 index.
_ADD = (
    "INSERT INTO page_simhashes (simhash) SELECT NEW.simhash WHERE NOT EXISTS ("
    "SELECT 1 FROM page_simhashes WHERE (simhash & 65535) = (NEW.simhash & 65535) "
    "AND simhash = NEW.simhash);"
)

_POSTGRES = (
    "CREATE OR REPLACE FUNCTION page_simhashes_add() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_ADD} RETURN NULL; END $$",
    "CREATE TRIGGER tr_page_snapshots_simhash_insert AFTER INSERT ON page_snapshots "
    "FOR EACH ROW EXECUTE FUNCTION page_simhashes_add()",
    "CREATE TRIGGER tr_page_snapshots_simhash_update AFTER UPDATE OF simhash ON page_snapshots "
    "FOR EACH ROW WHEN (OLD.simhash IS DISTINCT FROM NEW.simhash) "
    "EXECUTE FUNCTION page_simhashes_add()",
)

_SQLITE = (
    "CREATE TRIGGER tr_page_snapshots_simhash_insert AFTER INSERT ON page_snapshots "
    f"BEGIN {_ADD} END",
    "CREATE TRIGGER tr_page_snapshots_simhash_update AFTER UPDATE OF simhash ON page_snapshots "
    f"WHEN OLD.simhash IS NOT NEW.simhash BEGIN {_ADD} END",
)


def upgrade() -> None:
    """Create the table, its band indexes, the holder index and the triggers; copy the
    distinct SimHashes in."""
    postgres = op.get_bind().dialect.name == "postgresql"
    op.execute("CREATE TABLE page_simhashes (simhash BIGINT NOT NULL)")
    if postgres:
        op.execute(f"COMMENT ON TABLE page_simhashes IS '{_COMMENT}'")
        op.execute(
            "COMMENT ON COLUMN page_simhashes.simhash IS "
            "'64-bit SimHash of the normalised text, stored as signed BIGINT'"
        )
    op.execute("INSERT INTO page_simhashes (simhash) SELECT DISTINCT simhash FROM page_snapshots")
    for name, expression in _BANDS:
        # Postgres wants an index expression in brackets of its own (as in 0002).
        indexed = f"({expression})" if postgres else expression
        op.execute(f"CREATE INDEX {name} ON page_simhashes ({indexed}, simhash)")
    op.execute(
        "CREATE INDEX ix_page_snapshots_simhash_url_digest ON page_snapshots (simhash, url_digest)"
    )
    for statement in _POSTGRES if postgres else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    """Drop the triggers, the holder index and the table."""
    postgres = op.get_bind().dialect.name == "postgresql"
    on = " ON page_snapshots" if postgres else ""
    op.execute(f"DROP TRIGGER tr_page_snapshots_simhash_update{on}")
    op.execute(f"DROP TRIGGER tr_page_snapshots_simhash_insert{on}")
    if postgres:
        op.execute("DROP FUNCTION page_simhashes_add()")
    op.execute("DROP INDEX ix_page_snapshots_simhash_url_digest")
    op.execute("DROP TABLE page_simhashes")
