"""Create host_noise: the blocks learned as noise per host (fingerprint version 4).

A block that changes on most re-fetches of a host's pages while their prose does not — a
counter, a rotating list, a banner that comes and goes — is learned as noise for its host
(``changewatch.fingerprint.noise``). One row per host, fingerprint version, kind (``key``:
a block's structural path and ordinal; ``shape``: its text with digits as 0) and value (the
blake2b-64 the fingerprint knows): how often it was seen and changed, and since when it is
learned. Rows of another fingerprint version are never used (their keys name other blocks).
Only a new table; nothing existing changes. The DDL is frozen here: no live code imported.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create host_noise."""
    op.create_table(
        "host_noise",
        sa.Column("host", sa.String(300), nullable=False, comment="host[:port] of the pages"),
        sa.Column(
            "fingerprint_version",
            sa.SmallInteger(),
            nullable=False,
            comment="the fingerprint rules the block keys and shapes belong to",
        ),
        sa.Column(
            "kind",
            sa.String(5),
            nullable=False,
            comment="key: a block's path and ordinal (its text changes); shape: its text with "
            "digits as 0 (it comes and goes)",
        ),
        sa.Column(
            "value",
            sa.LargeBinary(8),
            nullable=False,
            comment="blake2b-64 of the key or shape (Block.key / Block.shape)",
        ),
        sa.Column(
            "path",
            sa.Text(),
            nullable=False,
            comment="structural path of the block when first seen (body/div/ul/li), for reading",
        ),
        sa.Column(
            "observations",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="re-fetches (steps whose prose stayed the same) that saw it",
        ),
        sa.Column(
            "changes",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="of those, the steps in which it changed",
        ),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "learned_at",
            sa.DateTime(timezone=True),
            nullable=True,
            comment="when it met the thresholds and became noise; NULL: still observed only",
        ),
        sa.CheckConstraint("kind IN ('key', 'shape')", name=op.f("ck_host_noise_kind")),
        sa.CheckConstraint("changes <= observations", name=op.f("ck_host_noise_changes_seen")),
        sa.PrimaryKeyConstraint(
            "host", "fingerprint_version", "kind", "value", name=op.f("pk_host_noise")
        ),
        comment="Blocks learned as noise per host (changewatch noise list / reset).",
    )


def downgrade() -> None:
    """Drop host_noise."""
    op.drop_table("host_noise")
