"""``due(1000)`` on Postgres with 1,000,000 pages: the due_at index against a full scan.

A scratch database (dropped at the end) is migrated, then filled server-side with
``--rows`` pages over 1,000 hosts: fetch and change counts drawn per page, ``last_seen`` spread
over 30 days; the change rate and ``due_at`` are then computed by the same SQL expressions
the store writes (:mod:`changewatch.store.rates`). Measured in the same run, ``--calls`` times
each, at one ``now``:

* ``due`` — :func:`changewatch.store.schedule.due` (what ``ChangeWatch.due`` runs): per rate
  band the ``limit`` pages fetched longest ago, through ``(rate_band, last_seen)``, then the
  top ``limit`` of those by expected changes;
* ``due, one host`` — the same through ``(host, rate_band, last_seen)``;
* ``full scan`` — ``SnapshotStore.due(..., full_scan=True)``: ``ORDER BY`` the expected
  changes over every row, the exact answer.

Reported: p50/p99 latency, the ratio of p50s, and how many of the full scan's pages the
index answer returns (its recall), and the largest expected changes of a page it left out
over those of the last page it returned (at most √2 by construction).

    python benchmarks/due.py [--quick] [--rows N] [--calls N] [--limit 1000]
        [--pg-url ADMIN_URL]  (or $CHANGEWATCH_BENCH_PG_URL) [--json]
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from argparse import ArgumentParser
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from _common import log, percentile, scratch_database

from changewatch.schedule import DUE_PROBABILITY
from changewatch.store import create_engine, open_store
from changewatch.store.migrate import upgrade
from changewatch.store.rates import AddDays, band_expr, rate_expr
from changewatch.store.tables import page_snapshots

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
NOW = datetime(2026, 3, 1, tzinfo=UTC)
HOSTS = 1000

# Pages: fetched 2..60 times over up to 90 days, last fetched within 30 days of NOW; a page's
# chance to show a change per fetch is drawn per page (skewed towards rarely changing pages).
_FILL = """
SELECT setseed(0.42);
INSERT INTO page_snapshots (
    url_digest, host, url, canon_version, fingerprint_version, raw_sha256, content_sha256,
    simhash, text_length, first_seen, last_seen, last_changed, version_count, fetch_count,
    change_count)
SELECT
    substring(sha256(int8send(g.i)) from 1 for 16),
    'h' || mod(g.i, {hosts}) || '.example',
    'https://h' || mod(g.i, {hosts}) || '.example/page/' || g.i,
    1, 2,
    sha256(int8send(g.i)), sha256(int8send(-g.i)),
    (random() * 9.2e18)::bigint, 1000,
    p.last_seen - make_interval(secs => p.span_days * 86400),
    p.last_seen, p.last_seen,
    1 + p.changes, 1 + p.fetches, p.changes
