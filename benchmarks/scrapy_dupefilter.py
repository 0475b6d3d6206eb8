"""Benchmark Scrapy duplicate filters in-process: ``request_seen`` cost per call, no crawl.

    python benchmarks/scrapy_dupefilter.py [--urls 200000] [--repeats 3]
    python benchmarks/scrapy_dupefilter.py --quick          # 5,000 URLs, one pass
        [--redis redis://127.0.0.1:6379/15]   (or $CHANGEWATCH_BENCH_REDIS_URL)

The request stream is the one ``benchmarks/scrapy_crawl.py`` makes its crawler see: for each
of ``--urls`` pages, a ``GET`` request for each of its links (up to five children in a tree
over every URL, three pages already linked), so about one request in four is new. Requests are built
inside the timed loop — Scrapy caches a fingerprint per Request object, and a crawler builds
a new Request per link — and a ``floor`` row times building them alone. Rows:

* ``RFPDupeFilter`` — the peer: Scrapy's default, SHA-1 fingerprints in a set;
* ``changewatch memory:`` — an exact in-process set of URL digests;
* ``changewatch file Bloom`` — capacity = ``--urls``, p = 0.001;
* ``changewatch Redis Bloom`` — the same in Redis: one round trip per request.

Figures: median microseconds per ``request_seen`` above the floor over ``--repeats`` passes,
the ratio to RFPDupeFilter, and the filter's requests answered "new" (a Bloom false positive
answers "seen" for a page never scheduled). Prints a markdown table.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from argparse import ArgumentParser, Namespace
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scrapy import Request
from scrapy.dupefilters import RFPDupeFilter

from changewatch.scrapy import ChangewatchDupeFilter
from changewatch.seen import open_seen_set

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
FANOUT = 5
BASE = "http://127.0.0.1:8080"


def links(total: int) -> list[int]:
    """The page numbers a crawl of ``total`` pages requests, in crawl order."""
    out = [0]
    for n in range(total):
        children = [c for c in range(FANOUT * n + 1, FANOUT * n + FANOUT + 1) if c < total]
        out += [*children, 0, max(0, (n - 1) // FANOUT), (n * 7919) % total]
    return out


def run(make: Callable[[], Any], stream: list[int]) -> tuple[float, int]:
    """Seconds to feed ``stream`` to a fresh filter, and how many requests were new."""
    dupefilter = make()
    new = 0
    started = time.perf_counter()
    for n in stream:
        if dupefilter is None:
            Request(f"{BASE}/{n}")
        elif not dupefilter.request_seen(Request(f"{BASE}/{n}")):
            new += 1
    elapsed = time.perf_counter() - started
    if dupefilter is not None:
        dupefilter.close("finished")
    return elapsed, new


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    total = 5_000 if args.quick else args.urls
    repeats = 1 if args.quick else args.repeats
    redis_url = args.redis or os.environ.get("CHANGEWATCH_BENCH_REDIS_URL") or DEFAULT_REDIS_URL
    stream = links(total)
    bloom = f"kind=bloom&capacity={total}&error_rate=0.001"
    sep = "&" if "?" in redis_url else "?"
    with tempfile.TemporaryDirectory(prefix="cw-dupefilter-bench-") as tmp:
        keys: list[str] = []

        def file_bloom() -> Any:
            path = Path(tmp) / f"{uuid.uuid4().hex}.bloom"
            return ChangewatchDupeFilter(open_seen_set(f"file:{path}?{bloom}"))

        def redis_bloom() -> Any:
            keys.append(f"cwbench:dupefilter:{uuid.uuid4().hex[:12]}")
            return ChangewatchDupeFilter(open_seen_set(f"{redis_url}{sep}{bloom}&key={keys[-1]}"))

        rows: list[tuple[str, Callable[[], Any]]] = [
            ("floor: build the Requests", lambda: None),
            ("RFPDupeFilter", RFPDupeFilter),
            ("changewatch memory:", lambda: ChangewatchDupeFilter(open_seen_set("memory:"))),
            ("changewatch file Bloom", file_bloom),
            ("changewatch Redis Bloom", redis_bloom),
        ]
        results: dict[str, tuple[float, int]] = {}
        try:
            for name, make in rows:
                runs = [run(make, stream) for _ in range(repeats)]
                results[name] = (statistics.median(r[0] for r in runs), runs[0][1])
                print(f"  {name}: done", file=sys.stderr)
        finally:
            _delete(redis_url, keys)
    floor = results["floor: build the Requests"][0]
    peer = (results["RFPDupeFilter"][0] - floor) / len(stream)
    print(
        f"\n{len(stream):,} request_seen calls over {total:,} URLs "
        f"(median of {repeats}; µs per call above the floor)\n"
    )
    print("| filter | µs per call | × RFPDupeFilter | answered new |")
    print("|---|---:|---:|---:|")
    print(f"| floor: build the Requests | {floor / len(stream) * 1e6:.2f} (absolute) | | |")
    for name, (seconds, new) in results.items():
        if name.startswith("floor"):
            continue
        cost = (seconds - floor) / len(stream)
        print(f"| {name} | {cost * 1e6:.2f} | {cost / peer:.2f} | {new:,} |")
    if args.quick:
        print("\n(--quick: one pass over a small stream; a smoke test, not a result.)")
    return 0


def _delete(url: str, prefixes: list[str]) -> None:
    if not prefixes:
        return
    import redis

    client = redis.Redis.from_url(url)
    try:
        for prefix in prefixes:
            for name in client.scan_iter(match=f"{prefix}*", count=1000):
                client.delete(name)
    finally:
        client.close()


def _parse(argv: list[str] | None) -> Namespace:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=200_000, help="URLs in the site")
    parser.add_argument("--repeats", type=int, default=3, help="passes per row (median)")
    parser.add_argument("--quick", action="store_true", help="5,000 URLs, one pass")
    parser.add_argument("--redis", help=f"Redis server URL (default {DEFAULT_REDIS_URL})")
    return parser.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(main())
