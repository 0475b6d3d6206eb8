"""Index the four 16-bit bands of page_snapshots.simhash for near-duplicate search.

Expression indexes ``(simhash >> 48) & 65535`` … ``simhash & 65535`` on SQLite and Postgres
(DESIGN.md, Storage: the pigeonhole bands). The expressions come from
:func:`changewatch.store.tables.simhash_band_expr`, the same function queries use, so the
index and query expressions cannot disagree.

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

from changewatch.store.tables import (
    SIMHASH_BANDS,
    page_snapshots,
    simhash_band_expr,
    simhash_band_index_names,
)

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create one expression index per 16-bit SimHash band (band 0 = the top 16 bits)."""
    names = simhash_band_index_names()
    for band in range(SIMHASH_BANDS):
        op.create_index(
            names[band], "page_snapshots", [simhash_band_expr(page_snapshots.c.simhash, band)]
        )


def downgrade() -> None:
    """Drop the band indexes; near-duplicate search then scans the table."""
    for name in reversed(simhash_band_index_names()):
        op.drop_index(name, table_name="page_snapshots")