FROM generate_series(1, {rows}) AS g(i)
CROSS JOIN LATERAL (
    SELECT
        TIMESTAMPTZ '{now}' - make_interval(secs => random() * 30 * 86400) AS last_seen,
        1 + random() * 89 AS span_days,
        n AS fetches,
        floor(n * power(random(), 3))::int AS changes
    FROM (SELECT 1 + floor(random() * 59)::int + (g.i * 0) AS n) AS counts
) AS p;
"""


def fill(engine: sa.Engine, rows: int) -> float:
    """Insert the pages and compute their estimates as the store would; seconds taken."""
    started = time.perf_counter()
    snap = page_snapshots.c
    with engine.begin() as conn:
        for statement in _FILL.format(hosts=HOSTS, rows=rows, now=NOW.isoformat()).split(";"):
            if statement.strip():
                conn.exec_driver_sql(statement)
        rate = rate_expr(snap.fetch_count - 1, snap.change_count, snap.first_seen, snap.last_seen)
        conn.execute(sa.update(page_snapshots).values(change_rate=rate))
        expected = sa.literal(-math.log1p(-DUE_PROBABILITY))
        due_at = AddDays(snap.last_seen, expected / snap.change_rate)
        conn.execute(
            sa.update(page_snapshots).values(due_at=due_at, rate_band=band_expr(snap.change_rate))
        )
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        conn.exec_driver_sql("VACUUM ANALYZE page_snapshots")
    return time.perf_counter() - started


def timed(fn: Callable[[], Any], calls: int) -> tuple[list[float], Any]:
    """Milliseconds of each of ``calls`` calls, and the last result."""
    latencies, result = [], None
    for _ in range(calls):
        started = time.perf_counter()
        result = fn()
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies, result


def main() -> int:
    """Build the store, time the three queries, print a markdown table (or JSON)."""
    parser = ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="50,000 pages, 10 calls")
    parser.add_argument("--rows", type=int)
    parser.add_argument("--calls", type=int)
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--pg-url", default=os.environ.get("CHANGEWATCH_BENCH_PG_URL", PG_ADMIN))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = args.rows or (50_000 if args.quick else 1_000_000)
    calls = args.calls or (10 if args.quick else 30)
    with scratch_database(args.pg_url, "cw_bench_due") as url:
        engine = create_engine(url)
        upgrade(engine)
        fill_s = fill(engine, rows)
        engine.dispose()
        log(f"filled {rows:,} pages in {fill_s:.1f} s")
        store = open_store(url)
        try:
            now = NOW + timedelta(hours=1)
            host = "h7.example"
            indexed, got = timed(lambda: store.due(now, args.limit), calls)
            by_host, got_host = timed(lambda: store.due(now, args.limit, host), calls)
            scan, exact = timed(lambda: store.due(now, args.limit, full_scan=True), calls)
            exact_host = store.due(now, args.limit, host, full_scan=True)
            server = store.engine.dialect.server_version_info
        finally:
            store.close()

    def recall(answer: list[Any], reference: list[Any]) -> float:
        wanted = {p.url_digest for p in reference}
        return len(wanted & {p.url_digest for p in answer}) / max(len(wanted), 1)

    def worst_miss(answer: list[Any], reference: list[Any]) -> float:
        got = {p.url_digest for p in answer}
        missed = [p.expected_changes for p in reference if p.url_digest not in got]
        return max(missed, default=0.0) / max(answer[-1].expected_changes, 1e-12)

    base = statistics.median(scan)
    results = [
        ("due (rate-band index)", indexed, got, exact),
        (f"due, one host ({rows // HOSTS:,} pages)", by_host, got_host, exact_host),
        ("full scan ORDER BY (exact)", scan, exact, exact),
    ]
    table = [
        {
            "method": name,
            "calls": len(lat),
            "p50_ms": statistics.median(lat),
            "p99_ms": percentile(lat, 0.99),
            "p50_vs_full_scan": statistics.median(lat) / base,
            "recall_vs_full_scan": recall(answer, reference),
            "worst_missed_vs_last_returned": worst_miss(answer, reference),
        }
        for name, lat, answer, reference in results
    ]
    meta = {
        "rows": rows,
        "limit": args.limit,
        "fill_s": round(fill_s, 1),
        "postgres": ".".join(map(str, server or ())),
    }
    if args.json:
        print(json.dumps({"meta": meta, "rows": table}, indent=2))
        return 0
    print(
        f"due({args.limit}) on Postgres {meta['postgres']}, {rows:,} pages over {HOSTS:,} hosts "
        f"(filled in {fill_s:.0f} s), {calls} calls each\n"
    )
    print(
        "| query | p50 ms | p99 ms | p50 ÷ full scan | recall of the exact top "
        "| worst left out ÷ last returned |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r in table:
        print(
            f"| {r['method']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
            f"{r['p50_vs_full_scan']:.3f} | {r['recall_vs_full_scan']:.1%} | "
            f"{r['worst_missed_vs_last_returned']:.3f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
