"""page_latest shows each page's change-rate estimate and when it is due.

The view gains ``fetches_seeing_a_change``, ``changes_per_day`` and ``due_at`` (the
scheduling columns migration 0005 added to ``page_snapshots``), so an analyst can ask "what is
due now" or "which pages change daily" from the view alone. Views cannot gain columns in
place on SQLite, and ``CREATE OR REPLACE VIEW`` on Postgres only appends them: the view is
dropped and created again on both (nothing depends on it). Its SQL and comments are frozen
here, as this revision made them and as 0004 had made them (for the downgrade).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

# The frozen view SQL keeps the lines it was written with.
# ruff: noqa: E501

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


#: page_latest as 0004 made it (without the scheduling columns), then as this revision does.
_PAGE_LATEST: dict[str, tuple[str, ...]] = {
    "sqlite": (
        """
CREATE VIEW page_latest AS
SELECT
    s.url AS url,
    s.host AS host,
    CASE WHEN s.url_digest IS NULL THEN NULL ELSE lower(hex(s.url_digest)) END AS url_digest,
    s.first_seen AS first_seen,
    s.last_seen AS last_fetched,
    s.last_changed AS last_changed,
    s.version_count AS current_version_no,
    s.version_count - 1 AS change_count,
    s.fetch_count AS fetch_count,
    (julianday(s.last_seen) - julianday(s.last_changed)) * 86400.0 AS seconds_unchanged_at_last_fetch,
    CASE WHEN s.content_sha256 IS NULL THEN NULL ELSE lower(hex(s.content_sha256)) END AS content_sha256,
    CASE WHEN s.raw_sha256 IS NULL THEN NULL ELSE lower(hex(s.raw_sha256)) END AS raw_sha256,
    printf('%016x', s.simhash) AS simhash,
    s.text_length AS text_length,
    s.fingerprint_version AS fingerprint_version,
    s.etag AS etag,
    s.last_modified AS last_modified
FROM page_snapshots s
""",
        """
CREATE VIEW page_latest AS
SELECT
    s.url AS url,
    s.host AS host,
    CASE WHEN s.url_digest IS NULL THEN NULL ELSE lower(hex(s.url_digest)) END AS url_digest,
    s.first_seen AS first_seen,
    s.last_seen AS last_fetched,
    s.last_changed AS last_changed,
    s.version_count AS current_version_no,
    s.version_count - 1 AS change_count,
    s.fetch_count AS fetch_count,
    (julianday(s.last_seen) - julianday(s.last_changed)) * 86400.0 AS seconds_unchanged_at_last_fetch,
    CASE WHEN s.content_sha256 IS NULL THEN NULL ELSE lower(hex(s.content_sha256)) END AS content_sha256,
    CASE WHEN s.raw_sha256 IS NULL THEN NULL ELSE lower(hex(s.raw_sha256)) END AS raw_sha256,
    printf('%016x', s.simhash) AS simhash,
    s.text_length AS text_length,
    s.fingerprint_version AS fingerprint_version,
    s.etag AS etag,
    s.last_modified AS last_modified,
    s.change_count AS fetches_seeing_a_change,
    s.change_rate AS changes_per_day,
    s.due_at AS due_at
FROM page_snapshots s
""",
    ),
    "postgresql": (
        """
CREATE VIEW page_latest AS
SELECT
    s.url AS url,
    s.host AS host,
    encode(s.url_digest, 'hex') AS url_digest,
    s.first_seen AS first_seen,
    s.last_seen AS last_fetched,
    s.last_changed AS last_changed,
    s.version_count AS current_version_no,
    s.version_count - 1 AS change_count,
    s.fetch_count AS fetch_count,
    EXTRACT(EPOCH FROM (s.last_seen - s.last_changed))::double precision AS seconds_unchanged_at_last_fetch,
    encode(s.content_sha256, 'hex') AS content_sha256,
    encode(s.raw_sha256, 'hex') AS raw_sha256,
    lpad(to_hex(s.simhash), 16, '0') AS simhash,
    s.text_length AS text_length,
    s.fingerprint_version AS fingerprint_version,
    s.etag AS etag,
    s.last_modified AS last_modified
FROM page_snapshots s
""",
        """
CREATE VIEW page_latest AS
SELECT
    s.url AS url,
    s.host AS host,
    encode(s.url_digest, 'hex') AS url_digest,
    s.first_seen AS first_seen,
    s.last_seen AS last_fetched,
    s.last_changed AS last_changed,
    s.version_count AS current_version_no,
    s.version_count - 1 AS change_count,
    s.fetch_count AS fetch_count,
    EXTRACT(EPOCH FROM (s.last_seen - s.last_changed))::double precision AS seconds_unchanged_at_last_fetch,
    encode(s.content_sha256, 'hex') AS content_sha256,
    encode(s.raw_sha256, 'hex') AS raw_sha256,
    lpad(to_hex(s.simhash), 16, '0') AS simhash,
    s.text_length AS text_length,
    s.fingerprint_version AS fingerprint_version,
    s.etag AS etag,
    s.last_modified AS last_modified,
    s.change_count AS fetches_seeing_a_change,
    s.change_rate AS changes_per_day,
    s.due_at AS due_at
