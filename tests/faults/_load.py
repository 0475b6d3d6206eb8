"""The load workload: worker processes × N pages through ``should_parse`` on one store.

Shared by tests/faults/test_load.py (small N) and benchmarks/load.py (N = 20,000). Free of
pytest imports: workers run in spawned processes (:func:`integration._race_workers.run_processes`).
Each worker draws URLs from one pool shared by all workers (so they overlap and race), with a
random one of three contents per fetch (the base page, a one-word edit, a rewrite), and
reports exactly what it was told: calls and non-``unchanged`` decisions per URL, decision
kinds, and every call's latency.
"""

from __future__ import annotations

import random
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from integration._race_workers import _variant

from changewatch import ChangeWatch, url_digest

from ._history import StoreState


def pool(size: int) -> list[str]:
    """The URLs every worker draws from."""
    return [f"https://example.com/pool/{i}" for i in range(size)]


def load_worker(
    database_url: str, seed: int, pages: int, pool_size: int, barrier: Any, results: Any
) -> None:
    """``pages`` should_parse calls on random pool URLs and contents; report what was told."""
    try:
        rng = random.Random(seed)
        urls = pool(pool_size)
        calls: Counter[str] = Counter()
        versions: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        latencies: list[float] = []
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            bodies = {(u, n): _variant(u, n) for u in urls for n in range(3)}
            barrier.wait(timeout=120)
            started = time.perf_counter()
            for _ in range(pages):
                url = rng.choice(urls)
                body = bodies[(url, rng.randrange(3))]
                t0 = time.perf_counter()
                decision = watch.should_parse(url, body)
                latencies.append(time.perf_counter() - t0)
                calls[url] += 1
                kinds[decision.kind] += 1
                if decision:
                    versions[url] += 1
            elapsed = time.perf_counter() - started
        results.put(("ok", (dict(calls), dict(versions), dict(kinds), latencies, elapsed)))
    except BaseException:
        results.put(("error", traceback.format_exc()))


@dataclass
class LoadReport:
    """What the workers were told, summed, and the latency and throughput figures."""

    calls: Counter[str] = field(default_factory=Counter)
    versions: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    wall_s: float = 0.0

    @classmethod
    def merge(cls, details: list[Any]) -> LoadReport:
        """Sum the workers' reports; the wall time is the slowest worker's (after the barrier)."""
        report = cls()
        for calls, versions, kinds, latencies, elapsed in details:
            report.calls.update(calls)
            report.versions.update(versions)
            report.kinds.update(kinds)
            report.latencies.extend(latencies)
            report.wall_s = max(report.wall_s, elapsed)
        return report

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def throughput(self) -> float:
        return sum(self.calls.values()) / self.wall_s


def check_store(report: LoadReport, state: StoreState) -> None:
    """Every store counter equals what the workers were told; versions contiguous."""
    assert set(state.fetches) == {url_digest(u) for u in report.calls}
    for url, n in report.calls.items():
        digest = url_digest(url)
        assert state.fetches[digest] == n, url
        assert state.version_counts[digest] == report.versions[url], url
    state.assert_contiguous()
    rows = sum(len(v) for v in state.versions.values())
    assert rows == report.kinds["new"] + report.kinds["changed"] + report.kinds["minor"]
    assert sum(state.fetches.values()) == sum(report.calls.values())
    assert report.kinds["new"] == len(report.calls)
