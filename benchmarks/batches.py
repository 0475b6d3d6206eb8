"""Benchmark ``should_parse_many`` on batches of 1,000, 10,000 and 100,000 new pages.

The cost per page of one batch should not grow with the batch (issue 15: the batch used to
compare every new page with every page decided before it, 49,995,000 ``hamming`` calls for
10,000 pages, and a batch of 70,000 failed on Postgres' 65,535-parameter limit). Each batch
is one call on a fresh store (a new SQLite file; a scratch Postgres database, dropped after)
holding new pages only, one in ten a copy of an earlier page of the batch at another URL (so
the batch's duplicate pool is exercised: those must come back with ``duplicate_of``).

The floor is ``fingerprint()`` of the same pages, measured just before each batch in the
same run: the work a decision cannot skip. Figures are medians of ``--repeats`` passes, in
µs per page, as a ratio to the floor and to the smallest batch (flat means linear).

    python benchmarks/batches.py [--quick] [--sizes 1000,10000,100000] [--repeats 3]
        [--no-postgres] [--pg-url ADMIN_URL]  (or $CHANGEWATCH_BENCH_PG_URL) [--without-gc]

``--without-gc`` also times each batch with the cyclic garbage collector off during the
call, beside the same batch with it on (how much of any growth is the collector's).
"""

from __future__ import annotations

import gc
import os
import random
import statistics
import tempfile
import time
from argparse import ArgumentParser
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import log, scratch_database

from changewatch import ChangeWatch, fingerprint
from changewatch.store import create_engine
from changewatch.store.migrate import upgrade

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
#: One page in COPY_EVERY repeats an earlier page's content at a URL of its own.
COPY_EVERY = 10
WORDS = [
    "harbour",
    "lantern",
    "quietly",
    "orbit",
    "mosaic",
    "thunder",
    "velvet",
    "cargo",
    "meadow",
    "signal",
    "copper",
    "quarry",
    "ribbon",
    "tundra",
    "walnut",
    "ember",
    "falcon",
    "glacier",
    "hollow",
    "juniper",
    "kettle",
    "marble",
    "nectar",
    "oyster",
    "pepper",
    "quiver",
    "saffron",
    "timber",
    "umber",
    "vessel",
    "willow",
    "yonder",
    "zephyr",
    "anchor",
    "bramble",
]


def make_pages(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` pages of 120 random words each; every COPY_EVERY-th repeats an earlier one."""
    rng = random.Random(seed)
    pages: list[tuple[str, str]] = []
    for i in range(count):
        url = f"https://bench{i % 97}.example/{seed}/{i}"
        if i % COPY_EVERY == COPY_EVERY - 1:
            html = pages[rng.randrange(i - 1)][1]
        else:
            words = " ".join(rng.choice(WORDS) for _ in range(120))
            html = f"<html><body><h1>Page {i}</h1><p>{words}</p><p>{seed}-{i}</p></body></html>"
        pages.append((url, html))
    return pages


@contextmanager
def fresh_store(backend: str, pg_admin: str, tmp: Path, tag: str) -> Iterator[str]:
    """The URL of an empty store of ``backend``, removed afterwards."""
    if backend == "sqlite":
        path = tmp / f"{tag}.db"
        try:
            yield f"sqlite:///{path}"
        finally:
            for leftover in tmp.glob(f"{tag}.db*"):
                leftover.unlink()
        return
    with scratch_database(pg_admin, "cw_bench_batches") as url:
        engine = create_engine(url)
        try:
            upgrade(engine)  # a Postgres schema is made by `changewatch db upgrade`, not on open
        finally:
            engine.dispose()
        yield url


def time_floor(pages: list[tuple[str, str]]) -> float:
    start = time.perf_counter()
    for _url, html in pages:
        fingerprint(html)
    return time.perf_counter() - start


def time_batch(url: str, pages: list[tuple[str, str]], *, collect: bool = True) -> float:
    """Seconds of one ``should_parse_many`` of ``pages[1:]`` (``collect=False``: with the
    cyclic garbage collector off during the call)."""
    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        watch.should_parse_many(pages[:1])  # connect and warm the statement cache, untimed
        rest = pages[1:]
        if not collect:
            gc.disable()
        try:
            start = time.perf_counter()
            decisions = watch.should_parse_many(rest)
            elapsed = time.perf_counter() - start
        finally:
            gc.enable()
    kinds = {d.kind for d in decisions}
    copies = sum(d.duplicate_of is not None for d in decisions)
    expected = sum(1 for i in range(1, len(pages)) if i % COPY_EVERY == COPY_EVERY - 1)
    if kinds != {"new"} or copies < expected:
        raise RuntimeError(f"{url}: kinds {kinds}, {copies} duplicates of {expected} copies")
    return elapsed


def run(
    backends: list[str], sizes: list[int], repeats: int, pg_admin: str, *, without_gc: bool
) -> dict[tuple[str, int], tuple[list[float], list[float]]]:
    """(backend, size) → (batch µs/page per pass, floor µs/page per pass); ``without_gc``
    adds a "backend, gc off" run of each batch beside it."""
    figures: dict[tuple[str, int], tuple[list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):
            for size in sizes:
                pages = make_pages(size + 1, seed=repeat * 1_000_003 + size)
                for backend in backends:
                    for collect in (True, False) if without_gc else (True,):
                        label = backend if collect else f"{backend}, gc off"
                        log(f"pass {repeat + 1}/{repeats}: {label}, {size:,} pages")
                        floor = time_floor(pages[1:])
                        tag = f"b{repeat}_{size}_{collect}"
                        with fresh_store(backend, pg_admin, Path(tmp), tag) as url:
                            batch = time_batch(url, pages, collect=collect)
                        batches, floors = figures.setdefault((label, size), ([], []))
                        batches.append(batch / size * 1e6)
                        floors.append(floor / size * 1e6)
    return figures


def table(figures: dict[tuple[str, int], tuple[list[float], list[float]]]) -> str:
    lines = [
        "| backend | pages in the batch | should_parse_many µs/page | floor µs/page "
        "| ratio to floor | µs/page vs the smallest batch |",
        "|---|---|---|---|---|---|",
    ]
    smallest: dict[str, float] = {}
    median: Callable[[list[float]], float] = statistics.median
    for (backend, size), (batches, floors) in sorted(figures.items()):
        per_page = median(batches)
        smallest.setdefault(backend, per_page)
        lines.append(
            f"| {backend} | {size:,} | {per_page:,.0f} | {median(floors):,.0f} "
            f"| {per_page / median(floors):.2f}× | {per_page / smallest[backend]:.2f}× |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="pages per batch, comma-separated")
    ap.add_argument("--repeats", type=int, default=3, help="passes per figure (median)")
    ap.add_argument("--pg-url", default=os.environ.get("CHANGEWATCH_BENCH_PG_URL", PG_ADMIN))
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--quick", action="store_true", help="batches of 100 and 1,000, one pass")
    ap.add_argument(
        "--without-gc",
        action="store_true",
        help="also time each batch with Python's cyclic garbage collector off",
    )
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.repeats = [100, 1000], 1
    backends = ["sqlite"] if args.no_postgres else ["sqlite", "postgres"]
    figures = run(backends, sizes, args.repeats, args.pg_url, without_gc=args.without_gc)
    print(
        f"New pages, one should_parse_many call per batch on a fresh store, 1 in {COPY_EVERY} "
        f"a copy of an earlier page; median of {args.repeats} passes; floor = fingerprint() "
        "of the same pages, measured just before\n"
    )
    print(table(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
