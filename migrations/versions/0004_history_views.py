"""Flip-flop marker, a time index and the analyst views (page_changes, page_latest, …).

Adds ``page_versions.reverted_to`` (the earlier version a change returned to),
``page_versions.host`` (the page's host, copied from ``page_snapshots`` and backfilled here,
so one host's changes over a time range are one range scan of the new index
``ix_page_versions_host_first_seen``), Postgres comments on the columns that had none, and the
analyst views on SQLite and Postgres (documented in docs/sql.md). The views' SQL and every
comment are frozen here as this revision ran them: :mod:`changewatch.store.views` has the
live views, and tests/integration/store/test_frozen_migrations.py checks that the revisions
together make them. A later migration that changes a view drops and recreates it with its own
SQL.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

# The frozen view SQL keeps the lines it was written with.
# ruff: noqa: E501

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


#: Column comments added or reworded here (as they were at this revision).
_COMMENTS: tuple[tuple[str, str], ...] = (
    ("page_snapshots.first_seen", "first fetch of the page"),
    ("page_snapshots.last_seen", "latest fetch of the page"),
    (
        "page_snapshots.version_count",
        "versions ever made: the version_no of the current version (pruning old "
        "page_versions rows keeps it)",
    ),
    ("page_versions.id", "surrogate key of the version row"),
    ("page_versions.url_digest", "the page (page_snapshots.url_digest)"),
    ("page_versions.raw_sha256", "SHA-256 of the page bytes when this version was first seen"),
    ("page_versions.content_sha256", "SHA-256 of the normalised visible text"),
    ("page_versions.simhash", "64-bit SimHash of the normalised text, stored as signed BIGINT"),
    ("page_versions.fingerprint_version", "version of the normalisation and SimHash rules"),
    ("page_versions.text_length", "characters of normalised text"),
    ("page_versions.first_seen", "first fetch that saw this version (when the change was seen)"),
)
_HOST_COMMENT = (
    "host of the page, as in page_snapshots.host (copied so one host's changes over a time "
    "range are one index range scan)"
)
_REVERTED_TO_COMMENT = (
    "version_no of an earlier version of the page with the same content_sha256 (a "
    "flip-flop), else NULL"
)
#: The comment page_snapshots.version_count had before this revision.
_OLD_VERSION_COUNT_COMMENT = "number of page_versions rows of this page"
#: Created in this order, dropped in the reverse.
_VIEW_NAMES = ("page_changes", "page_latest", "host_activity", "page_flip_flops")

_VIEWS: dict[str, tuple[str, ...]] = {
    "sqlite": (
        """
CREATE VIEW page_changes AS
SELECT
    v.id AS version_id,
    s.url AS url,
    v.host AS host,
    CASE WHEN s.url_digest IS NULL THEN NULL ELSE lower(hex(s.url_digest)) END AS url_digest,
    v.first_seen AS changed_at,
    v.kind AS kind,
    v.distance AS distance,
    v.version_no AS version_no,
    v.version_no - 1 AS previous_version_no,
    CASE WHEN p.content_sha256 IS NULL THEN NULL ELSE lower(hex(p.content_sha256)) END AS previous_content_sha256,
    CASE WHEN v.content_sha256 IS NULL THEN NULL ELSE lower(hex(v.content_sha256)) END AS content_sha256,
    p.text_length AS previous_text_length,
    v.text_length AS text_length,
    v.reverted_to AS reverted_to
FROM page_versions v
JOIN page_snapshots s ON s.url_digest = v.url_digest
LEFT JOIN page_versions p ON p.url_digest = v.url_digest AND p.version_no = v.version_no - 1
WHERE v.version_no > 1
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
    s.last_modified AS last_modified
FROM page_snapshots s
""",
        """
