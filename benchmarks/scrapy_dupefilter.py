"""Benchmark Scrapy duplicate filters in-process: ``request_seen`` cost per call, no crawl.

    python benchmarks/scrapy_dupefilter.py [--urls 200000] [--repeats 3]
    python benchmarks/scrapy_dupefilter.py --quick          # 5,000 URLs, one pass
    python benchmarks/scrapy_dupefilter.py --memory         # RSS per URL instead
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
answers "seen" for a page never scheduled). ``--memory`` instead feeds ``--urls`` distinct
requests to each filter in a process of its own and reports the RSS growth above the floor's
(``ru_maxrss``), per URL and against RFPDupeFilter. Prints a markdown table.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from argparse import SUPPRESS, ArgumentParser, Namespace
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


ROWS = (
    "floor: build the Requests",
    "RFPDupeFilter",
    "changewatch memory:",
    "changewatch file Bloom",
    "changewatch Redis Bloom",
)


def make_filter(name: str, tmp: str, total: int, redis_url: str, keys: list[str]) -> Any:
    """A fresh filter of row ``name`` (None for the floor); Redis keys are added to ``keys``."""
    bloom = f"kind=bloom&capacity={total}&error_rate=0.001"
    if name == "RFPDupeFilter":
        return RFPDupeFilter()
    if name == "changewatch memory:":
        return ChangewatchDupeFilter(open_seen_set("memory:"))
    if name == "changewatch file Bloom":
        path = Path(tmp) / f"{uuid.uuid4().hex}.bloom"
        return ChangewatchDupeFilter(open_seen_set(f"file:{path}?{bloom}"))
    if name == "changewatch Redis Bloom":
        keys.append(f"cwbench:dupefilter:{uuid.uuid4().hex[:12]}")
        sep = "&" if "?" in redis_url else "?"
        return ChangewatchDupeFilter(open_seen_set(f"{redis_url}{sep}{bloom}&key={keys[-1]}"))
    return None


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    total = 5_000 if args.quick else args.urls
    repeats = 1 if args.quick else args.repeats
    redis_url = args.redis or os.environ.get("CHANGEWATCH_BENCH_REDIS_URL") or DEFAULT_REDIS_URL
    if args.child_memory:
        return _child_memory(args.child_memory, total, redis_url)
    if args.memory:
        return _memory_table(total, args.quick)
    stream = links(total)
    with tempfile.TemporaryDirectory(prefix="cw-dupefilter-bench-") as tmp:
        keys: list[str] = []
        results: dict[str, tuple[float, int]] = {}
        try:
            for name in ROWS:
                runs = [
                    run(lambda n=name: make_filter(n, tmp, total, redis_url, keys), stream)
                    for _ in range(repeats)
                ]
                results[name] = (statistics.median(r[0] for r in runs), runs[0][1])
                print(f"  {name}: done", file=sys.stderr)
        finally:
            _delete(redis_url, keys)
    floor = results[ROWS[0]][0]
    peer = (results["RFPDupeFilter"][0] - floor) / len(stream)
    print(
        f"\n{len(stream):,} request_seen calls over {total:,} URLs "
        f"(median of {repeats}; µs per call above the floor)\n"
    )
    print("| filter | µs per call | × RFPDupeFilter | answered new |")
    print("|---|---:|---:|---:|")
    print(f"| floor: build the Requests | {floor / len(stream) * 1e6:.2f} (absolute) | | |")
    for name, (seconds, new) in results.items():
        if name == ROWS[0]:
            continue
        cost = (seconds - floor) / len(stream)
        print(f"| {name} | {cost * 1e6:.2f} | {cost / peer:.2f} | {new:,} |")
    if args.quick:
        print("\n(--quick: one pass over a small stream; a smoke test, not a result.)")
    return 0


def _child_memory(name: str, total: int, redis_url: str) -> int:
    """In a fresh process: RSS before and after ``total`` new requests through one filter."""
    with tempfile.TemporaryDirectory(prefix="cw-dupefilter-mem-") as tmp:
        keys: list[str] = []
        try:
            dupefilter = make_filter(name, tmp, total, redis_url, keys)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            for n in range(total):
                request = Request(f"{BASE}/{n}")
                if dupefilter is not None:
                    dupefilter.request_seen(request)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            if dupefilter is not None:
                dupefilter.close("finished")
        finally:
            _delete(redis_url, keys)
    print(json.dumps({"before_kib": before, "after_kib": after}))
    return 0


def _memory_table(total: int, quick: bool) -> int:
    growth: dict[str, float] = {}
    for name in ROWS:
        out = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--urls",
                str(total),
                "--child-memory",
                name,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        figures = json.loads(out.strip().splitlines()[-1])
        growth[name] = (figures["after_kib"] - figures["before_kib"]) * 1024
    floor = growth[ROWS[0]]
    peer = growth["RFPDupeFilter"] - floor
    print(f"\nMemory of {total:,} scheduled requests (RSS growth, one process per row)\n")
    print("| filter | RSS growth MiB above the floor | bytes per URL | × RFPDupeFilter |")
    print("|---|---:|---:|---:|")
    print(f"| floor: build the Requests | {floor / 2**20:.1f} (absolute) | | |")
    for name in ROWS[1:]:
        extra = max(0.0, growth[name] - floor)
        print(f"| {name} | {extra / 2**20:.1f} | {extra / total:.0f} | {extra / peer:.3f} |")
    if quick:
        print("\n(--quick: small sizes; RSS moves in pages, the figures mean little.)")
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
    parser.add_argument("--memory", action="store_true", help="RSS per URL instead of time")
    parser.add_argument("--child-memory", help=SUPPRESS)  # internal: one row's process
    return parser.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(main())
