"""Create host_noise (noise learned per host), page_chrome_changes and the page_history view.

A block that changes on most re-fetches of a host's pages while their prose does not — a
counter, a rotating list, a banner that comes and goes — is learned as noise for its host
(``changewatch.fingerprint.noise``). One row per host, fingerprint version, kind (``key``:
a block's structural path and ordinal; ``shape``: its text with digits as 0) and value (the
blake2b-64 the fingerprint knows): how often it was seen and changed, and since when it is
learned. Rows of another fingerprint version are never used (their keys name other blocks).

``page_chrome_changes`` keeps one row per fetch that saw a page's chrome or outlinks change
(also when its content did not: ``should_parse`` said ``unchanged``), and the view
``page_history`` shows them beside the content changes, so that a chrome-only change lands
in the history an analyst reads in SQL (docs/sql.md). No foreign key: ``page_snapshots`` may
be hash-partitioned.

Only new tables and a new view; nothing existing changes. The DDL and the view's SQL are
frozen here: no live code imported.

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


# page_snapshots.id-style surrogate keys, frozen: BIGINT, INTEGER on SQLite (its rowid).
_BIG_SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create host_noise, page_chrome_changes (and its indexes) and page_history."""
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

    op.create_table(
        "page_chrome_changes",
        sa.Column("id", _BIG_SERIAL, nullable=False, comment="surrogate key of the row"),
        sa.Column(
            "url_digest",
            sa.LargeBinary(16),
            nullable=False,
            comment="the page (page_snapshots.url_digest)",
        ),
        sa.Column(
            "seen_at",
            sa.DateTime(timezone=True),
            nullable=False,
            comment="the fetch that saw the change",
        ),
        sa.Column(
            "content_changed",
            sa.Boolean(),
            nullable=False,
            comment="whether that fetch also changed the content (made a page_versions row)",
        ),
        sa.Column(
            "chrome_changed", sa.Boolean(), nullable=False, comment="the chrome text changed"
        ),
        sa.Column(
            "links_changed", sa.Boolean(), nullable=False, comment="the set of outlinks changed"
        ),
        sa.Column(
            "chrome_sha256", sa.LargeBinary(32), nullable=False, comment="the new chrome hash"
        ),
        sa.Column(
            "links_sha256", sa.LargeBinary(32), nullable=False, comment="the new outlinks hash"
        ),
        sa.CheckConstraint(
            "chrome_changed OR links_changed",
            name=op.f("ck_page_chrome_changes_something_changed"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_page_chrome_changes")),
        comment="Fetches that saw a page's chrome or outlinks change (the content may not have).",
    )
    op.create_index(
        "ix_page_chrome_changes_url_digest", "page_chrome_changes", ["url_digest", "seen_at"]
    )
    op.create_index("ix_page_chrome_changes_seen_at", "page_chrome_changes", ["seen_at"])
    op.execute(_HISTORY_VIEW[op.get_bind().dialect.name])


def downgrade() -> None:
    """Drop the view and the two tables."""
    op.execute("DROP VIEW IF EXISTS page_history")
    op.drop_index("ix_page_chrome_changes_seen_at", table_name="page_chrome_changes")
    op.drop_index("ix_page_chrome_changes_url_digest", table_name="page_chrome_changes")
    op.drop_table("page_chrome_changes")
    op.drop_table("host_noise")


# page_history as this revision creates it (changewatch.store.views.page_history_statement
# at the time), per dialect.
_HISTORY_VIEW = {
    "postgresql": """
CREATE VIEW page_history AS
SELECT
    s.url AS url,
    v.host AS host,
    encode(s.url_digest, 'hex') AS url_digest,
    v.first_seen AS changed_at,
    'content' AS what,
    v.kind AS kind,
    v.version_no AS version_no,
    COALESCE(c.chrome_changed, false) AS chrome_changed,
    COALESCE(c.links_changed, false) AS links_changed
FROM page_versions v
JOIN page_snapshots s ON s.url_digest = v.url_digest
LEFT JOIN page_chrome_changes c
    ON c.url_digest = v.url_digest AND c.seen_at = v.first_seen AND c.content_changed
WHERE v.version_no > 1
UNION ALL
SELECT
    s.url,
    s.host,
    encode(s.url_digest, 'hex'),
    c.seen_at,
    CASE WHEN c.chrome_changed AND c.links_changed THEN 'chrome+links'
         WHEN c.chrome_changed THEN 'chrome' ELSE 'links' END,
    'unchanged',
    NULL,
    c.chrome_changed,
    c.links_changed
FROM page_chrome_changes c
JOIN page_snapshots s ON s.url_digest = c.url_digest
WHERE NOT c.content_changed
""",
    "sqlite": """
CREATE VIEW page_history AS
SELECT
    s.url AS url,
    v.host AS host,
    CASE WHEN s.url_digest IS NULL THEN NULL ELSE lower(hex(s.url_digest)) END AS url_digest,
    v.first_seen AS changed_at,
    'content' AS what,
    v.kind AS kind,
    v.version_no AS version_no,
    COALESCE(c.chrome_changed, false) AS chrome_changed,
    COALESCE(c.links_changed, false) AS links_changed
FROM page_versions v
JOIN page_snapshots s ON s.url_digest = v.url_digest
LEFT JOIN page_chrome_changes c
    ON c.url_digest = v.url_digest AND c.seen_at = v.first_seen AND c.content_changed
WHERE v.version_no > 1
UNION ALL
SELECT
    s.url,
    s.host,
    CASE WHEN s.url_digest IS NULL THEN NULL ELSE lower(hex(s.url_digest)) END,
    c.seen_at,
    CASE WHEN c.chrome_changed AND c.links_changed THEN 'chrome+links'
         WHEN c.chrome_changed THEN 'chrome' ELSE 'links' END,
    'unchanged',
    NULL,
    c.chrome_changed,
    c.links_changed
FROM page_chrome_changes c
JOIN page_snapshots s ON s.url_digest = c.url_digest
WHERE NOT c.content_changed
""",
}
