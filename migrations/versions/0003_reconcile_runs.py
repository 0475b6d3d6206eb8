"""Create reconcile_runs and reconcile_findings (sitemap reconciliation, docs/reconcile.md).

Only new tables and indexes: ``page_snapshots`` and ``page_versions`` are untouched.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite only auto-increments an INTEGER PRIMARY KEY.
_BIG_SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# The live UTCDateTime of changewatch.store.tables, as DDL (frozen here).
_UTC_DATETIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the run table, the findings table and the indexes analysts' queries use."""
    op.create_table(
        "reconcile_runs",
        sa.Column("id", _BIG_SERIAL, autoincrement=True, nullable=False),
        sa.Column("started_at", _UTC_DATETIME, nullable=False),
        sa.Column(
            "finished_at", _UTC_DATETIME, nullable=True, comment="NULL while the run is going on"
        ),
        sa.Column(
            "status",
            sa.String(12),
            nullable=False,
            comment="running, complete, failed, interrupted or skipped (another run held the lock)",
        ),
        sa.Column(
            "sites",
            sa.Text(),
            nullable=False,
            comment="the site or sitemap URLs given, one per line",
        ),
        sa.Column(
            "arguments",
            sa.Text(),
            nullable=True,
            comment="the limits and options of the run, as JSON",
        ),
        sa.Column("missing", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("stale", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("vanished", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("fresh", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "errors",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="sitemaps that could not be read (details in the command output)",
        ),
        sa.Column(
            "runner_host",
            sa.String(255),
            nullable=True,
            comment="hostname of the machine that ran",
        ),
        sa.Column("runner_pid", sa.Integer(), nullable=True, comment="process id of the run"),
        sa.CheckConstraint(
            "status IN ('running', 'complete', 'failed', 'interrupted', 'skipped')",
            name=op.f("ck_reconcile_runs_status_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reconcile_runs")),
        comment="One row per `changewatch reconcile` run: what was asked, when, and the totals.",
    )
    op.create_index("ix_reconcile_runs_started_at", "reconcile_runs", ["started_at"])
    op.create_table(
        "reconcile_findings",
        sa.Column("id", _BIG_SERIAL, autoincrement=True, nullable=False),
        sa.Column("run_id", _BIG_SERIAL, nullable=False),
        sa.Column(
            "host", sa.String(300), nullable=False, comment="host[:port] of the canonical URL"
        ),
        sa.Column(
            "url",
            sa.Text(),
            nullable=True,
            comment="canonical URL as the URL-storage policy allows (NULL under 'none')",
        ),
        sa.Column(
            "url_digest",
            sa.LargeBinary(16),
            nullable=False,
            comment="blake2b-128 of the canonical URL",
        ),
        sa.Column("kind", sa.String(8), nullable=False, comment="missing, stale or vanished"),
        sa.Column(
            "sitemap_lastmod", _UTC_DATETIME, nullable=True, comment="the entry's lastmod, if any"
        ),
        sa.Column(
            "stored_last_seen",
            _UTC_DATETIME,
            nullable=True,
            comment="page_snapshots.last_seen when the run looked (NULL for missing)",
        ),
        sa.Column(
            "sitemap",
            sa.Text(),
            nullable=True,
            comment="the sitemap that listed the URL (NULL for vanished)",
        ),
        sa.CheckConstraint(
            "kind IN ('missing', 'stale', 'vanished')",
            name=op.f("ck_reconcile_findings_kind_known"),
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["reconcile_runs.id"],
            name=op.f("fk_reconcile_findings_run_id_reconcile_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reconcile_findings")),
        comment="What one reconcile run found: pages missing from the store, stale, or vanished.",
    )
    op.create_index("ix_reconcile_findings_run_id", "reconcile_findings", ["run_id", "kind"])
    op.create_index("ix_reconcile_findings_host", "reconcile_findings", ["host", "run_id"])
    op.create_index("ix_reconcile_findings_url_digest", "reconcile_findings", ["url_digest"])


def downgrade() -> None:
    """Drop the findings, then the runs."""
    op.drop_index("ix_reconcile_findings_url_digest", table_name="reconcile_findings")
    op.drop_index("ix_reconcile_findings_host", table_name="reconcile_findings")
    op.drop_index("ix_reconcile_findings_run_id", table_name="reconcile_findings")
    op.drop_table("reconcile_findings")
    op.drop_index("ix_reconcile_runs_started_at", table_name="reconcile_runs")
    op.drop_table("reconcile_runs")
