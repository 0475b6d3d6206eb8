"""Create reconcile_hosts: per-host counts of each reconcile run, and why vanished was withheld.

The shrink guard (docs/reconcile.md) compares a host's listing with the host's last run whose
vanished pages were computed: that history is per host, which ``reconcile_runs`` (totals of
a run) cannot give. Only a new table; nothing existing changes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# reconcile_runs.id's type, frozen as migration 0003 created it.
_BIG_SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _count(name: str, comment: str | None = None) -> sa.Column[int]:
    return sa.Column(
        name, sa.BigInteger(), server_default=sa.text("0"), nullable=False, comment=comment
    )


def upgrade() -> None:
    """Create reconcile_hosts and its index by host."""
    op.create_table(
        "reconcile_hosts",
        sa.Column("run_id", _BIG_SERIAL, nullable=False),
        sa.Column(
            "host", sa.String(300), nullable=False, comment="host[:port] of the canonical URLs"
        ),
        _count("listed", "entries of the host listed by its sitemaps, repeats included"),
        _count("duplicates"),
        _count("invalid"),
        _count("missing"),
        _count("stale"),
        _count("fresh"),
        _count("vanished"),
        sa.Column(
            "stored",
            sa.BigInteger(),
            nullable=True,
            comment="stored pages of the host when vanished was considered (NULL: the walk "
            "was incomplete, they were not counted)",
        ),
        sa.Column("sitemaps", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "errors",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="sitemaps (or robots.txt) of the host that could not be read",
        ),
        sa.Column(
            "vanished_checked",
            sa.Boolean(),
            nullable=False,
            comment="whether vanished was computed (false: withheld, see vanished_withheld)",
        ),
        sa.Column(
            "vanished_withheld",
            sa.Text(),
            nullable=True,
            comment="why vanished was not computed: an incomplete walk, a time limit, or the "
            "shrink guard",
        ),
        sa.Column(
            "shrink_guard",
            sa.Text(),
            nullable=True,
            comment="what the shrink guard found, also when --force-vanished overrode it",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["reconcile_runs.id"],
            name=op.f("fk_reconcile_hosts_run_id_reconcile_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "host", name=op.f("pk_reconcile_hosts")),
        comment="One row per host of a reconcile run: its counts and whether vanished was "
        "computed.",
    )
    op.create_index("ix_reconcile_hosts_host", "reconcile_hosts", ["host", "run_id"])


def downgrade() -> None:
    """Drop reconcile_hosts."""
    op.drop_index("ix_reconcile_hosts_host", table_name="reconcile_hosts")
    op.drop_table("reconcile_hosts")