CREATE VIEW host_activity AS
WITH hosts AS (
    SELECT host, COUNT(*) AS pages, SUM(version_count - 1) AS changes_ever,
           SUM(fetch_count) AS fetches, MIN(first_seen) AS first_seen,
           MAX(last_seen) AS last_fetched
    FROM page_snapshots GROUP BY host
),
changes AS (
    SELECT v.host AS host,
           SUM(CASE WHEN v.first_seen >= strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 days') THEN 1 ELSE 0 END) AS changes_1d,
           SUM(CASE WHEN v.first_seen >= strftime('%Y-%m-%d %H:%M:%f', 'now', '-7 days') THEN 1 ELSE 0 END) AS changes_7d,
           SUM(CASE WHEN v.first_seen >= strftime('%Y-%m-%d %H:%M:%f', 'now', '-30 days') THEN 1 ELSE 0 END) AS changes_30d,
           MAX(v.first_seen) AS last_change
    FROM page_versions v
    WHERE v.version_no > 1
    GROUP BY v.host
),
gaps AS (
    SELECT v.host AS host, (julianday(v.first_seen) - julianday(p.first_seen)) * 86400.0 AS gap
    FROM page_versions v
    JOIN page_versions p ON p.url_digest = v.url_digest AND p.version_no = v.version_no - 1
),
ranked AS (SELECT host, gap, ROW_NUMBER() OVER (PARTITION BY host ORDER BY gap) AS rn, COUNT(*) OVER (PARTITION BY host) AS n FROM gaps),
medians AS (SELECT host, AVG(gap) AS median_gap, MAX(n) AS gap_count FROM ranked WHERE rn IN ((n + 1) / 2, (n + 2) / 2) GROUP BY host)
SELECT
    h.host AS host,
    h.pages AS pages,
    h.fetches AS fetches,
    h.changes_ever AS changes_ever,
    COALESCE(c.changes_1d, 0) AS changes_last_1_day,
    COALESCE(c.changes_7d, 0) AS changes_last_7_days,
    COALESCE(c.changes_30d, 0) AS changes_last_30_days,
    c.last_change AS last_change,
    m.median_gap AS median_seconds_between_changes,
    COALESCE(m.gap_count, 0) AS measured_intervals,
    h.first_seen AS first_seen,
    h.last_fetched AS last_fetched
FROM hosts h
LEFT JOIN changes c ON c.host = h.host
LEFT JOIN medians m ON m.host = h.host
""",
        """
CREATE VIEW page_flip_flops AS
SELECT
    s.url AS url,
    s.host AS host,
    CASE WHEN s.url_digest IS NULL THEN NULL ELSE lower(hex(s.url_digest)) END AS url_digest,
    COUNT(*) AS reversions,
    COUNT(DISTINCT v.reverted_to) AS versions_returned_to,
    group_concat(v.version_no || '->' || v.reverted_to, ', ') AS reverted_versions,
    MIN(v.first_seen) AS first_reverted_at,
    MAX(v.first_seen) AS last_reverted_at,
    s.version_count AS current_version_no,
    s.version_count - 1 AS change_count
FROM (SELECT * FROM page_versions WHERE reverted_to IS NOT NULL ORDER BY url_digest, version_no) v
JOIN page_snapshots s ON s.url_digest = v.url_digest
WHERE v.reverted_to IS NOT NULL
GROUP BY s.url_digest, s.url, s.host, s.version_count
""",
    ),
    "postgresql": (
        """
CREATE VIEW page_changes AS
SELECT
    v.id AS version_id,
    s.url AS url,
    v.host AS host,
    encode(s.url_digest, 'hex') AS url_digest,
    v.first_seen AS changed_at,
    v.kind AS kind,
    v.distance AS distance,
    v.version_no AS version_no,
    v.version_no - 1 AS previous_version_no,
    encode(p.content_sha256, 'hex') AS previous_content_sha256,
    encode(v.content_sha256, 'hex') AS content_sha256,
    p.text_length AS previous_text_length,
    v.text_length AS text_length,
    v.reverted_to AS reverted_to
FROM page_versions v
JOIN page_snapshots s ON s.url_digest = v.url_digest
LEFT JOIN page_versions p ON p.url_digest = v.url_digest AND p.version_no = v.version_no - 1
WHERE v.version_no > 1
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
    s.last_modified AS last_modified
FROM page_snapshots s
""",
        """
CREATE VIEW host_activity AS
WITH hosts AS (
    SELECT host, COUNT(*) AS pages, SUM(version_count - 1) AS changes_ever,
           SUM(fetch_count) AS fetches, MIN(first_seen) AS first_seen,
           MAX(last_seen) AS last_fetched
    FROM page_snapshots GROUP BY host
),
changes AS (
    SELECT v.host AS host,
           SUM(CASE WHEN v.first_seen >= now() - interval '1 days' THEN 1 ELSE 0 END) AS changes_1d,
           SUM(CASE WHEN v.first_seen >= now() - interval '7 days' THEN 1 ELSE 0 END) AS changes_7d,
           SUM(CASE WHEN v.first_seen >= now() - interval '30 days' THEN 1 ELSE 0 END) AS changes_30d,
           MAX(v.first_seen) AS last_change
    FROM page_versions v
    WHERE v.version_no > 1
    GROUP BY v.host
),
gaps AS (
    SELECT v.host AS host, EXTRACT(EPOCH FROM (v.first_seen - p.first_seen))::double precision AS gap
    FROM page_versions v
    JOIN page_versions p ON p.url_digest = v.url_digest AND p.version_no = v.version_no - 1
),
medians AS (SELECT host, percentile_cont(0.5) WITHIN GROUP (ORDER BY gap) AS median_gap, COUNT(*) AS gap_count FROM gaps GROUP BY host)
SELECT
    h.host AS host,
    h.pages AS pages,
    h.fetches AS fetches,
    h.changes_ever AS changes_ever,
    COALESCE(c.changes_1d, 0) AS changes_last_1_day,
    COALESCE(c.changes_7d, 0) AS changes_last_7_days,
    COALESCE(c.changes_30d, 0) AS changes_last_30_days,
    c.last_change AS last_change,
    m.median_gap AS median_seconds_between_changes,
    COALESCE(m.gap_count, 0) AS measured_intervals,
    h.first_seen AS first_seen,
    h.last_fetched AS last_fetched
FROM hosts h
LEFT JOIN changes c ON c.host = h.host
LEFT JOIN medians m ON m.host = h.host
""",
        """
CREATE VIEW page_flip_flops AS
SELECT
    s.url AS url,
    s.host AS host,
    encode(s.url_digest, 'hex') AS url_digest,
    COUNT(*) AS reversions,
    COUNT(DISTINCT v.reverted_to) AS versions_returned_to,
    string_agg(v.version_no || '->' || v.reverted_to, ', ' ORDER BY v.version_no) AS reverted_versions,
    MIN(v.first_seen) AS first_reverted_at,
    MAX(v.first_seen) AS last_reverted_at,
    s.version_count AS current_version_no,
    s.version_count - 1 AS change_count
FROM page_versions v
JOIN page_snapshots s ON s.url_digest = v.url_digest
WHERE v.reverted_to IS NOT NULL
GROUP BY s.url_digest, s.url, s.host, s.version_count
""",
    ),
}

_VIEW_COMMENTS: tuple[tuple[str, str], ...] = (
    (
        "VIEW page_changes",
        "One row per change of a page (versions 2, 3, …; never the first version).",
    ),
    (
        "COLUMN page_changes.version_id",
        "page_versions.id of the new version (join key back to page_versions)",
    ),
    (
        "COLUMN page_changes.url",
        "canonical URL as the URL-storage policy kept it (NULL under 'none')",
    ),
    ("COLUMN page_changes.host", "host (and port, if any) of the page"),
    ("COLUMN page_changes.url_digest", "blake2b-128 of the canonical URL, hex"),
    ("COLUMN page_changes.changed_at", "when the new version was first seen (UTC)"),
    ("COLUMN page_changes.kind", "changed (SimHash distance above minor_distance) or minor"),
    ("COLUMN page_changes.distance", "SimHash Hamming distance from the previous version"),
    ("COLUMN page_changes.version_no", "number of the new version (2 for the first change)"),
    ("COLUMN page_changes.previous_version_no", "number of the version this change replaced"),
    (
        "COLUMN page_changes.previous_content_sha256",
        "SHA-256 of the previous normalised text, hex (NULL if that version was pruned)",
    ),
    ("COLUMN page_changes.content_sha256", "SHA-256 of the new normalised text, hex"),
    (
        "COLUMN page_changes.previous_text_length",
        "characters of normalised text before (NULL if pruned)",
    ),
    ("COLUMN page_changes.text_length", "characters of normalised text after"),
    (
        "COLUMN page_changes.reverted_to",
        "the earlier version_no whose content this change returned to, if any",
    ),
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
        "VIEW host_activity",
        "Per host: pages, fetches, changes ever and in the last 1/7/30 days (from now), and the median time between consecutive versions of a page.",
    ),
    ("COLUMN host_activity.host", "host (and port, if any)"),
    ("COLUMN host_activity.pages", "stored pages of the host"),
    ("COLUMN host_activity.fetches", "should_parse calls for the host's pages"),
    ("COLUMN host_activity.changes_ever", "changes ever recorded (unaffected by pruning)"),
    ("COLUMN host_activity.changes_last_1_day", "changes first seen in the last 24 hours"),
    ("COLUMN host_activity.changes_last_7_days", "changes first seen in the last 7 days"),
    ("COLUMN host_activity.changes_last_30_days", "changes first seen in the last 30 days"),
    ("COLUMN host_activity.last_change", "the host's most recent change (UTC)"),
    (
        "COLUMN host_activity.median_seconds_between_changes",
        "median seconds between consecutive stored versions of the same page",
    ),
    ("COLUMN host_activity.measured_intervals", "how many such intervals the median is taken over"),
    ("COLUMN host_activity.first_seen", "first fetch of any of the host's pages"),
    ("COLUMN host_activity.last_fetched", "latest fetch of any of the host's pages"),
    ("VIEW page_flip_flops", "Pages that returned to an earlier version's content at least once."),
    (
        "COLUMN page_flip_flops.url",
        "canonical URL as the URL-storage policy kept it (NULL under 'none')",
    ),
    ("COLUMN page_flip_flops.host", "host (and port, if any) of the page"),
    ("COLUMN page_flip_flops.url_digest", "blake2b-128 of the canonical URL, hex"),
    ("COLUMN page_flip_flops.reversions", "stored versions that returned to an earlier content"),
    ("COLUMN page_flip_flops.versions_returned_to", "distinct earlier versions returned to"),
    (
        "COLUMN page_flip_flops.reverted_versions",
        "each reversion as new->earlier version numbers, in order",
    ),
    ("COLUMN page_flip_flops.first_reverted_at", "first reversion (UTC)"),
    ("COLUMN page_flip_flops.last_reverted_at", "latest reversion (UTC)"),
    ("COLUMN page_flip_flops.current_version_no", "number of the current version"),
    ("COLUMN page_flip_flops.change_count", "changes ever recorded"),
)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def upgrade() -> None:
    """Add reverted_to and the time index, comment the columns (Postgres), create the views."""
    op.add_column(
        "page_versions",
        sa.Column(
            "reverted_to",
            sa.Integer(),
            nullable=True,
            comment=_REVERTED_TO_COMMENT,
        ),
    )
    op.add_column(
        "page_versions",
        sa.Column("host", sa.String(300), nullable=True, comment=_HOST_COMMENT),
    )
    op.execute(
        "UPDATE page_versions SET host = (SELECT s.host FROM page_snapshots s "
        "WHERE s.url_digest = page_versions.url_digest)"
    )
    op.create_index("ix_page_versions_host_first_seen", "page_versions", ["host", "first_seen"])
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        for target, text in _COMMENTS:
            op.execute(f"COMMENT ON COLUMN {target} IS {_quote(text)}")
    for statement in _VIEWS[dialect]:
        op.execute(statement)
    if dialect == "postgresql":
        for target, text in _VIEW_COMMENTS:
            op.execute(f"COMMENT ON {target} IS {_quote(text)}")


def downgrade() -> None:
    """Drop the views, the comments added here, the index and the column."""
    for name in reversed(_VIEW_NAMES):
        op.execute(f"DROP VIEW IF EXISTS {name}")
    if op.get_bind().dialect.name == "postgresql":
        for target, _text in _COMMENTS:
            if target == "page_snapshots.version_count":
                op.execute(f"COMMENT ON COLUMN {target} IS {_quote(_OLD_VERSION_COUNT_COMMENT)}")
            else:
                op.execute(f"COMMENT ON COLUMN {target} IS NULL")
    op.drop_index("ix_page_versions_host_first_seen", table_name="page_versions")
    op.drop_column("page_versions", "host")
    op.drop_column("page_versions", "reverted_to")
