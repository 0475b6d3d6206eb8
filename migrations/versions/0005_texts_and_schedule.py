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

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The live UTCDateTime of changewatch.store.tables, as DDL (frozen here).
_UTC_DATETIME = sa.DateTime(timezone=True)

# The back-fill, frozen as this revision ran it. The estimate is changewatch.schedule's at
# this revision: n = fetch_count - 1 intervals, x = change_count changes (0.5 if none, at
# most n), over the days from first_seen to last_seen,
#     rate = -ln((n - x + 0.5) / (n + 0.5)) * n / days      (1.0 while n or days is 0);
# due_at = last_seen + ln 2 / rate days (a change more likely than not: P = 0.5);
# rate_band = floor(2 * log2(rate)), clamped to -40..40.
_DAYS = {
    "sqlite": "(julianday(last_seen) - julianday(first_seen))",
    "postgresql": "(CAST(EXTRACT(EPOCH FROM (last_seen - first_seen)) AS FLOAT) / 86400.0)",
}
_N = "CAST(fetch_count - 1 AS FLOAT)"
_X = (
    "CASE WHEN change_count <= 0 THEN 0.5 "
    f"WHEN change_count > fetch_count - 1 THEN {_N} "
    "ELSE CAST(change_count AS FLOAT) END"
)
_RATE = (
    "UPDATE page_snapshots SET change_rate = CASE "
    "WHEN fetch_count - 1 <= 0 OR {days} <= 0 THEN 1.0 "
    f"ELSE -ln(({_N} - ({_X}) + 0.5) / ({_N} + 0.5)) * {_N} / {{days}} END"
)
_DUE_AT = {
    "sqlite": "strftime('%Y-%m-%d %H:%M:%f', julianday(last_seen) + "
    "0.6931471805599453 / change_rate) || '000'",
    "postgresql": "last_seen + (0.6931471805599453 / change_rate) * INTERVAL '1 day'",
}
_BAND = "floor(2.0 * ln(change_rate) / ln(2.0))"
_DUE_AND_BAND = (
    "UPDATE page_snapshots SET due_at = {due_at}, rate_band = CAST(CASE "
    f"WHEN {_BAND} < -40 THEN -40 WHEN {_BAND} > 40 THEN 40 ELSE {_BAND} END AS SMALLINT)"
)


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
            _UTC_DATETIME,
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
    dialect = op.get_bind().dialect.name
    op.execute("UPDATE page_snapshots SET change_count = version_count - 1")
    op.execute(_RATE.format(days=_DAYS[dialect]))
    op.execute(_DUE_AND_BAND.format(due_at=_DUE_AT[dialect]))
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
        sa.Column("first_stored", _UTC_DATETIME, nullable=False),
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
