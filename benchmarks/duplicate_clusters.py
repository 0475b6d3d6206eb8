"""Benchmark a new page's decision against the size of the cluster of stored copies it joins.

A crawl stores many pages with one content (soft 404s, session-id twins, printer-friendly
copies). One store holds three such clusters — ``--sizes`` copies each (default 500, 6,000
and 100,000) of one real page with its paragraphs' words shuffled per cluster (a content
and a SimHash of their own, the same parse cost) — and new URLs with each cluster's content
are decided one by one (``should_parse``) and batched (``should_parse_many``), interleaved,
and so are near copies (one word changed: no stored page has their content, so the SimHash
bands are read). Each figure is the median per-page time over ``--repeats`` passes, printed
as a ratio to the smallest cluster's (the target: at most 2× at 6,000 and 100,000), on
SQLite (temp file) and Postgres (a scratch database, dropped at the end). Every decision is
checked to be ``new`` with a ``duplicate_of`` in its cluster.

    python benchmarks/duplicate_clusters.py [--sizes 500,6000,100000] [--repeats 7]
        [--pages 20] [--no-postgres] [--pg-url ADMIN_URL] [--db-prefix NAME] [--quick]

The clusters are made by copying the first stored row of each under new URL digests in one
``INSERT … SELECT`` (snapshot rows only: a decision reads no history).
"""

from __future__ import annotations

import itertools
import os
import random
import re
import statistics
import sys
import tempfile
import time
from argparse import ArgumentParser, Namespace
from collections.abc import Callable

import sqlalchemy as sa
from _common import log, real_pages, scratch_database

from changewatch import ChangeWatch, fingerprint, hamming
from changewatch.store import open_store
from changewatch.store.tables import page_snapshots

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
#: exact copies one by one and batched; a near copy (no exact holder: the bands are read)
MODES = ("one-by-one", "batch", "near copy, one-by-one")
_COLUMNS = [c.name for c in page_snapshots.columns if c.name not in ("url_digest", "url")]
# Copies of the row of :seed: a new digest and URL each (n = 1 .. :copies).
_CLONE = {
    "postgresql": (
        "INSERT INTO page_snapshots (url_digest, url, {cols}) "
        "SELECT decode(md5(:tag || '/' || n), 'hex'), s.url || '/copy/' || n, {scols} "
        "FROM page_snapshots AS s, generate_series(1, :copies) AS n WHERE s.url_digest = :seed"
    ),
    "sqlite": (
        "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < :copies) "
        "INSERT INTO page_snapshots (url_digest, url, {cols}) "
        "SELECT randomblob(16), s.url || '/copy/' || n, {scols} "
        "FROM page_snapshots AS s, k WHERE s.url_digest = :seed"
    ),
}


def cluster_page(base: bytes, size: int) -> bytes:
    """The real page with the words of its paragraphs shuffled (seeded by ``size``): the
    same length and markup, so parsing costs the same, but a content and a SimHash of its
    own (checked: the clusters' SimHashes must be more than 3 bits apart)."""
    rng = random.Random(size)

    def shuffle(match: re.Match[bytes]) -> bytes:
        words = match.group(2).split()
        rng.shuffle(words)
        return match.group(1) + b" ".join(words)

    return re.sub(rb"(<p\b[^>]*>)([^<]{60,})", shuffle, base, flags=re.I)


