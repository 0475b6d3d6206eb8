"""Bulk-load synthetic history straight into Postgres, one statement each (for the EXPLAIN
tests, and for ``benchmarks/history.py``, which imports this module)."""

from __future__ import annotations

import sqlalchemy as sa

from changewatch.fingerprint import FINGERPRINT_VERSION

# Page i: host h(i % hosts).DOMAIN, `versions` versions, version k first seen (versions - k) * 5
# days + (i % spread) hours ago; the current version's row ends at the snapshot's last_seen.
_SNAPSHOTS = """
INSERT INTO page_snapshots (url_digest, host, url, canon_version, fingerprint_version,
    raw_sha256, content_sha256, simhash, text_length, first_seen, last_seen, last_changed,
    version_count, fetch_count)
SELECT decode(md5('page' || i), 'hex'), 'h' || (i % :hosts) || '.' || :domain,
    'https://h' || (i % :hosts) || '.' || :domain || '/p/' || i, 1, :fpv,
    sha256(('raw' || i)::bytea), sha256(('c' || i || '-' || :versions)::bytea),
    hashtextextended('c' || i || '-' || :versions, 0), 1000,
    now() - make_interval(days => (:versions - 1) * 5, hours => i % :spread),
    now() - make_interval(hours => i % :spread), now() - make_interval(hours => i % :spread),
    :versions, :versions * 3
FROM generate_series(1, :pages) AS i
"""
_VERSIONS = """
INSERT INTO page_versions (url_digest, version_no, kind, distance, raw_sha256, content_sha256,
    simhash, fingerprint_version, text_length, first_seen, last_seen, reverted_to, host)
SELECT decode(md5('page' || i), 'hex'), k, CASE WHEN k = 1 THEN 'new' ELSE 'changed' END,
    CASE WHEN k = 1 THEN NULL ELSE 10 END, sha256(('raw' || i || '-' || k)::bytea),
    sha256(('c' || i || '-' || k)::bytea), hashtextextended('c' || i || '-' || k, 0), :fpv,
    1000, now() - make_interval(days => (:versions - k) * 5, hours => i % :spread),
    now() - make_interval(days => (:versions - k) * 5 - 4, hours => i % :spread),
    NULL, 'h' || (i % :hosts) || '.' || :domain
FROM generate_series(1, :pages) AS i, generate_series(1, :versions) AS k
"""


def bulk_load(
    engine: sa.Engine,
    pages: int,
    versions: int,
    hosts: int,
    *,
    domain: str = "bulk.example",
    spread_hours: int = 5,
    vacuum: bool = False,
) -> None:
    """Insert ``pages`` pages with ``versions`` versions each over ``hosts`` hosts named
    ``h<n>.<domain>``, fetch times spread over ``spread_hours`` hours; ANALYZE (and VACUUM)."""
    params = {
        "pages": pages,
        "versions": versions,
        "hosts": hosts,
        "fpv": FINGERPRINT_VERSION,
        "domain": domain,
        "spread": spread_hours,
    }
    with engine.begin() as conn:
        conn.execute(sa.text(_SNAPSHOTS), params)
        conn.execute(sa.text(_VERSIONS), params)
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
            f"{'VACUUM ' if vacuum else ''}ANALYZE page_snapshots, page_versions"
        )
