"""Multiprocess metrics: several worker processes, one /metrics endpoint, counters that add up."""

from __future__ import annotations

import multiprocessing
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from changewatch.metrics import DEDUP_RATIO, multiprocess_registry, serve

from ._metrics_workers import metrics_worker

WORKERS = 3
TIMEOUT_S = 90


def test_counters_from_worker_processes_add_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3 processes in multiprocess mode: the served sums equal what the workers were told."""
    metrics_dir = tmp_path / "prom"
    metrics_dir.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(metrics_dir))
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [
        ctx.Process(target=metrics_worker, args=(str(tmp_path), seed, results))
        for seed in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    try:
        outcomes = [results.get(timeout=TIMEOUT_S) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=TIMEOUT_S)
        results.close()
        results.join_thread()
    errors = [detail for status, detail in outcomes if status != "ok"]
    assert not errors, "\n".join(map(str, errors))
    told: Counter[str] = Counter()
    for _, detail in outcomes:
        told.update(detail)
    assert told["new"] > 0
    assert told["unchanged"] > 0
    assert told["changed"] > 0
    assert len(list(metrics_dir.glob("*.db"))) >= WORKERS  # one file set per process

    server, port = serve(multiprocess_registry(str(metrics_dir)), 0)
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

    assert samples[("changewatch_discoveries_total", ())] == told["discoveries"]
    assert samples[("changewatch_seen_hits_total", ())] == told["hits"]
    assert samples[(DEDUP_RATIO, ())] == pytest.approx(told["hits"] / told["discoveries"])
    for kind in ("new", "unchanged", "minor", "changed"):
        assert samples[("changewatch_decisions_total", (("kind", kind),))] == told[kind], kind
    decided = sum(told[k] for k in ("new", "unchanged", "minor", "changed"))
    latency = sum(
        samples[("changewatch_should_parse_seconds_count", (("path", p),))]
        for p in ("raw", "normalised", "changed")
    )
    assert latency == decided
