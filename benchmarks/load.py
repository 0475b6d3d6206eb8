"""Load benchmark: W worker processes × N pages through ``should_parse`` on Postgres.

The workload of tests/faults/test_load.py (overlapping URLs from one pool, a random one of
three contents per fetch) at full size: N = 20,000 pages per worker by default. After the run
every store counter is checked against what the workers were told (fetch_count = calls,
version rows = new + changed + minor decisions, contiguous version numbers) and the figures
are printed: throughput (pages/s over the slowest worker's time), p50 and p99 latency of one
``should_parse`` call, and, as the peer measured in the same run, the same pages from one
worker alone on a fresh database, drawing from 1/W of the pool so that each URL is fetched
as often as in the concurrent run (the same mix of decisions) — the ratio says what
concurrency buys (or costs).

    python benchmarks/load.py [--pages 20000] [--workers 8] [--pool 5000] [--quick] [--json]
        [--pg-url ADMIN_URL]  (or $CHANGEWATCH_BENCH_PG_URL)
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from argparse import ArgumentParser
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from faults._history import read_state
from faults._load import LoadReport, check_store, load_worker
from integration._race_workers import run_processes

from changewatch.store.migrate import upgrade

DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def _scratch(admin_url: str) -> tuple[sa.Engine, str, str]:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    name = f"cw_bench_load_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return admin, name, url


def _run(admin_url: str, workers: int, pages: int, pool: int, timeout_s: float) -> LoadReport:
    admin, name, url = _scratch(admin_url)
    try:
        details = run_processes(
            load_worker, [(url, seed, pages, pool) for seed in range(workers)], timeout_s
        )
        report = LoadReport.merge(details)
        check_store(report, read_state(url))
        return report
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _figures(report: LoadReport) -> dict[str, float]:
    return {
        "pages": sum(report.calls.values()),
        "pages_per_s": round(report.throughput, 1),
        "p50_ms": round(report.percentile(0.5) * 1000, 2),
        "p99_ms": round(report.percentile(0.99) * 1000, 2),
        **{f"kind_{k}": v for k, v in sorted(report.kinds.items())},
    }


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20_000, help="pages per worker")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--pool", type=int, default=5_000, help="URLs shared by the workers")
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 workers × 50 pages")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--pg-url", default=os.environ.get("CHANGEWATCH_BENCH_PG_URL"))
    args = parser.parse_args()
    if args.quick:
        args.pages, args.workers, args.pool = 50, 2, 30
    admin_url = args.pg_url or DEFAULT_PG_URL
    timeout_s = max(120.0, args.pages * 0.1)
    many = _run(admin_url, args.workers, args.pages, args.pool, timeout_s)
    # The peer: one worker, the same pages per worker, on a fresh database, over 1/W of the
    # pool, so each URL is fetched as often as in the concurrent run (the same decision mix).
    peer_pool = max(1, args.pool // args.workers)
    one = _run(admin_url, 1, args.pages, peer_pool, timeout_s)
    result = {
        "workers": args.workers,
        "pages_per_worker": args.pages,
        "pool": args.pool,
        "peer_pool": peer_pool,
        "concurrent": _figures(many),
        "single_worker_peer": _figures(one),
        "throughput_ratio_vs_single": round(many.throughput / one.throughput, 2),
        "p99_ratio_vs_single": round(many.percentile(0.99) / one.percentile(0.99), 2),
        "counters_checked": True,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    c, s = result["concurrent"], result["single_worker_peer"]
    print(f"load: {args.workers} workers × {args.pages} pages, pool of {args.pool} URLs")
    print(
        f"  {args.workers} workers: {c['pages_per_s']} pages/s, p50 {c['p50_ms']} ms, "
        f"p99 {c['p99_ms']} ms"
    )
    print(
        f"  1 worker (peer): {s['pages_per_s']} pages/s, p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms"
    )
    print(
        f"  throughput ×{result['throughput_ratio_vs_single']} vs one worker; "
        f"p99 ×{result['p99_ratio_vs_single']}"
    )
    print("  every store counter equals what the workers were told")


if __name__ == "__main__":
    main()
