"""Chrome and outlinks hashes on page_snapshots (fingerprint version 4).

Version 4 hashes a page's main content apart from its chrome (menus, banners, footers) and
its set of outlinks. ``chrome_sha256`` and ``links_sha256`` keep the last fetch's, so that a
chrome-only or links-only change — ``unchanged`` for the crawler — is told apart
(``Decision.chrome_changed``/``links_changed``) and lands where an analyst sees it in SQL:
``chrome_changed_at`` and ``links_changed_at`` are when a fetch last saw each change. All
four are NULL on rows written before (nothing is known to compare with; the next fetch
fills them). Columns are added with ``op.add_column`` only (no table rebuild: SQLite views
depend on ``page_snapshots``).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The live UTCDateTime of changewatch.store.tables, as DDL (frozen here).
_UTC_DATETIME = sa.DateTime(timezone=True)

_COLUMNS = (
    (
        "chrome_sha256",
        sa.LargeBinary(32),
        "SHA-256 of the normalised chrome text (menus, banners, footers); NULL: unknown",
    ),
    (
        "links_sha256",
        sa.LargeBinary(32),
        "SHA-256 of the page's canonicalised outlinks; NULL: unknown",
    ),
    (
        "chrome_changed_at",
        _UTC_DATETIME,
        "when a fetch last saw the chrome change (the content may not have)",
    ),
    ("links_changed_at", _UTC_DATETIME, "when a fetch last saw the set of outlinks change"),
)


def upgrade() -> None:
    """Add the four nullable columns."""
    for name, type_, comment in _COLUMNS:
        op.add_column("page_snapshots", sa.Column(name, type_, nullable=True, comment=comment))


def downgrade() -> None:
    """Drop them again."""
    for name, _type, _comment in reversed(_COLUMNS):
        op.drop_column("page_snapshots", name)
