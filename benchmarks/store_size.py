"""Measure what a stored page costs on disk in Postgres: bytes per page in each table and index.

A scratch database (dropped at the end) is migrated to head, optionally hash-partitioned
(``--partitions``), and bulk-loaded with ``--pages`` pages of ``--versions`` versions each
(``tests/integration/_bulk.py``: URLs like ``https://h12.bulk.example/p/123456``, 1,000
hosts, the version rows' hashes and SimHashes distinct), then ``VACUUM ANALYZE``. Printed:
``pg_relation_size`` of every table and index of ``page_snapshots`` and ``page_versions``
(summed over partitions), per stored page, and the totals (``pg_total_relation_size``).

    python benchmarks/store_size.py [--pages 200000] [--versions 2] [--partitions 0]
        [--pg-url ADMIN_URL]

The bulk rows have no chrome or outlinks hashes (NULL: fingerprint version 4 stores 2 × 32
bytes more per snapshot) and no ETag or Last-Modified.
"""

from __future__ import annotations

import os
import sys
from argparse import ArgumentParser
from pathlib import Path

import sqlalchemy as sa
from _common import log, scratch_database

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from integration._bulk import bulk_load

from changewatch.store import create_engine
from changewatch.store.migrate import upgrade
from changewatch.store.partition import partition_tables

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
# Every relation of a table and its partitions: the heap (with TOAST) and each index, named
# as on the parent (a partition's index is counted under its parent index).
_SIZES = """
WITH parts AS (
    SELECT c.oid, COALESCE(p.relname, c.relname) AS parent
    FROM pg_class c
    LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
    LEFT JOIN pg_class p ON p.oid = i.inhparent
    WHERE c.relkind IN ('r', 'p')
      AND COALESCE(p.relname, c.relname) IN ('page_snapshots', 'page_versions')
)
SELECT parts.parent, parts.parent || ' (heap + TOAST)', sum(pg_table_size(parts.oid))
FROM parts GROUP BY parts.parent
UNION ALL
SELECT parts.parent, COALESCE(pi.relname, ic.relname), sum(pg_relation_size(ic.oid))
FROM parts
JOIN pg_index x ON x.indrelid = parts.oid
JOIN pg_class ic ON ic.oid = x.indexrelid
LEFT JOIN pg_inherits ii ON ii.inhrelid = ic.oid
LEFT JOIN pg_class pi ON pi.oid = ii.inhparent
GROUP BY parts.parent, COALESCE(pi.relname, ic.relname)
ORDER BY 1, 3 DESC
"""


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=200_000)
    ap.add_argument("--versions", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=0, help="hash partitions (0: none)")
    ap.add_argument("--pg-url", default=os.environ.get("CHANGEWATCH_BENCH_PG_URL", PG_ADMIN))
    args = ap.parse_args(argv)
    with scratch_database(args.pg_url, "changewatch_bench_size") as url:
        engine = create_engine(url)
        try:
            upgrade(engine)
            if args.partitions:
                partition_tables(engine, args.partitions)
            log(f"loading {args.pages:,} pages × {args.versions} versions")
            bulk_load(engine, args.pages, args.versions, 1000, vacuum=True)
            with engine.connect() as conn:
                rows = conn.execute(sa.text(_SIZES)).all()
        finally:
            engine.dispose()
    print(
        f"{args.pages:,} pages × {args.versions} versions, "
        f"{args.partitions or 'no'} partitions; bytes per stored page\n"
    )
    print("| table | relation | MB | bytes/page |")
    print("|---|---|---:|---:|")
    totals: dict[str, int] = {}
    for table, name, value in rows:
        size = int(value)
        totals[table] = totals.get(table, 0) + size
        print(f"| {table} | {name} | {size / 1e6:,.1f} | {size / args.pages:,.1f} |")
    for table, size in totals.items():
        print(f"| {table} | **total** | {size / 1e6:,.1f} | {size / args.pages:,.1f} |")
    whole = sum(totals.values())
    print(f"| both | **total** | {whole / 1e6:,.1f} | {whole / args.pages:,.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
