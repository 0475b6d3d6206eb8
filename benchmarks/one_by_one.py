"""Benchmark one-by-one unchanged ``should_parse`` against a hand-rolled dedupe's UPSERT.

The Scrapy middleware's path: one page at a time, its bytes unchanged since the last fetch
(one autocommitted ``UPDATE … RETURNING`` in changewatch). **The peer** is the least a
hand-rolled "skip pages whose bytes did not change" store must do per fetch, no less and no
more: key the URL (blake2b-128 of the URL as given: no canonicalisation), hash the body
(SHA-256: it must, to know the bytes are the same) and one autocommitted single-row
``INSERT … ON CONFLICT DO UPDATE`` of ``(url_digest, raw_sha256, last_seen, fetch_count)``
— through psycopg on Postgres (its default cursor, which prepares a statement run five
times), through sqlite3 on SQLite (a file with the store's durability settings, read back
from both connections and printed: WAL, ``synchronous=NORMAL``, the same busy timeout).
It is a generous peer: its UPSERT does not even tell it whether the bytes changed (there is
no RETURNING), and its table has one index, where changewatch's touch answers the question
and also keeps the schedule (change rate, ``due_at``, ``rate_band``) and the indexes that
``due`` reads. Postgres runs with the server's own ``synchronous_commit`` (read from the
server and printed) unless ``--synchronous-commit`` sets it for both sides. Both sides run
in the same database server (Postgres: one scratch database, dropped at the end),
interleaved, median of ``--repeats`` passes; every figure is a ratio to the peer.

Three more rows say where the rest goes: "bare UPSERT" is the peer without its two hashes;
"touch statement alone" is changewatch's statement with its arguments computed in advance
(the server's share: the UPDATE also moves ``last_seen``, the rate and ``due_at``, so it
rewrites the row's entries in the indexes on them — on Postgres, not being a HOT update,
in every index of page_snapshots; on SQLite the row's page and its leaves in the two
``due`` indexes, so several WAL pages a commit where the peer writes one, and the WAL's
autocheckpoints, which fsync, come that much more often: both are printed, measured from an
emptied WAL after the timed passes); "sha256(body) alone" is the hash both sides must pay.

Is the peer fair? It pays what any dedupe keyed by page bytes must (the URL key, the body's
hash, one durable-as-configured write a fetch) and nothing changewatch does beyond that:
no canonicalisation, no answer read back, no schedule, no history. ``should_parse`` at 1×
the peer would be free; the target of issue 17 is 0.8×.

    python benchmarks/one_by_one.py [--pages 40] [--copies 10] [--repeats 7] [--max-kib N]
        [--synchronous-commit server|on|off] [--no-postgres] [--pg-url ADMIN_URL] [--quick]
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
from contextlib import closing
from datetime import UTC, datetime
from typing import Any

import psycopg
from _common import log, real_pages, scratch_database
from sqlalchemy.engine import make_url

from changewatch import ChangeWatch
from changewatch.fingerprint import FINGERPRINT_VERSION
from changewatch.store import DEFAULT_SQLITE_BUSY_TIMEOUT_S, open_store

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PEER = "peer: key + sha256 + UPSERT"
_TABLE = "CREATE TABLE bare_upsert (url_digest {b} PRIMARY KEY, raw_sha256 {b} NOT NULL, "
_TABLE += "last_seen {t} NOT NULL, fetch_count BIGINT NOT NULL)"
_UPSERT = (
    "INSERT INTO bare_upsert (url_digest, raw_sha256, last_seen, fetch_count) "
    "VALUES ({p}, {p}, {p}, 1) ON CONFLICT (url_digest) DO UPDATE "
    "SET raw_sha256 = excluded.raw_sha256, last_seen = excluded.last_seen, "
    "fetch_count = bare_upsert.fetch_count + 1"
)
Case = Callable[[], float]


def url_key(url: str) -> bytes:
    """The peer's URL key: blake2b-128 of the URL as given (a hand-rolled dedupe need not
    canonicalise)."""
    return hashlib.blake2b(url.encode(), digest_size=16).digest()


def cases(
    watch: ChangeWatch, items: list[tuple[str, bytes]], upsert: Callable[..., Any]
) -> dict[str, Case]:
    """The figures of one backend: each a pass over ``items``, returning seconds."""
    ds = watch.should_parse_many(items)
    digests = [d.url_digest for d in ds]
    raws = [hashlib.sha256(html).digest() for _, html in items]
    for (url, _html), raw in zip(items, raws, strict=True):
        upsert(url_key(url), raw, datetime.now(UTC))
    keys = [url_key(url) for url, _ in items]
    store = watch.store

    def peer() -> float:
        now = datetime.now(UTC)
        start = time.perf_counter()
        for url, html in items:
            upsert(url_key(url), hashlib.sha256(html).digest(), now)
        return time.perf_counter() - start

    def should_parse() -> float:
        start = time.perf_counter()
        for url, html in items:
            watch.should_parse(url, html)
        return time.perf_counter() - start

    def bare() -> float:
        now = datetime.now(UTC)
        start = time.perf_counter()
        for key, raw in zip(keys, raws, strict=True):
            upsert(key, raw, now)
        return time.perf_counter() - start

    def statement() -> float:
        now = datetime.now(UTC)
        start = time.perf_counter()
        for digest, raw in zip(digests, raws, strict=True):
            store.touch_unchanged(now, digest, raw, FINGERPRINT_VERSION)
        return time.perf_counter() - start

    def sha256_alone() -> float:
        start = time.perf_counter()
        for _url, html in items:
            hashlib.sha256(html).digest()
        return time.perf_counter() - start

    return {
        PEER: peer,
        "should_parse, unchanged": should_parse,
        "bare UPSERT (no hashing)": bare,
        "touch statement alone": statement,
        "sha256(body) alone": sha256_alone,
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


def _sqlite_settings(conn: Any) -> str:
    names = ("journal_mode", "synchronous", "busy_timeout")
    return ", ".join(f"{n}={conn.execute(f'PRAGMA {n}').fetchone()[0]}" for n in names)


def wal_frames_per_call(path: str, calls: Callable[[], int]) -> str:
    """Pages the WAL of ``path`` gains per call of ``calls()`` (which returns how many it
    made), from an emptied WAL; ``calls`` must stay under the autocheckpoint (1,000 pages)."""
    with closing(sqlite3.connect(path)) as conn:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    if busy:
        return "n/a (the WAL could not be emptied)"
    n = calls()
    grown = max(0, os.path.getsize(f"{path}-wal") - 32)  # less the WAL header
    return f"{grown / (page_size + 24) / n:.1f}"


def sqlite_figures(items: list[tuple[str, bytes]], args: Namespace) -> tuple[dict[str, float], str]:
    with tempfile.TemporaryDirectory() as tmp:
        peer = sqlite3.connect(
            f"{tmp}/bare.db", isolation_level=None, timeout=DEFAULT_SQLITE_BUSY_TIMEOUT_S
        )
        peer.execute("PRAGMA journal_mode=WAL")
        peer.execute("PRAGMA synchronous=NORMAL")  # what changewatch sets on its connections
        peer.execute(_TABLE.format(b="BLOB", t="TEXT"))
        sql = _UPSERT.format(p="?")

        def upsert(digest: bytes, raw: bytes, now: datetime) -> None:
            peer.execute(sql, (digest, raw, now.isoformat()))

        store = open_store(f"sqlite:///{tmp}/store.db", auto_upgrade=True)
        with ChangeWatch(store=store, seen_url="memory:") as watch:
            with store.engine.connect() as conn:
                ours = _sqlite_settings(conn.connection.driver_connection)
            settings = f"changewatch {ours}; peer {_sqlite_settings(peer)}"
            figures = run_cases("sqlite", cases(watch, items, upsert), len(items), args.repeats)
            few = items[:100]

            def ours_calls() -> int:
                for url, html in few:
                    watch.should_parse(url, html)
                return len(few)

            def peer_calls() -> int:
                now = datetime.now(UTC)
                for url, html in few:
                    upsert(url_key(url), hashlib.sha256(html).digest(), now)
                return len(few)

            settings += (
                f"\nsqlite: WAL pages written per call: changewatch "
                f"{wal_frames_per_call(f'{tmp}/store.db', ours_calls)}, peer "
                f"{wal_frames_per_call(f'{tmp}/bare.db', peer_calls)}"
            )
        peer.close()
    return figures, settings


def postgres_figures(
    admin_url: str, items: list[tuple[str, bytes]], args: Namespace
) -> tuple[dict[str, float], str]:
    with scratch_database(admin_url, "changewatch_bench_one_by_one") as url:
        if args.synchronous_commit != "server":
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
                with store.engine.connect() as conn:
                    ours = conn.exec_driver_sql("SHOW synchronous_commit").scalar()
                theirs = peer.execute("SHOW synchronous_commit").fetchone()
                settings = f"synchronous_commit: changewatch {ours}, peer {theirs and theirs[0]}"
                if args.synchronous_commit == "server":
                    settings += " (the server's setting)"
                named = cases(watch, items, upsert)
                figures = run_cases("postgres", named, len(items), args.repeats)
    return figures, settings


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=40, help="corpus pages")
    ap.add_argument("--copies", type=int, default=10, help="URLs per page")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--max-kib", type=int, help="only corpus pages up to this size")
    ap.add_argument(
        "--synchronous-commit",
        choices=("server", "on", "off"),
        default="server",
        help="Postgres, both sides (default: the server's own setting)",
    )
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
        "passes"
    )
    for backend, (_figures, settings) in results.items():
        print(f"{backend}: {settings}")
    print("\n| backend | case | calls/s | ratio vs peer |")
    print("|---|---|---:|---:|")
    for backend, (figures, _settings) in results.items():
        peer = figures[PEER]
        for name, rate in figures.items():
            print(f"| {backend} | {name} | {rate:,.0f} | {rate / peer:.2f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