FROM page_snapshots s
""",
    ),
}

#: Comments of page_latest and its columns, at 0004 and at this revision (Postgres).
_COMMENTS_0004: tuple[tuple[str, str], ...] = (
    ("VIEW page_latest", "The current state of every stored page."),
    (
        "COLUMN page_latest.url",
        "canonical URL as the URL-storage policy kept it (NULL under 'none')",
    ),
    ("COLUMN page_latest.host", "host (and port, if any) of the page"),
    ("COLUMN page_latest.url_digest", "blake2b-128 of the canonical URL, hex"),
    ("COLUMN page_latest.first_seen", "first fetch of the page (UTC)"),
    ("COLUMN page_latest.last_fetched", "latest fetch of the page (UTC)"),
    ("COLUMN page_latest.last_changed", "when the current version was first seen (UTC)"),
    ("COLUMN page_latest.current_version_no", "number of the current version (versions ever made)"),
    (
        "COLUMN page_latest.change_count",
        "changes ever recorded (current_version_no - 1; pruning keeps it)",
    ),
    ("COLUMN page_latest.fetch_count", "should_parse calls for the page"),
    (
        "COLUMN page_latest.seconds_unchanged_at_last_fetch",
        "seconds from last_changed to last_fetched",
    ),
    ("COLUMN page_latest.content_sha256", "SHA-256 of the current normalised text, hex"),
    ("COLUMN page_latest.raw_sha256", "SHA-256 of the bytes last fetched, hex"),
    ("COLUMN page_latest.simhash", "64-bit SimHash of the current text, 16 hex digits"),
    ("COLUMN page_latest.text_length", "characters of current normalised text"),
    ("COLUMN page_latest.fingerprint_version", "version of the normalisation and SimHash rules"),
    ("COLUMN page_latest.etag", "ETag of the latest response, if given"),
    ("COLUMN page_latest.last_modified", "Last-Modified of the latest response, if given"),
)

_COMMENTS_0006: tuple[tuple[str, str], ...] = (
    ("VIEW page_latest", "The current state of every stored page."),
    (
        "COLUMN page_latest.url",
        "canonical URL as the URL-storage policy kept it (NULL under 'none')",
    ),
    ("COLUMN page_latest.host", "host (and port, if any) of the page"),
    ("COLUMN page_latest.url_digest", "blake2b-128 of the canonical URL, hex"),
    ("COLUMN page_latest.first_seen", "first fetch of the page (UTC)"),
    ("COLUMN page_latest.last_fetched", "latest fetch of the page (UTC)"),
    ("COLUMN page_latest.last_changed", "when the current version was first seen (UTC)"),
    ("COLUMN page_latest.current_version_no", "number of the current version (versions ever made)"),
    (
        "COLUMN page_latest.change_count",
        "changes ever recorded (current_version_no - 1; pruning keeps it)",
    ),
    ("COLUMN page_latest.fetch_count", "should_parse calls for the page"),
    (
        "COLUMN page_latest.seconds_unchanged_at_last_fetch",
        "seconds from last_changed to last_fetched",
    ),
    ("COLUMN page_latest.content_sha256", "SHA-256 of the current normalised text, hex"),
    ("COLUMN page_latest.raw_sha256", "SHA-256 of the bytes last fetched, hex"),
    ("COLUMN page_latest.simhash", "64-bit SimHash of the current text, 16 hex digits"),
    ("COLUMN page_latest.text_length", "characters of current normalised text"),
    ("COLUMN page_latest.fingerprint_version", "version of the normalisation and SimHash rules"),
    ("COLUMN page_latest.etag", "ETag of the latest response, if given"),
    ("COLUMN page_latest.last_modified", "Last-Modified of the latest response, if given"),
    (
        "COLUMN page_latest.fetches_seeing_a_change",
        "fetches that saw a change (changed or minor): what the change-rate estimate counts",
    ),
    (
        "COLUMN page_latest.changes_per_day",
        "estimated changes per day (Cho & Garcia-Molina), updated on every fetch; NULL before a second fetch",
    ),
    (
        "COLUMN page_latest.due_at",
        "when the probability of a change since last_fetched reaches 0.5 (UTC)",
    ),
)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _replace(schedule: bool) -> None:
    dialect = op.get_bind().dialect.name
    op.execute("DROP VIEW IF EXISTS page_latest")
    op.execute(_PAGE_LATEST[dialect][1 if schedule else 0])
    if dialect == "postgresql":
        for target, text in _COMMENTS_0006 if schedule else _COMMENTS_0004:
            op.execute(f"COMMENT ON {target} IS {_quote(text)}")


def upgrade() -> None:
    """page_latest with the scheduling columns."""
    _replace(schedule=True)


def downgrade() -> None:
    """page_latest as migration 0004 made it."""
    _replace(schedule=False)
