"""Bulk-load synthetic history straight into Postgres (for EXPLAIN tests), one statement each."""

from __future__ import annotations

import sqlalchemy as sa

from changewatch.fingerprint import FINGERPRINT_VERSION

# Page i: host h(i % hosts), `versions` versions, version k first seen (versions - k) * 5
# days + (i % 5) hours ago; the current version's row ends at the snapshot's last_seen.
_SNAPSHOTS = """
INSERT INTO page_snapshots (url_digest, host, url, canon_version, fingerprint_version,
    raw_sha256, content_sha256, simhash, text_length, first_seen, last_seen, last_changed,
    version_count, fetch_count)
SELECT decode(md5('page' || i), 'hex'), 'h' || (i % :hosts) || '.bulk.example',
    'https://h' || (i % :hosts) || '.bulk.example/p/' || i, 1, :fpv,
    sha256(('raw' || i)::bytea), sha256(('c' || i || '-' || :versions)::bytea),
    hashtextextended('c' || i || '-' || :versions, 0), 1000,
    now() - make_interval(days => (:versions - 1) * 5, hours => i % 5),
    now() - make_interval(hours => i % 5), now() - make_interval(hours => i % 5),
    :versions, :versions * 3
FROM generate_series(1, :pages) AS i
"""
_VERSIONS = """
INSERT INTO page_versions (url_digest, version_no, kind, distance, raw_sha256, content_sha256,
    simhash, fingerprint_version, text_length, first_seen, last_seen, reverted_to, host)
SELECT decode(md5('page' || i), 'hex'), k, CASE WHEN k = 1 THEN 'new' ELSE 'changed' END,
    CASE WHEN k = 1 THEN NULL ELSE 10 END, sha256(('raw' || i || '-' || k)::bytea),
    sha256(('c' || i || '-' || k)::bytea), hashtextextended('c' || i || '-' || k, 0), :fpv,
    1000, now() - make_interval(days => (:versions - k) * 5, hours => i % 5),
    now() - make_interval(days => (:versions - k) * 5 - 4, hours => i % 5),
    NULL, 'h' || (i % :hosts) || '.bulk.example'
FROM generate_series(1, :pages) AS i, generate_series(1, :versions) AS k
"""


def bulk_load(engine: sa.Engine, pages: int, versions: int, hosts: int) -> None:
    """Insert ``pages`` pages with ``versions`` versions each over ``hosts`` hosts; ANALYZE."""
    params = {"pages": pages, "versions": versions, "hosts": hosts, "fpv": FINGERPRINT_VERSION}
    with engine.begin() as conn:
        conn.execute(sa.text(_SNAPSHOTS), params)
        conn.execute(sa.text(_VERSIONS), params)
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
            "ANALYZE page_snapshots, page_versions"
        )
