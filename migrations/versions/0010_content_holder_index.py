"""Content holders in URL-digest order: ``(content_sha256, url_digest)`` on page_snapshots.

A new page's ``duplicate_of`` is the stored page with the same content hash and the smallest
URL digest. With an index on ``content_sha256`` alone, finding it read every stored copy of
the content (a cluster of soft 404s or session-id twins: thousands of rows); the two-column
index answers it by reading the first entry of the content's range (``ORDER BY url_digest
LIMIT n``), whatever the size of the cluster. It replaces the one-column index, whose every
lookup it also serves. The DDL is written out here (no live code imported).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the two-column index, then drop the one-column one it supersedes."""
    op.execute(
        "CREATE INDEX ix_page_snapshots_content_sha256_url_digest "
        "ON page_snapshots (content_sha256, url_digest)"
    )
    op.execute("DROP INDEX ix_page_snapshots_content_sha256")


def downgrade() -> None:
    """Put the one-column index back and drop the two-column one."""
    op.execute("CREATE INDEX ix_page_snapshots_content_sha256 ON page_snapshots (content_sha256)")
    op.execute("DROP INDEX ix_page_snapshots_content_sha256_url_digest")
