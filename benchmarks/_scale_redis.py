"""The Redis phase of ``benchmarks/scale_run.py``: 10M URLs into seen-sets, beside bare peers.

Rows, each into an empty Redis database (``--redis``, db 13 by default; ``FLUSHDB`` of that
database only, before and after every row):

* ``kind=bloom`` at capacity = URLs and p = 0.01, then p = 0.001, and ``kind=set`` — the
  public seen-set API, ``open_seen_set(url).add_many(batch)`` with ``str`` URLs (the pages'
  URLs of ``_scale_pages.url``: canonicalising and digesting inside the timing, formatting
  the strings outside it), batches of 10,000;
* the peers, digests computed outside the timing: one ``SADD key digest`` per URL in a
  non-transactional pipeline of 10,000 (what scrapy-redis-style dupefilters do), and one
  ``BITFIELD key SET u1 <bit> 1 …`` (k bits) per URL the same way, k and m those of the
  p = 0.01 filter (bits by double hashing of the digest) — on ``--peer-urls`` URLs; and the
  floor, ``SADD key d1 … d1000`` (a thousand members a command), on all the URLs.

Bytes per URL: ``MEMORY USAGE key SAMPLES 0`` summed over the row's keys, and the change of
``INFO memory`` ``used_memory``. The false-positive rate: ``contains_many`` of 1,000,000
URLs never added (pages ``urls … urls + 1M``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import redis
from _common import log
from _scale_pages import url

from changewatch.bloom import bloom_size
from changewatch.seen import open_seen_set
from changewatch.urls import url_digest

CHUNK = 10_000
UNSEEN = 1_000_000


def _chunks(start: int, stop: int, hosts: int, port: int) -> Iterator[list[str]]:
    for lo in range(start, stop, CHUNK):
        yield [url(i, hosts, port) for i in range(lo, min(stop, lo + CHUNK))]


def _memory(client: redis.Redis) -> int:
    return sum(int(client.memory_usage(k, samples=0) or 0) for k in client.scan_iter(count=1000))


def _used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def _server_cpu(client: redis.Redis) -> float:
    """CPU seconds the Redis server has used (``INFO cpu``: the whole server, so other
    clients' commands during the row count too)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _cpu(client_cpu: float, server_cpu: float, n: int) -> dict[str, float]:
    return {
        "client_cpu_us_per_url": round(client_cpu * 1e6 / n, 2),
        "server_cpu_us_per_url": round(server_cpu * 1e6 / n, 2),
    }


def _seen_row(base: str, query: str, n: int, hosts: int, port: int) -> dict[str, Any]:
    client = redis.Redis.from_url(base, socket_timeout=600)
    client.flushdb()
    used0 = _used(client)
    seen = open_seen_set(f"{base}?key=scale&{query}")
    timed, new, client_cpu, server0 = 0.0, 0, 0.0, _server_cpu(client)
    began = time.time()
    try:
        for k, chunk in enumerate(_chunks(0, n, hosts, port)):
            started, cpu_started = time.perf_counter(), time.process_time()
            new += sum(seen.add_many(chunk))
            timed += time.perf_counter() - started
            client_cpu += time.process_time() - cpu_started
            if k % 100 == 99:
                done = (k + 1) * CHUNK
                log(f"[redis {query}] {done:,} URLs, {done / timed:,.0f} adds/s")
        server_cpu = _server_cpu(client) - server0
        memory, used = _memory(client), _used(client) - used0
        hits, checked = 0, 0
        for chunk in _chunks(n, n + UNSEEN, hosts, port):
            hits += sum(seen.contains_many(chunk))
            checked += len(chunk)
        stats = dict(seen.stats())
    finally:
        seen.close()
        client.flushdb()
        client.close()
    return {
        "row": f"changewatch {query}",
        "urls": n,
        "new": new,
        "adds_per_s": round(n / timed, 1),
        "timed_s": round(timed, 1),
        "wall_s": round(time.time() - began, 1),
        "memory_usage_bytes": memory,
        "bytes_per_url": round(memory / n, 2),
        "used_memory_delta_per_url": round(used / n, 2),
        "unseen_checked": checked,
        "false_positives": hits,
        "false_positive_rate": hits / checked,
        **_cpu(client_cpu, server_cpu, n),
        "stats": {k: v for k, v in stats.items() if isinstance(v, int | float | str)},
    }


def _peer_row(
    base: str, name: str, n: int, hosts: int, port: int, send: Callable[[Any, list[bytes]], None]
) -> dict[str, Any]:
    client = redis.Redis.from_url(base, socket_timeout=600)
    client.flushdb()
    used0 = _used(client)
    timed, client_cpu, server0 = 0.0, 0.0, _server_cpu(client)
    try:
        for chunk in _chunks(0, n, hosts, port):
            digests = [url_digest(u) for u in chunk]
            started, cpu_started = time.perf_counter(), time.process_time()
            send(client, digests)
            timed += time.perf_counter() - started
            client_cpu += time.process_time() - cpu_started
        server_cpu = _server_cpu(client) - server0
        memory, used = _memory(client), _used(client) - used0
    finally:
        client.flushdb()
        client.close()
    log(f"[redis peer {name}] {n / timed:,.0f} adds/s")
    return {
        "row": name,
        "urls": n,
        "adds_per_s": round(n / timed, 1),
        "timed_s": round(timed, 1),
        "bytes_per_url": round(memory / n, 2),
        "used_memory_delta_per_url": round(used / n, 2),
        **_cpu(client_cpu, server_cpu, n),
    }


def _sadd_each(client: Any, digests: list[bytes]) -> None:
    pipe = client.pipeline(transaction=False)
    for d in digests:
        pipe.sadd("peer", d)
    pipe.execute()


def _sadd_variadic(client: Any, digests: list[bytes]) -> None:
    pipe = client.pipeline(transaction=False)
    for i in range(0, len(digests), 1000):
        pipe.sadd("floor", *digests[i : i + 1000])
    pipe.execute()


def _bitfield_each(bits: int, hashes: int) -> Callable[[Any, list[bytes]], None]:
    def send(client: Any, digests: list[bytes]) -> None:
        raw = np.frombuffer(b"".join(digests), dtype="<u8").reshape(-1, 2)
        h1, h2 = raw[:, 0] % np.uint64(bits), raw[:, 1] % np.uint64(bits) | np.uint64(1)
        j = np.arange(hashes, dtype=np.uint64)
        positions = (h1[:, None] + j[None, :] * h2[:, None]) % np.uint64(bits)
        pipe = client.pipeline(transaction=False)
        for row in positions.tolist():
            args: list[Any] = []
            for p in row:
                args += ["SET", "u1", p, 1]
            pipe.execute_command("BITFIELD", "peerbloom", *args)
        pipe.execute()

    return send


def run(
    base: str, n: int, peer_n: int, hosts: int, port: int, keep: Callable[[Any], None]
) -> dict[str, Any]:
    """All rows; the results (see the module). ``keep`` is given the rows after each row."""
    rows: list[dict[str, Any]] = []
    for query in (
        f"kind=bloom&capacity={n}&error_rate=0.01",
        f"kind=bloom&capacity={n}&error_rate=0.001",
        "kind=set",
    ):
        rows.append(_seen_row(base, query, n, hosts, port))
        keep({"rows": rows, "partial": True})
    bits, hashes, _ = bloom_size(n, 0.01)
    rows.append(_peer_row(base, "redis-py SADD pipeline (peer)", peer_n, hosts, port, _sadd_each))
    rows.append(
        _peer_row(
            base,
            f"redis-py BITFIELD SET ×{hashes} pipeline (peer)",
            peer_n,
            hosts,
            port,
            _bitfield_each(bits, hashes),
        )
    )
    rows.append(_peer_row(base, "SADD of 1,000 members (floor)", n, hosts, port, _sadd_variadic))
    started = time.perf_counter()
    for chunk in _chunks(0, min(n, 1_000_000), hosts, port):
        for u in chunk:
            url_digest(u)
    digest_rate = min(n, 1_000_000) / (time.perf_counter() - started)
    rows.append({"row": "url_digest of str URLs (client CPU only)", "adds_per_s": digest_rate})
    print(
        "| row | URLs | adds/s | bytes/URL (MEMORY USAGE) | used_memory Δ/URL | FP rate "
        "| client µs/URL | server µs/URL |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        fp = r.get("false_positive_rate")
        print(
            f"| {r['row']} | {r.get('urls', 0):,} | {r['adds_per_s']:,.0f} | "
            f"{r.get('bytes_per_url', '—')} | {r.get('used_memory_delta_per_url', '—')} | "
            f"{'—' if fp is None else f'{fp:.5f}'} | {r.get('client_cpu_us_per_url', '—')} | "
            f"{r.get('server_cpu_us_per_url', '—')} |"
        )
    return {"rows": rows}
