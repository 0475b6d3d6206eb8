"""page_latest shows each page's change-rate estimate and when it is due.

The view gains ``fetches_seeing_a_change``, ``changes_per_day`` and ``due_at`` (the
scheduling columns migration 0005 added to ``page_snapshots``), so an analyst can ask "what is
due now" or "which pages change daily" from the view alone. Views cannot gain columns in
place on SQLite, and ``CREATE OR REPLACE VIEW`` on Postgres only appends them: the view is
dropped and created again on both (nothing depends on it).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from changewatch.store.views import comment_statements, page_latest_statement

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _replace(schedule: bool) -> None:
    dialect = op.get_bind().dialect.name
    op.execute("DROP VIEW IF EXISTS page_latest")
    op.execute(page_latest_statement(dialect, schedule=schedule))
    if dialect == "postgresql":
        for statement in comment_statements(schedule=schedule, only="page_latest"):
            op.execute(statement)


def upgrade() -> None:
    """page_latest with the scheduling columns."""
    _replace(schedule=True)


def downgrade() -> None:
    """page_latest as migration 0004 made it."""
    _replace(schedule=False)
