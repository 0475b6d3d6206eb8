"""Flip-flop marker, a time index and the analyst views (page_changes, page_latest, …).

Adds ``page_versions.reverted_to`` (the earlier version a change returned to),
``page_versions.host`` (the page's host, copied from ``page_snapshots`` and backfilled here,
so one host's changes over a time range are one range scan of the new index
``ix_page_versions_host_first_seen``), Postgres comments on the columns that had none, and the
views of :mod:`changewatch.store.views` on SQLite and Postgres (documented in docs/sql.md).
The views are not in SQLAlchemy's metadata, so the drift check does not compare them; a
later migration that changes a view drops and recreates it with its own SQL.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from changewatch.store.tables import COMMENTS, OLD_VERSION_COUNT_COMMENT
from changewatch.store.views import comment_statements, create_statements, drop_statements

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


_NEW_COLUMNS = {"page_versions.reverted_to", "page_versions.host"}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def upgrade() -> None:
    """Add reverted_to and the time index, comment the columns (Postgres), create the views."""
    op.add_column(
        "page_versions",
        sa.Column(
            "reverted_to",
            sa.Integer(),
            nullable=True,
            comment=COMMENTS["page_versions.reverted_to"],
        ),
    )
    op.add_column(
        "page_versions",
        sa.Column("host", sa.String(300), nullable=True, comment=COMMENTS["page_versions.host"]),
    )
    op.execute(
        "UPDATE page_versions SET host = (SELECT s.host FROM page_snapshots s "
        "WHERE s.url_digest = page_versions.url_digest)"
    )
    op.create_index("ix_page_versions_host_first_seen", "page_versions", ["host", "first_seen"])
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        for target, text in COMMENTS.items():
            if target not in _NEW_COLUMNS:
                op.execute(f"COMMENT ON COLUMN {target} IS {_quote(text)}")
    # page_latest as it was at 0004: its schedule columns come with 0006.
    for statement in create_statements(dialect, schedule=False):
        op.execute(statement)
    if dialect == "postgresql":
        for statement in comment_statements(schedule=False):
            op.execute(statement)


def downgrade() -> None:
    """Drop the views, the comments added here, the index and the column."""
    for statement in drop_statements():
        op.execute(statement)
    if op.get_bind().dialect.name == "postgresql":
        for target in COMMENTS:
            if target == "page_snapshots.version_count":
                op.execute(f"COMMENT ON COLUMN {target} IS {_quote(OLD_VERSION_COUNT_COMMENT)}")
            elif target not in _NEW_COLUMNS:
                op.execute(f"COMMENT ON COLUMN {target} IS NULL")
    op.drop_index("ix_page_versions_host_first_seen", table_name="page_versions")
    op.drop_column("page_versions", "host")
    op.drop_column("page_versions", "reverted_to")