def near_copy(page: bytes) -> bytes:
    """``page`` with one word of its longest paragraph replaced: a near copy (other content,
    SimHash within a few bits)."""
    run = max(re.finditer(rb"<p\b[^>]*>([^<]{60,})", page, flags=re.I), key=lambda m: len(m[1]))
    words = run.group(1).split()
    words[len(words) // 2] = b"zeppelin"
    return page[: run.start(1)] + b" ".join(words) + page[run.end(1) :]


def seed(watch: ChangeWatch, html: bytes, size: int) -> None:
    """Store ``size`` pages with the content of ``html``."""
    first = watch.should_parse(f"https://cluster{size}.example/seed", html)
    engine = watch.store.engine  # type: ignore[attr-defined]
    sql = _CLONE[engine.dialect.name].format(
        cols=", ".join(_COLUMNS), scols=", ".join(f"s.{c}" for c in _COLUMNS)
    )
    with engine.begin() as conn:
        conn.execute(sa.text(sql), {"seed": first.url_digest, "copies": size - 1, "tag": size})
        conn.exec_driver_sql("ANALYZE")


def timed(
    watch: ChangeWatch, html: bytes, size: int, mode: str, n: int, tag: str
) -> Callable[[], float]:
    """One pass: ``n`` new URLs with the cluster's content; seconds per page."""
    counter = iter(range(10**9))

    def run() -> float:
        items = [(f"https://new{size}.example/{tag}/{next(counter)}", html) for _ in range(n)]
        start = time.perf_counter()
        if mode == "near copy, one-by-one":
            decisions = [watch.should_parse(url, near_copy(body)) for url, body in items]
        elif mode == "one-by-one":
            decisions = [watch.should_parse(url, body) for url, body in items]
        else:
            decisions = watch.should_parse_many(items)
        elapsed = time.perf_counter() - start
        with watch.store.engine.begin() as conn:  # type: ignore[attr-defined]
            digests = [d.url_digest for d in decisions]  # keep the cluster at its size
            conn.execute(sa.delete(page_snapshots).where(page_snapshots.c.url_digest.in_(digests)))
        hosts = (f"https://cluster{size}.example/", f"https://new{size}.example/")
        bad = [
            d for d in decisions if d.kind != "new" or not (d.duplicate_of or "").startswith(hosts)
        ]
        if bad:
            raise RuntimeError(f"{size} {mode}: {len(bad)} decision(s) without their cluster")
        return elapsed / n

    return run


def measure(url: str, backend: str, html: bytes, sizes: list[int], args: Namespace) -> list[str]:
    repeats, pages = args.repeats, args.pages
    rows = []
    with ChangeWatch(store=open_store(url, auto_upgrade=True), seen_url="memory:") as watch:
        bodies = {size: cluster_page(html, size) for size in sizes}
        hashes = [fingerprint(b).simhash for b in bodies.values()]
        if min(hamming(a, b) for a, b in itertools.combinations(hashes, 2)) <= 3:
            raise SystemExit(
                "the clusters' pages are near copies of each other: pick another --page"
            )
        for size in sizes:
            log(f"{backend}: seeding {size:,} copies")
            seed(watch, bodies[size], size)
        cases = {
            (size, mode): timed(watch, bodies[size], size, mode, pages, backend)
            for mode in MODES
            for size in sizes
        }
        times: dict[tuple[int, str], list[float]] = {key: [] for key in cases}
        for repeat in range(repeats + 1):  # repeat 0 warms up; cases interleaved
            log(f"{backend}: repeat {repeat}/{repeats}")
            for key, run in cases.items():
                seconds = run()
                if repeat:
                    times[key].append(seconds)
    for mode in MODES:
        base = statistics.median(times[(sizes[0], mode)])
        for size in sizes:
            median = statistics.median(times[(size, mode)])
            rows.append(
                f"| {backend} | {mode} | {size:,} | {median * 1e3:.2f} | {median / base:.2f}× |"
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="500,6000,100000", help="copies per cluster")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--pages", type=int, default=20, help="new pages per pass and cluster")
    ap.add_argument("--page", default="001", help="corpus page the clusters are made of")
    ap.add_argument("--pg-url", default=os.environ.get("CHANGEWATCH_BENCH_PG_URL", PG_ADMIN))
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--db-prefix", default="changewatch_bench_clusters")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.repeats, args.pages = [5, 20], 1, 2
    pages = dict(real_pages(required=False))
    html = pages.get(args.page) or next(iter(pages.values()))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rows += measure(f"sqlite:///{tmp}/clusters.db", "sqlite", html, sizes, args)
    if not args.no_postgres:
        with scratch_database(args.pg_url, args.db_prefix) as url:
            rows += measure(url, "postgres", html, sizes, args)
    print(
        f"A new page joining a cluster of stored copies: median per page over {args.repeats} "
        f"passes of {args.pages} pages; ratio to the {sizes[0]:,}-copy cluster in the same run\n"
    )
    print("| backend | mode | stored copies | ms per page | ratio |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
