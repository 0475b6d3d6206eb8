"""The analyst views as they are today, as SQL text for Postgres and SQLite.

``page_changes``, ``page_latest``, ``host_activity`` and ``page_flip_flops`` (documented,
column by column, in ``docs/sql.md``). The views exist only in the database: SQLAlchemy's
``metadata`` has the tables, so Alembic's drift check never sees them. The migrations hold
their own frozen copies of the SQL they ran (0004 created the views, 0006 widened
``page_latest``); tests/integration/store/test_frozen_migrations.py checks that upgrading
through every revision ends at exactly these views and comments. The hash-partitioning of
``changewatch db upgrade --partitions`` creates them again from here. A change to a view
here needs a migration that drops and recreates it with its own copy of the new SQL.

Hashes are shown as lower-case hex text (what psql and BI tools can display and filter);
times are the stored UTC timestamps. Relative windows ("last 7 days") are measured from the
database's clock (``now()`` / ``datetime('now')``) at query time.
"""

from __future__ import annotations

__all__ = [
    "HISTORY_VIEW",
    "VIEW_COMMENTS",
    "VIEW_NAMES",
    "comment_statements",
    "create_statements",
    "drop_statements",
    "page_history_statement",
]

#: Created in this order, dropped in the reverse.
VIEW_NAMES = ("page_changes", "page_latest", "host_activity", "page_flip_flops")


def _hex(dialect: str, column: str) -> str:
    if dialect == "postgresql":
        return f"encode({column}, 'hex')"
    # SQLite's hex(NULL) is '', not NULL.
    return f"CASE WHEN {column} IS NULL THEN NULL ELSE lower(hex({column})) END"


def _seconds_between(dialect: str, later: str, earlier: str) -> str:
    if dialect == "postgresql":
        return f"EXTRACT(EPOCH FROM ({later} - {earlier}))::double precision"
    return f"(julianday({later}) - julianday({earlier})) * 86400.0"


def _days_ago(dialect: str, days: int) -> str:
    if dialect == "postgresql":
        return f"now() - interval '{days} days'"
    return f"strftime('%Y-%m-%d %H:%M:%f', 'now', '-{days} days')"


def _simhash_hex(dialect: str, column: str) -> str:
    if dialect == "postgresql":
        return f"lpad(to_hex({column}), 16, '0')"
    return f"printf('%016x', {column})"


def _page_changes(d: str) -> str:
    return f"""
CREATE VIEW page_changes AS
SELECT
    v.id AS version_id,
    s.url AS url,
    v.host AS host,
    {_hex(d, "s.url_digest")} AS url_digest,
    v.first_seen AS changed_at,
    v.kind AS kind,
    v.distance AS distance,
    v.version_no AS version_no,
    v.version_no - 1 AS previous_version_no,
    {_hex(d, "p.content_sha256")} AS previous_content_sha256,
    {_hex(d, "v.content_sha256")} AS content_sha256,
    p.text_length AS previous_text_length,
    v.text_length AS text_length,
    v.reverted_to AS reverted_to
FROM page_versions v
JOIN page_snapshots s ON s.url_digest = v.url_digest
LEFT JOIN page_versions p ON p.url_digest = v.url_digest AND p.version_no = v.version_no - 1
WHERE v.version_no > 1
"""


def _page_latest(d: str) -> str:
    return f"""
CREATE VIEW page_latest AS
SELECT
    s.url AS url,
    s.host AS host,
    {_hex(d, "s.url_digest")} AS url_digest,
    s.first_seen AS first_seen,
    s.last_seen AS last_fetched,
    s.last_changed AS last_changed,
    s.version_count AS current_version_no,
    s.version_count - 1 AS change_count,
    s.fetch_count AS fetch_count,
    {_seconds_between(d, "s.last_seen", "s.last_changed")} AS seconds_unchanged_at_last_fetch,
    {_hex(d, "s.content_sha256")} AS content_sha256,
    {_hex(d, "s.raw_sha256")} AS raw_sha256,
    {_simhash_hex(d, "s.simhash")} AS simhash,
    s.text_length AS text_length,
    s.fingerprint_version AS fingerprint_version,
    s.etag AS etag,
    s.last_modified AS last_modified,
    s.change_count AS fetches_seeing_a_change,
    s.change_rate AS changes_per_day,
    s.due_at AS due_at
FROM page_snapshots s
"""


def _median(d: str) -> tuple[str, str]:
    """(CTEs, join) computing ``median_gap`` per host from the ``gaps`` CTE."""
    if d == "postgresql":
        return (
            "medians AS (SELECT host, percentile_cont(0.5) WITHIN GROUP (ORDER BY gap) "
            "AS median_gap, COUNT(*) AS gap_count FROM gaps GROUP BY host)",
            "LEFT JOIN medians m ON m.host = h.host",
        )
    # SQLite has no percentile function: rank the gaps per host with window functions and
    # average the middle one (odd count) or two (even count).
    return (
        "ranked AS (SELECT host, gap, ROW_NUMBER() OVER (PARTITION BY host ORDER BY gap) AS rn,"
        " COUNT(*) OVER (PARTITION BY host) AS n FROM gaps),\n"
        "medians AS (SELECT host, AVG(gap) AS median_gap, MAX(n) AS gap_count FROM ranked "
        "WHERE rn IN ((n + 1) / 2, (n + 2) / 2) GROUP BY host)",
        "LEFT JOIN medians m ON m.host = h.host",
    )


