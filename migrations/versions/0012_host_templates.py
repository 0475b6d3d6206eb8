"""Create host_templates and host_template_pages: the template blocks learned per host.

A short block that stands on many of one host's pages (a promo line, a shared notice) is the
host's template, not the page's content (``changewatch.fingerprint.templates``).
``host_template_pages`` keeps the pages of each host that blocks are counted on (the first
100 observed) and the values each counts in; ``host_templates`` one row per host,
fingerprint version and value (the block's text hash, or the hash of its key and text): on
how many of those pages it stands and since when it is learned. Rows of another fingerprint
version are never used. No foreign key: ``page_snapshots`` may be hash-partitioned.

Only new tables; nothing existing changes. The DDL is frozen here: no live code imported.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# UTCDateTime of the store as it was: timezone-aware timestamps.
_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create host_templates and host_template_pages."""
    op.create_table(
        "host_templates",
        sa.Column("host", sa.String(300), nullable=False, comment="host[:port] of the pages"),
        sa.Column(
            "fingerprint_version",
            sa.SmallInteger(),
            nullable=False,
            comment="the fingerprint rules the block hashes and keys belong to",
        ),
        sa.Column(
            "value",
            sa.LargeBinary(8),
            nullable=False,
            comment="text: blake2b-64 of the block's text (Block.text_hash); slot: blake2b-64 "
            "of its key and text hash",
        ),
        sa.Column(
            "kind",
            sa.String(4),
            nullable=False,
            comment="text: the same words on many pages; slot: the same words at the same "
            "place (path and ordinal) on many pages",
        ),
        sa.Column(
            "block_key",
            sa.LargeBinary(8),
            nullable=False,
            comment="blake2b-64 of the block's path and ordinal (Block.key) when first seen; "
            "a learned slot makes every block at this key template",
        ),
        sa.Column(
            "path",
            sa.Text(),
            nullable=False,
            comment="structural path of the block when first seen (body/div/p), for reading",
        ),
        sa.Column(
            "pages",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="sampled pages of the host (host_template_pages) whose last counted "
            "fetch shows it",
        ),
        sa.Column("first_seen", _TS, nullable=False),
        sa.Column("last_seen", _TS, nullable=False),
        sa.Column(
            "learned_at",
            _TS,
            nullable=True,
            comment="when it stood on enough pages (5, and half of the sampled ones) and "
            "became template; NULL: still counted only",
        ),
        sa.CheckConstraint("kind IN ('text', 'slot')", name=op.f("ck_host_templates_kind")),
        sa.PrimaryKeyConstraint(
            "host", "fingerprint_version", "value", name=op.f("pk_host_templates")
        ),
        comment="Blocks learned as a host's template (changewatch templates list / reset).",
    )
    op.create_table(
        "host_template_pages",
        sa.Column("host", sa.String(300), nullable=False, comment="host[:port] of the page"),
        sa.Column(
            "fingerprint_version",
            sa.SmallInteger(),
            nullable=False,
            comment="the fingerprint rules its values belong to",
        ),
        sa.Column(
            "url_digest",
            sa.LargeBinary(16),
            nullable=False,
            comment="the page (page_snapshots.url_digest)",
        ),
        sa.Column(
            "template_values",
            sa.LargeBinary(),
            nullable=False,
            comment="the sorted host_templates.value (8 bytes each, concatenated) this page "
            "counts in",
        ),
        sa.Column(
            "value_count",
            sa.SmallInteger(),
            nullable=False,
            comment="how many values template_values holds",
        ),
        sa.Column("first_seen", _TS, nullable=False, comment="when the page was sampled"),
        sa.Column("last_seen", _TS, nullable=False, comment="when its values last changed"),
        sa.PrimaryKeyConstraint(
            "host", "fingerprint_version", "url_digest", name=op.f("pk_host_template_pages")
        ),
        comment="The pages of each host that template blocks are counted on (at most 100 "
        "per host; changewatch templates reset forgets them).",
    )


def downgrade() -> None:
    """Drop the two tables."""
    op.drop_table("host_template_pages")
    op.drop_table("host_templates")
