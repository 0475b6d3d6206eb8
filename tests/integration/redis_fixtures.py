"""Helpers of the Redis seen-set tests: the test server, per-test keys, and the race runner.

Plain functions rather than fixtures, so both test modules can build their own fixtures on
them without importing fixture names. The server is ``CHANGEWATCH_TEST_REDIS_URL`` (default
``redis://127.0.0.1:6379/15``); without it the tests skip, except under ``CI=true``.
"""

from __future__ import annotations

import os
import re
import uuid
from collections import Counter
from typing import Any

import numpy as np
import pytest
import redis

from ._race_workers import run_processes
from ._redis_workers import add_worker, ageing_add_worker, race_sample

DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/15"


def in_ci() -> bool:
    """Whether this is a CI run, where a missing service fails instead of skipping."""
    return os.environ.get("CI", "").lower() == "true"


def skip_or_fail(message: str) -> None:
    """Skip locally, fail under ``CI=true``."""
    if in_ci():
        pytest.fail(message)
    pytest.skip(message)


def redis_test_url() -> str:
    """The test server's URL, checked to answer PING (skips or fails otherwise)."""
    url = os.environ.get("CHANGEWATCH_TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        skip_or_fail(f"Redis at {url.rpartition('@')[2]} is unreachable: {exc.__class__.__name__}")
    finally:
        client.close()
    return url


def unique_key(name: str) -> str:
    """A key prefix no other test (or run) uses: ``cwtest:<name>:<random>``."""
    return f"cwtest:{re.sub(r'[^A-Za-z0-9_-]+', '-', name)[:40]}:{uuid.uuid4().hex[:12]}"


def delete_keys(client: Any, prefix: str) -> int:
    """Delete every key starting with ``prefix`` (one node or a whole cluster)."""
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    for key in keys:
        client.delete(key)
    return len(keys)


def with_query(url: str, query: str) -> str:
    """``url`` with ``query`` appended (``?`` or ``&``)."""
    return f"{url}{'&' if '?' in url else '?'}{query}"


def run_race(
    url: str, *, workers: int, total: int, sample: int, batch: int
) -> tuple[list[np.ndarray], set[int]]:
    """``workers`` spawned processes add overlapping samples of ``total`` digests at once.

    Returns each worker's indices answered new, and the union of the indices added.
    """
    details = run_processes(
        add_worker, [(url, seed, total, sample, batch) for seed in range(workers)]
    )
    added = {i for seed in range(workers) for i in race_sample(seed, total, sample)}
    return [np.frombuffer(detail, dtype=np.int32) for detail in details], added


def assert_exact_race(news: list[np.ndarray], added: set[int]) -> None:
    """Every digest added by any worker was answered new exactly once, by one worker."""
    counts = Counter(int(i) for new in news for i in new)
    assert set(counts) == added
    assert max(counts.values()) == 1


def assert_bloom_race(news: list[np.ndarray], added: set[int], error_rate: float) -> None:
    """No digest was answered new twice; at most a ``2p`` share were lost to false positives."""
    counts = Counter(int(i) for new in news for i in new)
    assert max(counts.values()) == 1
    assert set(counts) <= added
    assert len(added) * (1 - 2 * error_rate) <= sum(counts.values()) <= len(added)


def run_ageing_race(
    url: str, *, window_s: float, workers: int, total: int, sample: int, batch: int
) -> tuple[list[np.ndarray], set[int], set[tuple[int, int]]]:
    """:func:`run_race` with clocks that cross a generation boundary 0.3 s into the race.

    Returns each worker's indices answered new, the union added, and each worker's (first,
    last) generation.
    """
    details = run_processes(
        ageing_add_worker,
        [(url, window_s, 0.3, seed, total, sample, batch) for seed in range(workers)],
    )
    added = {i for seed in range(workers) for i in race_sample(seed, total, sample)}
    news = [np.frombuffer(new, dtype=np.int32) for new, _ in details]
    return news, added, {tuple(spans) for _, spans in details}