def _host_activity(d: str) -> str:
    medians, join_medians = _median(d)
    return f"""
CREATE VIEW host_activity AS
WITH hosts AS (
    SELECT host, COUNT(*) AS pages, SUM(version_count - 1) AS changes_ever,
           SUM(fetch_count) AS fetches, MIN(first_seen) AS first_seen,
           MAX(last_seen) AS last_fetched
    FROM page_snapshots GROUP BY host
),
changes AS (
    SELECT v.host AS host,
           SUM(CASE WHEN v.first_seen >= {_days_ago(d, 1)} THEN 1 ELSE 0 END) AS changes_1d,
           SUM(CASE WHEN v.first_seen >= {_days_ago(d, 7)} THEN 1 ELSE 0 END) AS changes_7d,
           SUM(CASE WHEN v.first_seen >= {_days_ago(d, 30)} THEN 1 ELSE 0 END) AS changes_30d,
           MAX(v.first_seen) AS last_change
    FROM page_versions v
    WHERE v.version_no > 1
    GROUP BY v.host
),
gaps AS (
    SELECT v.host AS host, {_seconds_between(d, "v.first_seen", "p.first_seen")} AS gap
    FROM page_versions v
    JOIN page_versions p ON p.url_digest = v.url_digest AND p.version_no = v.version_no - 1
),
{medians}
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
{join_medians}
"""


def _flip_flops(d: str) -> str:
    if d == "postgresql":
        pairs = "string_agg(v.version_no || '->' || v.reverted_to, ', ' ORDER BY v.version_no)"
        source = "page_versions v"
    else:
        # group_concat keeps the order of an ordered subquery (ORDER BY inside
        # group_concat needs SQLite 3.44).
        pairs = "group_concat(v.version_no || '->' || v.reverted_to, ', ')"
        source = (
            "(SELECT * FROM page_versions WHERE reverted_to IS NOT NULL "
            "ORDER BY url_digest, version_no) v"
        )
    return f"""
CREATE VIEW page_flip_flops AS
SELECT
    s.url AS url,
    s.host AS host,
    {_hex(d, "s.url_digest")} AS url_digest,
    COUNT(*) AS reversions,
    COUNT(DISTINCT v.reverted_to) AS versions_returned_to,
    {pairs} AS reverted_versions,
    MIN(v.first_seen) AS first_reverted_at,
    MAX(v.first_seen) AS last_reverted_at,
    s.version_count AS current_version_no,
    s.version_count - 1 AS change_count
FROM {source}
JOIN page_snapshots s ON s.url_digest = v.url_digest
WHERE v.reverted_to IS NOT NULL
GROUP BY s.url_digest, s.url, s.host, s.version_count
"""


_BUILDERS = {
    "page_changes": _page_changes,
    "page_latest": _page_latest,
    "host_activity": _host_activity,
    "page_flip_flops": _flip_flops,
}


def create_statements(dialect: str) -> list[str]:
    """``CREATE VIEW`` for every view, in :data:`VIEW_NAMES` order (``dialect``: sqlite or
    postgresql)."""
    return [_BUILDERS[name](dialect).strip() for name in VIEW_NAMES]


#: The history of content and chrome changes (migration 0009 creates it with this SQL, frozen
#: there; not in :data:`VIEW_NAMES`, whose set migration 0004 creates).
HISTORY_VIEW = "page_history"


def page_history_statement(dialect: str) -> str:
    """``page_history``: one row per change a fetch saw — of the content (``what`` =
    ``'content'``, the version's kind and number, whether the chrome or outlinks changed
    with it) or of the chrome or outlinks alone (``'chrome'``, ``'links'``,
    ``'chrome+links'``; kind ``'unchanged'``, no version)."""
    false = "false"
    return f"""
CREATE VIEW page_history AS
SELECT
    s.url AS url,
    v.host AS host,
    {_hex(dialect, "s.url_digest")} AS url_digest,
    v.first_seen AS changed_at,
    'content' AS what,
    v.kind AS kind,
    v.version_no AS version_no,
    COALESCE(c.chrome_changed, {false}) AS chrome_changed,
    COALESCE(c.links_changed, {false}) AS links_changed
FROM page_versions v
JOIN page_snapshots s ON s.url_digest = v.url_digest
LEFT JOIN page_chrome_changes c
    ON c.url_digest = v.url_digest AND c.seen_at = v.first_seen AND c.content_changed
WHERE v.version_no > 1
UNION ALL
SELECT
    s.url,
    s.host,
    {_hex(dialect, "s.url_digest")},
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
"""


