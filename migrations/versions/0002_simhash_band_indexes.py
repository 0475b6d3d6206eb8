"""Index the four 16-bit bands of page_snapshots.simhash for near-duplicate search.

Expression indexes ``(simhash >> 48) & 65535`` … ``simhash & 65535`` on SQLite and Postgres
(DESIGN.md, Storage: the pigeonhole bands). Queries build the same expressions with
:func:`changewatch.store.tables.simhash_band_expr` (Postgres uses an expression index only
for the identical expression); the statements here are frozen as this revision ran them, and
tests/integration/store/test_frozen_migrations.py checks they still match the live ones.

SQLite cannot reflect expression indexes, so a later migration that rebuilds
``page_snapshots`` in Alembic's batch mode (``render_as_batch`` on SQLite) would drop these
indexes silently: such a migration must create them again. The drift check compares them on
Postgres only (see ``changewatch.store.migrate.skip_band_index_reflection_warnings``).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


#: (index name, expression) of band 0 (the top 16 bits) to band 3.
_BANDS = (
    ("ix_page_snapshots_simhash_band0", "(simhash >> 48) & 65535"),
    ("ix_page_snapshots_simhash_band1", "(simhash >> 32) & 65535"),
    ("ix_page_snapshots_simhash_band2", "(simhash >> 16) & 65535"),
    ("ix_page_snapshots_simhash_band3", "simhash & 65535"),
)


def upgrade() -> None:
    """Create one expression index per 16-bit SimHash band (band 0 = the top 16 bits)."""
    # Postgres wants an index expression in brackets of its own; SQLite keeps the text as
    # written, which is what SQLAlchemy writes for the live index.
    postgres = op.get_bind().dialect.name == "postgresql"
    for name, expression in _BANDS:
        indexed = f"({expression})" if postgres else expression
        op.execute(f"CREATE INDEX {name} ON page_snapshots ({indexed})")


def downgrade() -> None:
    """Drop the band indexes; near-duplicate search then scans the table."""
    for name, _expression in reversed(_BANDS):
        op.drop_index(name, table_name="page_snapshots")
