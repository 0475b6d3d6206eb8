"""Create page_snapshots and page_versions.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The column types as this revision created them (frozen: the live ``UTCDateTime`` and
# ``SimHash64`` of changewatch.store.tables convert values in Python; their DDL is this).
_UTC_DATETIME = sa.DateTime(timezone=True)
_SIMHASH64 = sa.BigInteger()


def upgrade() -> None:
    """Create the snapshot table (one row per canonical URL) and the version history."""
    op.create_table(
        "page_snapshots",
        sa.Column(
            "url_digest",
            sa.LargeBinary(16),
            nullable=False,
            comment="blake2b-128 of the canonical URL",
        ),
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
            "canon_version",
            sa.SmallInteger(),
            nullable=False,
            comment="version of the URL canonicalisation rules that made url_digest",
        ),
        sa.Column(
            "fingerprint_version",
            sa.SmallInteger(),
            nullable=False,
            comment="version of the normalisation and SimHash rules",
        ),
        sa.Column(
            "raw_sha256",
            sa.LargeBinary(32),
            nullable=False,
            comment="SHA-256 of the page bytes as last fetched",
        ),
        sa.Column(
            "content_sha256",
            sa.LargeBinary(32),
            nullable=False,
            comment="SHA-256 of the normalised visible text",
        ),
        sa.Column(
            "simhash",
            _SIMHASH64,
            nullable=False,
            comment="64-bit SimHash of the normalised text, stored as signed BIGINT",
        ),
        sa.Column(
            "text_length", sa.Integer(), nullable=False, comment="characters of normalised text"
        ),
        sa.Column("first_seen", _UTC_DATETIME, nullable=False),
        sa.Column("last_seen", _UTC_DATETIME, nullable=False),
        sa.Column(
            "last_changed",
            _UTC_DATETIME,
            nullable=False,
            comment="when the current version was first seen",
        ),
        sa.Column(
            "version_count",
            sa.Integer(),
            nullable=False,
            comment="number of page_versions rows of this page",
        ),
        sa.Column(
            "fetch_count",
            sa.BigInteger(),
            nullable=False,
            comment="number of should_parse calls for this page",
        ),
        sa.Column("etag", sa.Text(), nullable=True),
        sa.Column("last_modified", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "version_count >= 1", name=op.f("ck_page_snapshots_version_count_positive")
        ),
        sa.CheckConstraint(
            "fetch_count >= version_count",
            name=op.f("ck_page_snapshots_fetches_cover_versions"),
        ),
        sa.PrimaryKeyConstraint("url_digest", name=op.f("pk_page_snapshots")),
        comment="One row per canonical URL: its current fingerprint and crawl counters.",
    )
    op.create_index("ix_page_snapshots_content_sha256", "page_snapshots", ["content_sha256"])
    op.create_index("ix_page_snapshots_host", "page_snapshots", ["host"])
    op.create_table(
        "page_versions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("url_digest", sa.LargeBinary(16), nullable=False),
        sa.Column(
            "version_no",
            sa.Integer(),
            nullable=False,
            comment="1 for the first version of a page, then 2, 3…",
        ),
        sa.Column("kind", sa.String(8), nullable=False, comment="new, changed or minor"),
        sa.Column(
            "distance",
            sa.SmallInteger(),
            nullable=True,
            comment="SimHash Hamming distance from the previous version (NULL for new)",
        ),
        sa.Column("raw_sha256", sa.LargeBinary(32), nullable=False),
        sa.Column("content_sha256", sa.LargeBinary(32), nullable=False),
        sa.Column("simhash", _SIMHASH64, nullable=False),
        sa.Column("fingerprint_version", sa.SmallInteger(), nullable=False),
        sa.Column("text_length", sa.Integer(), nullable=False),
        sa.Column("first_seen", _UTC_DATETIME, nullable=False),
        sa.Column(
            "last_seen",
            _UTC_DATETIME,
            nullable=False,
            comment="last fetch that saw this version; for the current version see "
            "page_snapshots.last_seen",
        ),
        sa.CheckConstraint(
            "kind IN ('new', 'changed', 'minor')", name=op.f("ck_page_versions_kind_known")
        ),
        sa.CheckConstraint(
            "distance IS NULL OR (distance >= 0 AND distance <= 64)",
            name=op.f("ck_page_versions_distance_range"),
        ),
        sa.ForeignKeyConstraint(
            ["url_digest"],
            ["page_snapshots.url_digest"],
            name=op.f("fk_page_versions_url_digest_page_snapshots"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_page_versions")),
        sa.UniqueConstraint(
            "url_digest", "version_no", name=op.f("uq_page_versions_url_digest_version_no")
        ),
        comment="Append-only history: one row per distinct content version of a page.",
    )


def downgrade() -> None:
    """Drop both tables, history first."""
    op.drop_table("page_versions")
    op.drop_index("ix_page_snapshots_host", table_name="page_snapshots")
    op.drop_index("ix_page_snapshots_content_sha256", table_name="page_snapshots")
    op.drop_table("page_snapshots")