def drop_statements() -> list[str]:
    """``DROP VIEW IF EXISTS`` for every view, last created first."""
    return [f"DROP VIEW IF EXISTS {name}" for name in reversed(VIEW_NAMES)]


#: Comments for each view and its columns (Postgres ``COMMENT ON``; the same text is in
#: docs/sql.md).
VIEW_COMMENTS: dict[str, dict[str, str]] = {
    "page_changes": {
        "": "One row per change of a page (versions 2, 3, …; never the first version).",
        "version_id": "page_versions.id of the new version (join key back to page_versions)",
        "url": "canonical URL as the URL-storage policy kept it (NULL under 'none')",
        "host": "host (and port, if any) of the page",
        "url_digest": "blake2b-128 of the canonical URL, hex",
        "changed_at": "when the new version was first seen (UTC)",
        "kind": "changed (SimHash distance above minor_distance) or minor",
        "distance": "SimHash Hamming distance from the previous version",
        "version_no": "number of the new version (2 for the first change)",
        "previous_version_no": "number of the version this change replaced",
        "previous_content_sha256": "SHA-256 of the previous normalised text, hex "
        "(NULL if that version was pruned)",
        "content_sha256": "SHA-256 of the new normalised text, hex",
        "previous_text_length": "characters of normalised text before (NULL if pruned)",
        "text_length": "characters of normalised text after",
        "reverted_to": "the earlier version_no whose content this change returned to, if any",
    },
    "page_latest": {
        "": "The current state of every stored page.",
        "url": "canonical URL as the URL-storage policy kept it (NULL under 'none')",
        "host": "host (and port, if any) of the page",
        "url_digest": "blake2b-128 of the canonical URL, hex",
        "first_seen": "first fetch of the page (UTC)",
        "last_fetched": "latest fetch of the page (UTC)",
        "last_changed": "when the current version was first seen (UTC)",
        "current_version_no": "number of the current version (versions ever made)",
        "change_count": "changes ever recorded (current_version_no - 1; pruning keeps it)",
        "fetch_count": "should_parse calls for the page",
        "seconds_unchanged_at_last_fetch": "seconds from last_changed to last_fetched",
        "content_sha256": "SHA-256 of the current normalised text, hex",
        "raw_sha256": "SHA-256 of the bytes last fetched, hex",
        "simhash": "64-bit SimHash of the current text, 16 hex digits",
        "text_length": "characters of current normalised text",
        "fingerprint_version": "version of the normalisation and SimHash rules",
        "etag": "ETag of the latest response, if given",
        "last_modified": "Last-Modified of the latest response, if given",
        "fetches_seeing_a_change": "fetches that saw a change (changed or minor): what the "
        "change-rate estimate counts",
        "changes_per_day": "estimated changes per day (Cho & Garcia-Molina, shrunk towards a "
        "prior of 1 a day), updated on every fetch; 1 (the prior) after one fetch",
        "due_at": "when the probability of a change since last_fetched reaches 0.5 (UTC)",
    },
    "host_activity": {
        "": "Per host: pages, fetches, changes ever and in the last 1/7/30 days (from now), "
        "and the median time between consecutive versions of a page.",
        "host": "host (and port, if any)",
        "pages": "stored pages of the host",
        "fetches": "should_parse calls for the host's pages",
        "changes_ever": "changes ever recorded (unaffected by pruning)",
        "changes_last_1_day": "changes first seen in the last 24 hours",
        "changes_last_7_days": "changes first seen in the last 7 days",
        "changes_last_30_days": "changes first seen in the last 30 days",
        "last_change": "the host's most recent change (UTC)",
        "median_seconds_between_changes": "median seconds between consecutive stored "
        "versions of the same page",
        "measured_intervals": "how many such intervals the median is taken over",
        "first_seen": "first fetch of any of the host's pages",
        "last_fetched": "latest fetch of any of the host's pages",
    },
    "page_flip_flops": {
        "": "Pages that returned to an earlier version's content at least once.",
        "url": "canonical URL as the URL-storage policy kept it (NULL under 'none')",
        "host": "host (and port, if any) of the page",
        "url_digest": "blake2b-128 of the canonical URL, hex",
        "reversions": "stored versions that returned to an earlier content",
        "versions_returned_to": "distinct earlier versions returned to",
        "reverted_versions": "each reversion as new->earlier version numbers, in order",
        "first_reverted_at": "first reversion (UTC)",
        "last_reverted_at": "latest reversion (UTC)",
        "current_version_no": "number of the current version",
        "change_count": "changes ever recorded",
    },
}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def comment_statements() -> list[str]:
    """``COMMENT ON VIEW`` / ``COMMENT ON COLUMN`` for every view and its columns (Postgres
    only)."""
    out = []
    for view, comments in VIEW_COMMENTS.items():
        for column, text in comments.items():
            target = f"VIEW {view}" if not column else f"COLUMN {view}.{column}"
            out.append(f"COMMENT ON {target} IS {_quote(text)}")
    return out
