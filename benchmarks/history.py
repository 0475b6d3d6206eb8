"""Benchmark the history queries on Postgres with 1,000,000 bulk-loaded versions.

``history(url)`` (``SnapshotStore.history``: every version of one page) and ``page_changes``
for one host over the last 7 days (``changewatch.store.history.changes_for_host``), each
called ``--calls`` times on random pages/hosts; p50 and p99 latencies, beside a peer measured
in the same run: the same calls on a session with ``enable_indexscan`` and
``enable_bitmapscan`` off (sequential scans), reported as the ratio of the two p50s. The
peer is slow, so it makes ``--peer-calls`` calls only.

    python benchmarks/history.py [--quick] [--pages 100000] [--versions 10] [--hosts 100]
        [--calls 1000] [--peer-calls 20] [--partitions N] [--json]
        [--pg-url ADMIN_URL]  (or $CHANGEWATCH_BENCH_PG_URL)

A scratch database is created and dropped at the end. ``--partitions N`` runs on the
hash-partitioned layout of ``changewatch db upgrade --partitions N``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import sys
import time
from argparse import ArgumentParser
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import log, scratch_database
from integration._bulk import bulk_load

from changewatch.store import SnapshotStore, create_engine
from changewatch.store.history import changes_for_host
from changewatch.store.migrate import upgrade
from changewatch.store.partition import partition_tables

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def load(engine: sa.Engine, pages: int, versions: int, hosts: int) -> None:
    """The synthetic history of tests/integration/_bulk.py: hosts h<n>.bench.example, fetch
    times spread over 120 hours so each host has changes in any 7 days."""
    bulk_load(engine, pages, versions, hosts, domain="bench.example", spread_hours=120, vacuum=True)


def seq_scan_engine(url: str) -> sa.Engine:
    """An engine whose sessions cannot use index or bitmap scans: the peer."""
    engine = create_engine(url)

    def no_indexes(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cur:
            cur.execute("SET enable_indexscan = off")
            cur.execute("SET enable_bitmapscan = off")
            cur.execute("SET enable_indexonlyscan = off")
        dbapi_connection.commit()

    event.listen(engine, "connect", no_indexes)
    return engine


def timed(calls: int, one: Callable[[int], int]) -> tuple[list[float], int]:
    """Latencies (ms) of ``calls`` calls of ``one(i)`` after 3 warm-up calls; rows seen."""
    for i in range(3):
        one(i)
    out, rows = [], 0
    for i in range(calls):
        start = time.perf_counter()
        rows += one(i)
        out.append((time.perf_counter() - start) * 1000)
    return out, rows


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(url: str, args: Any) -> list[dict[str, Any]]:
    rng = random.Random(7)
    page_ids = [rng.randrange(1, args.pages + 1) for _ in range(args.calls + 3)]
    host_ids = [rng.randrange(args.hosts) for _ in range(args.calls + 3)]
    results = []
    for plan, engine in (
        ("indexes", create_engine(url)),
        ("seq scan (peer)", seq_scan_engine(url)),
    ):
        store = SnapshotStore(engine, url)
        calls = args.calls if plan == "indexes" else args.peer_calls

        def history(i: int, store: SnapshotStore = store) -> int:
            digest = hashlib.md5(f"page{page_ids[i]}".encode()).digest()
            found = store.history(digest)
            assert len(found) == args.versions
            return len(found)

        def host_changes(i: int, engine: sa.Engine = engine) -> int:
            since = datetime.now(UTC) - timedelta(days=7)
            with engine.connect() as conn:
                return len(changes_for_host(conn, f"h{host_ids[i]}.bench.example", since))

        try:
            for query, one in (("history(url)", history), ("page_changes host 7d", host_changes)):
                log(f"timing {query} with {plan}: {calls} calls")
                lat, rows = timed(calls, one)
                results.append(
                    {
                        "query": query,
                        "plan": plan,
                        "calls": calls,
                        "rows_per_call": rows / calls,
                        "p50_ms": statistics.median(lat),
                        "p99_ms": pct(lat, 0.99),
                    }
                )
        finally:
            engine.dispose()
    for row in results:
        peer = next(r for r in results if r["query"] == row["query"] and r["plan"] != "indexes")
        row["peer_p50_over_this_p50"] = peer["p50_ms"] / row["p50_ms"]
    return results


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--versions", type=int, default=10, help="versions per page")
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--peer-calls", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=None)
    ap.add_argument("--pg-url", default=os.environ.get("CHANGEWATCH_BENCH_PG_URL", PG_ADMIN))
    ap.add_argument("--quick", action="store_true", help="20,000 versions, 50 calls")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.pages, args.hosts, args.calls, args.peer_calls = 2000, 20, 50, 10
    total = args.pages * args.versions
    with scratch_database(args.pg_url, "cw_bench_hist") as url:
        engine = create_engine(url)
        try:
            upgrade(engine)
            if args.partitions:
                partition_tables(engine, args.partitions)
            log(f"bulk-loading {args.pages:,} pages × {args.versions} = {total:,} versions")
            start = time.perf_counter()
            load(engine, args.pages, args.versions, args.hosts)
            log(f"loaded in {time.perf_counter() - start:.1f} s")
        finally:
            engine.dispose()
        rows = measure(url, args)
    meta = {
        "versions": total,
        "pages": args.pages,
        "hosts": args.hosts,
        "partitions": args.partitions or 0,
    }
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
        return 0
    print(
        f"Postgres, {total:,} versions ({args.pages:,} pages × {args.versions}, "
        f"{args.hosts} hosts, partitions: {args.partitions or 'none'}); peer = the same calls "
        "with index and bitmap scans disabled\n"
    )
    print("| query | plan | calls | rows/call | p50 ms | p99 ms | seq-scan p50 ÷ this p50 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['query']} | {r['plan']} | {r['calls']} | {r['rows_per_call']:.0f} | "
            f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['peer_p50_over_this_p50']:.1f}× |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
