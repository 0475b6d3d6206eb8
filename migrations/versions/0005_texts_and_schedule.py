"""Recrawl scheduling columns on page_snapshots, and the optional page_texts table.

``change_count`` (X of the change-rate estimator), ``change_rate`` (changes per day),
``due_at`` (when a change since ``last_seen`` becomes more likely than not) and ``rate_band``
(the rate's half-octave, indexed with ``last_seen`` for ``due``) are kept on every write (see
:mod:`changewatch.schedule` and :mod:`changewatch.store.schedule`). Existing rows are
back-filled from their counters: each version after the first was one fetch that saw a change,
and the estimate is taken as of the row's ``last_seen``. Columns are added with
``op.add_column`` only (no table rebuild: SQLite views may depend on ``page_snapshots``).

``page_texts`` keeps the zstd-compressed normalised text once per content hash, for
``changewatch diff``; it is written only when ``store_text`` is on.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from changewatch.schedule import DUE_PROBABILITY
from changewatch.store.rates import AddDays, band_expr, rate_expr
from changewatch.store.tables import UTCDateTime

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add and back-fill the scheduling columns and their indexes; create page_texts."""
    op.add_column(
        "page_snapshots",
        sa.Column(
            "change_count",
            sa.Integer(),
            nullable=False,
            server_default=sa.text("0"),
            comment="fetches that saw a change (changed or minor): X of the change-rate estimator",
        ),
    )
    op.add_column(
        "page_snapshots",
        sa.Column(
            "change_rate",
            sa.Float(),
            nullable=True,
            comment="estimated changes per day (Cho & Garcia-Molina), updated on every fetch",
        ),
    )
    op.add_column(
        "page_snapshots",
        sa.Column(
            "due_at",
            UTCDateTime(),
            nullable=True,
            comment="when the probability of a change since last_seen reaches 0.5",
        ),
    )
    op.add_column(
        "page_snapshots",
        sa.Column(
            "rate_band",
            sa.SmallInteger(),
            nullable=True,
            comment="floor(2 * log2(change_rate)): rates within a factor 1.41 share a band",
        ),
    )
    snap = sa.table(
        "page_snapshots",
        sa.column("version_count", sa.Integer()),
        sa.column("fetch_count", sa.BigInteger()),
        sa.column("change_count", sa.Integer()),
        sa.column("change_rate", sa.Float()),
        sa.column("due_at", UTCDateTime()),
        sa.column("rate_band", sa.SmallInteger()),
        sa.column("first_seen", UTCDateTime()),
        sa.column("last_seen", UTCDateTime()),
    )
    op.execute(snap.update().values(change_count=snap.c.version_count - 1))
    c = snap.c
    rate = rate_expr(c.fetch_count - 1, c.change_count, c.first_seen, c.last_seen)
    op.execute(snap.update().values(change_rate=rate))
    due = AddDays(snap.c.last_seen, sa.literal(-math.log1p(-DUE_PROBABILITY)) / snap.c.change_rate)
    op.execute(snap.update().values(due_at=due, rate_band=band_expr(c.change_rate)))
    op.create_index(
        "ix_page_snapshots_rate_band_last_seen", "page_snapshots", ["rate_band", "last_seen"]
    )
    op.create_index(
        "ix_page_snapshots_host_rate_band_last_seen",
        "page_snapshots",
        ["host", "rate_band", "last_seen"],
    )
    op.create_table(
        "page_texts",
        sa.Column(
            "content_sha256",
            sa.LargeBinary(32),
            nullable=False,
            comment="SHA-256 of the normalised text: page_versions.content_sha256",
        ),
        sa.Column(
            "text_zstd", sa.LargeBinary(), nullable=False, comment="the UTF-8 text, zstd-compressed"
        ),
        sa.Column("text_bytes", sa.Integer(), nullable=False, comment="UTF-8 bytes of the text"),
        sa.Column("compressed_bytes", sa.Integer(), nullable=False, comment="bytes of text_zstd"),
        sa.Column(
            "fingerprint_version",
            sa.SmallInteger(),
            nullable=False,
            comment="normalisation rules that made the text",
        ),
        sa.Column("first_stored", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("content_sha256", name=op.f("pk_page_texts")),
        comment="Normalised page texts, kept once per content hash when store_text is on.",
    )


def downgrade() -> None:
    """Drop page_texts and the scheduling columns (their values are derived: nothing is lost)."""
    op.drop_table("page_texts")
    op.drop_index("ix_page_snapshots_host_rate_band_last_seen", table_name="page_snapshots")
    op.drop_index("ix_page_snapshots_rate_band_last_seen", table_name="page_snapshots")
    op.drop_column("page_snapshots", "rate_band")
    op.drop_column("page_snapshots", "due_at")
    op.drop_column("page_snapshots", "change_rate")
    op.drop_column("page_snapshots", "change_count")
