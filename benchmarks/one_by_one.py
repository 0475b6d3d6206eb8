"""Benchmark one-by-one unchanged ``should_parse`` against a bare single-row UPSERT.

The Scrapy middleware's path: one page at a time, its bytes unchanged since the last fetch
(one autocommitted ``UPDATE … RETURNING`` in changewatch). The peer is the least a store
could do per fetch: a bare autocommitted single-row ``INSERT … ON CONFLICT DO UPDATE`` of
``(url_digest, raw_sha256, last_seen, fetch_count)`` — through psycopg on Postgres (its
default cursor, which prepares a statement run five times), through sqlite3 on SQLite (a
file with the store's pragmas: WAL, synchronous=NORMAL). Both run in the same database
server (Postgres: one scratch database, dropped at the end), interleaved, median of
``--repeats`` passes; every figure is a ratio to the bare UPSERT.

Two more rows say where the rest goes: "UPSERT + sha256(body)" adds the hash of the page
that ``should_parse`` must compute to know it is unchanged; "touch statement alone" is
changewatch's statement with its arguments computed in advance (the server's share:
the UPDATE also moves ``last_seen``, the rate and ``due_at``, so it rewrites the row's
entries in the indexes on them — on Postgres, not being a HOT update, in every index of
page_snapshots — where the peer's row has one index).

    python benchmarks/one_by_one.py [--pages 40] [--copies 10] [--repeats 7] [--max-kib N]
        [--synchronous-commit on|off] [--no-postgres] [--pg-url ADMIN_URL] [--quick]

``--synchronous-commit off`` (for both sides) takes the WAL flush out of every commit, which
on a busy shared disk otherwise dominates both and hides the client's share.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from argparse import ArgumentParser, Namespace
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from _common import log, real_pages, scratch_database
from sqlalchemy.engine import make_url

from changewatch import ChangeWatch
from changewatch.fingerprint import FINGERPRINT_VERSION
from changewatch.store import open_store

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
_TABLE = "CREATE TABLE bare_upsert (url_digest {b} PRIMARY KEY, raw_sha256 {b} NOT NULL, "
_TABLE += "last_seen {t} NOT NULL, fetch_count BIGINT NOT NULL)"
_UPSERT = (
    "INSERT INTO bare_upsert (url_digest, raw_sha256, last_seen, fetch_count) "
    "VALUES ({p}, {p}, {p}, 1) ON CONFLICT (url_digest) DO UPDATE "
    "SET last_seen = excluded.last_seen, fetch_count = bare_upsert.fetch_count + 1"
)
Case = Callable[[], float]


def cases(
    watch: ChangeWatch, items: list[tuple[str, bytes]], upsert: Callable[..., Any]
) -> dict[str, Case]:
    """The figures of one backend: each a pass over ``items``, returning seconds."""
    ds = watch.should_parse_many(items)
    digests = [d.url_digest for d in ds]
    raws = [hashlib.sha256(html).digest() for _, html in items]
    for digest, raw in zip(digests, raws, strict=True):
        upsert(digest, raw, datetime.now(UTC))
    store = watch.store

    def should_parse() -> float:
        start = time.perf_counter()
        for url, html in items:
            watch.should_parse(url, html)
        return time.perf_counter() - start

    def bare() -> float:
        now = datetime.now(UTC)
        start = time.perf_counter()
        for digest, raw in zip(digests, raws, strict=True):
            upsert(digest, raw, now)
        return time.perf_counter() - start

    def bare_hash() -> float:
        now = datetime.now(UTC)
        start = time.perf_counter()
        for digest, (_url, html) in zip(digests, items, strict=True):
            upsert(digest, hashlib.sha256(html).digest(), now)
        return time.perf_counter() - start

    def statement() -> float:
        now = datetime.now(UTC)
        start = time.perf_counter()
        for digest, raw in zip(digests, raws, strict=True):
            store.touch_unchanged(now, digest, raw, FINGERPRINT_VERSION)
        return time.perf_counter() - start

    return {
        "bare UPSERT (peer)": bare,
        "should_parse, unchanged": should_parse,
        "UPSERT + sha256(body)": bare_hash,
        "touch statement alone": statement,
    }


def run_cases(backend: str, named: dict[str, Case], n: int, repeats: int) -> dict[str, float]:
    rates: dict[str, list[float]] = {name: [] for name in named}
    for repeat in range(repeats + 1):  # repeat 0 warms up; cases interleaved
        log(f"{backend}: repeat {repeat}/{repeats}")
        for name, case in named.items():
            seconds = case()
            if repeat:
                rates[name].append(n / seconds)
    return {name: statistics.median(r) for name, r in rates.items()}


def sqlite_figures(items: list[tuple[str, bytes]], args: Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        peer = sqlite3.connect(f"{tmp}/bare.db", isolation_level=None)
        peer.execute("PRAGMA journal_mode=WAL")
        peer.execute("PRAGMA synchronous=NORMAL")
        peer.execute(_TABLE.format(b="BLOB", t="TEXT"))
        sql = _UPSERT.format(p="?")

        def upsert(digest: bytes, raw: bytes, now: datetime) -> None:
            peer.execute(sql, (digest, raw, now.isoformat()))

        store = open_store(f"sqlite:///{tmp}/store.db", auto_upgrade=True)
        with ChangeWatch(store=store, seen_url="memory:") as watch:
            figures = run_cases("sqlite", cases(watch, items, upsert), len(items), args.repeats)
        peer.close()
    return figures


def postgres_figures(
    admin_url: str, items: list[tuple[str, bytes]], args: Namespace
) -> dict[str, float]:
    with scratch_database(admin_url, "changewatch_bench_one_by_one") as url:
        options = {"options": f"-csynchronous_commit={args.synchronous_commit}"}
        url = make_url(url).update_query_dict(options).render_as_string(hide_password=False)
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(dsn, autocommit=True) as peer:
            peer.execute(_TABLE.format(b="BYTEA", t="TIMESTAMPTZ"))
            sql = _UPSERT.format(p="%s")

            def upsert(digest: bytes, raw: bytes, now: datetime) -> None:
                peer.execute(sql, (digest, raw, now))

            store = open_store(url, auto_upgrade=True)
            with ChangeWatch(store=store, seen_url="memory:") as watch:
                named = cases(watch, items, upsert)
                figures = run_cases("postgres", named, len(items), args.repeats)
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=40, help="corpus pages")
    ap.add_argument("--copies", type=int, default=10, help="URLs per page")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--max-kib", type=int, help="only corpus pages up to this size")
    ap.add_argument("--synchronous-commit", choices=("on", "off"), default="on")
    ap.add_argument("--pg-url", default=os.environ.get("CHANGEWATCH_BENCH_PG_URL", PG_ADMIN))
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    args = ap.parse_args(argv)
    if args.quick:
        args.pages, args.copies, args.repeats = 4, 2, 1
    pages = real_pages(required=False)
    if args.max_kib:
        pages = [(n, h) for n, h in pages if len(h) <= args.max_kib * 1024]
    pages = pages[: args.pages]
    items = [
        (f"https://h{copy % 5}.example/{name}/{copy}", html)
        for copy in range(args.copies)
        for name, html in pages
    ]
    sizes = sorted(len(html) for _, html in pages)
    results = {"sqlite": sqlite_figures(items, args)}
    if not args.no_postgres:
        results["postgres"] = postgres_figures(args.pg_url, items, args)
    print(
        f"{len(items)} unchanged pages per pass ({len(pages)} corpus pages × {args.copies} URLs, "
        f"median body {statistics.median(sizes) / 1024:.0f} KiB); median of {args.repeats} "
        f"passes; Postgres synchronous_commit={args.synchronous_commit}\n"
    )
    print("| backend | case | calls/s | ratio vs bare UPSERT | ratio vs UPSERT + sha256 |")
    print("|---|---|---:|---:|---:|")
    for backend, figures in results.items():
        peer, hashed = figures["bare UPSERT (peer)"], figures["UPSERT + sha256(body)"]
        for name, rate in figures.items():
            print(
                f"| {backend} | {name} | {rate:,.0f} | {rate / peer:.2f}× | {rate / hashed:.2f}× |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
