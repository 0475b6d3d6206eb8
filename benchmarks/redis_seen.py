"""Benchmark the Redis seen-sets: pipelined adds per second, beside plain redis-py SADD.

    python benchmarks/redis_seen.py [--urls 1000000] [--batch 10000] [--repeats 3]
        [--redis redis://127.0.0.1:6379/15]   (or $CHANGEWATCH_BENCH_REDIS_URL)

Every row adds the same ``--urls`` fresh URL digests (blake2b-128, computed before timing) in
batches of ``--batch`` to an empty key, and reports the median of ``--repeats`` passes:

* ``changewatch kind=set``   — ``RedisSeenSet.add_many`` (script calls of SADDs, pipelined);
* ``changewatch kind=bloom`` — ``RedisBloomSeenSet.add_many`` at capacity = ``--urls``, p=0.01;
* ``redis-py SADD pipeline`` — the peer: one ``SADD`` per digest in a non-transactional
  pipeline per batch, answers read back (what scrapy-redis-style dupefilters do).

``…, str URLs`` feeds the Bloom filter ``str`` URLs (their formatting is outside the timing,
canonicalising and digesting inside), and a final row times ``url_digest`` alone.
Keys are deleted after each pass; before that, their ``MEMORY USAGE`` (summed over the keys
of the pass, with all samples) gives the bytes per URL. Prints a markdown table.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import time
import uuid
from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any

import redis

from changewatch.seen import open_seen_set
from changewatch.urls import url_digest

DEFAULT_URL = "redis://127.0.0.1:6379/15"
Runner = Callable[[list[Any], int, str], int]


def _digests(n: int, salt: str) -> list[bytes]:
    return [hashlib.blake2b(f"{salt}:{i}".encode(), digest_size=16).digest() for i in range(n)]


def _delete(client: redis.Redis, prefix: str) -> None:
    for key in client.scan_iter(match=f"{prefix}*", count=1000):
        client.delete(key)


def _memory(client: redis.Redis, prefix: str) -> int:
    """Bytes Redis holds for the keys of one pass (``MEMORY USAGE … SAMPLES 0``: exact)."""
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    return sum(int(client.memory_usage(key, samples=0) or 0) for key in keys)


def _changewatch(base: str, query: str) -> Runner:
    def run(items: list[Any], batch: int, key: str) -> int:
        seen = open_seen_set(f"{base}?key={key}&{query}")
        try:
            return sum(
                sum(seen.add_many(items[i : i + batch])) for i in range(0, len(items), batch)
            )
        finally:
            seen.close()

    return run


def _as_urls(digests: list[bytes]) -> list[str]:
    """Distinct str URLs, one per digest, that canonicalisation has work to do on."""
    return [f"https://Example.com/u/{d.hex()}?b=2&a=1#f" for d in digests]


def _plain_sadd(base: str) -> Runner:
    def run(items: list[Any], batch: int, key: str) -> int:
        client = redis.Redis.from_url(base)
        try:
            new = 0
            for i in range(0, len(items), batch):
                pipe = client.pipeline(transaction=False)
                for digest in items[i : i + batch]:
                    pipe.sadd(key, digest)
                new += sum(pipe.execute())
            return new
        finally:
            client.close()

    return run


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--redis", default=os.environ.get("CHANGEWATCH_BENCH_REDIS_URL") or DEFAULT_URL
    )
    args = parser.parse_args()
    plain = redis.Redis.from_url(args.redis)
    bloom = f"kind=bloom&capacity={args.urls}&error_rate=0.01"
    rows: list[tuple[str, Callable[[list[bytes]], list[Any]], Runner]] = [
        ("changewatch kind=set", list, _changewatch(args.redis, "kind=set")),
        ("changewatch kind=bloom", list, _changewatch(args.redis, bloom)),
        ("changewatch kind=bloom, str URLs", _as_urls, _changewatch(args.redis, bloom)),
        ("redis-py SADD pipeline (peer)", list, _plain_sadd(args.redis)),
    ]
    print(f"{args.urls:,} URL digests, batches of {args.batch:,}, median of {args.repeats}\n")
    print("| backend | URLs/s | seconds | new | bytes/URL |")
    print("|---|---:|---:|---:|---:|")
    for name, prepare, run in rows:
        timings, news, memory = [], [], []
        for repeat in range(args.repeats):
            items = prepare(_digests(args.urls, f"{name}:{repeat}"))
            prefix = f"cwbench:{uuid.uuid4().hex[:12]}"
            try:
                started = time.perf_counter()
                news.append(run(items, args.batch, prefix))
                timings.append(time.perf_counter() - started)
                memory.append(_memory(plain, prefix))
            finally:
                _delete(plain, prefix)
        seconds = statistics.median(timings)
        new = int(statistics.median(news))
        per_url = statistics.median(memory) / args.urls
        print(f"| {name} | {args.urls / seconds:,.0f} | {seconds:.2f} | {new:,} | {per_url:.1f} |")
    urls = [f"https://Example.com/path/{i}?b=2&a=1#frag" for i in range(min(args.urls, 200_000))]
    started = time.perf_counter()
    for url in urls:
        url_digest(url)
    rate = len(urls) / (time.perf_counter() - started)
    print(f"| url_digest of str URLs (client CPU only) | {rate:,.0f} | — | — | — |")
    plain.close()


if __name__ == "__main__":
    main()
