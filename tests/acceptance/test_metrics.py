"""Metrics after a demo run: every metric on a real HTTP ``/metrics`` endpoint on 127.0.0.1."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from changewatch import ChangeWatch
from changewatch.demo import run_demo
from changewatch.metrics import (
    DEDUP_RATIO,
    METRIC_NAMES,
    PrometheusObserver,
    StatsCollector,
    record_reconcile,
    serve,
)
from changewatch.observe import path_group

from ._cli import clean_env, script

SERVE_TIMEOUT_S = 30


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a real /metrics page, keyed by (name, sorted labels)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def _value(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def _names(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> set[str]:
    return {name for name, _ in samples}


def _bloom_seen_url(path: Path) -> str:
    return f"file:{quote(str(path))}?kind=bloom&capacity=50&error_rate=0.01"


def test_metrics_endpoint_exposes_every_metric_after_a_demo_run(tmp_path: Path) -> None:
    """Demo with a PrometheusObserver, then /metrics over HTTP: every name, non-zero values."""
    registry = CollectorRegistry()
    observer = PrometheusObserver(registry)
    report = run_demo(tmp_path / "demo", observer=observer)
    record_reconcile({"missing": 2, "stale": 1, "vanished": 0}, observer)

    decided = [p for crawl in report.crawls for p in crawl.pages if p.kind != "gone"]
    urls = [p.url for p in decided]
    # A Bloom seen-set holding the demo's URLs, for the fill and false-positive gauges.
    watch = ChangeWatch(
        f"sqlite:///{tmp_path / 'demo' / 'cw.db'}", _bloom_seen_url(tmp_path / "bloom.seen")
    )
    watch.mark_seen_many(urls)
    registry.register(StatsCollector(watch.stats, interval=0))
    server, port = serve(registry, 0)
    try:
        samples = _scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        server.shutdown()
        server.server_close()
        watch.close()

    for name in METRIC_NAMES:
        assert any(n == name or n.startswith(name + "_") for n in _names(samples)), name
    # No URL ever reaches a label: only kinds, latency paths and histogram buckets.
    assert {key for _, labels in samples for key, _ in labels} <= {"kind", "path", "le"}
    assert not any("://" in value for _, labels in samples for _, value in labels)
    counts = {
        kind: sum(1 for p in decided if p.kind == kind)
        for kind in ("new", "unchanged", "minor", "changed")
    }
    for kind, n in counts.items():
        assert n > 0, kind  # the demo shows every kind
        assert _value(samples, "changewatch_decisions_total", kind=kind) == n
    for group in ("raw", "normalised", "changed"):
        expected = sum(1 for p in decided if path_group(p.decided_by) == group)
        assert _value(samples, "changewatch_should_parse_seconds_count", path=group) == expected
    assert _value(samples, "changewatch_should_parse_seconds_count", path="normalised") > 0
    assert _value(samples, "changewatch_should_parse_seconds_count", path="changed") > 0
    discoveries = _value(samples, "changewatch_discoveries_total")
    hits = _value(samples, "changewatch_seen_hits_total")
    assert discoveries > hits > 0
    assert _value(samples, DEDUP_RATIO) == pytest.approx(hits / discoveries)
    assert _value(samples, "changewatch_reconcile_findings_total", kind="missing") == 2
    assert _value(samples, "changewatch_store_errors_total") == 0
    assert _value(samples, "changewatch_seen_errors_total") == 0
    assert _value(samples, "changewatch_store_fetches") == len(decided)
    assert _value(samples, "changewatch_store_pages") == counts["new"]
    items = _value(samples, "changewatch_seen_items")
    assert 0 < items <= len(set(urls))
    assert _value(samples, "changewatch_bloom_fill_ratio") == pytest.approx(items / 50)
    assert 0 < _value(samples, "changewatch_seen_estimated_false_positive_rate") < 0.01


def test_metrics_serve_command_serves_store_and_seen_figures(tmp_path: Path) -> None:
    """``changewatch metrics serve --port 0`` answers /metrics with the store's counts."""
    report = run_demo(tmp_path / "demo")
    fetched = sum(1 for crawl in report.crawls for p in crawl.pages if p.kind != "gone")
    database_url = f"sqlite:///{tmp_path / 'demo' / 'cw.db'}"
    seen_url = _bloom_seen_url(tmp_path / "bloom.seen")
    with ChangeWatch(database_url, seen_url) as watch:
        watch.mark_seen_many([f"https://example.com/{i}" for i in range(10)])
    args = ["--database-url", database_url, "--seen-url", seen_url, "metrics", "serve"]
    with subprocess.Popen(
        [script(), *args, "--port", "0", "--interval", "0"],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stderr is not None
            deadline = time.monotonic() + SERVE_TIMEOUT_S
            line = ""
            while "serving metrics on " not in line and time.monotonic() < deadline:
                line = proc.stderr.readline()
                assert line or proc.poll() is None, "metrics serve exited"
            url = line.strip().rpartition(" ")[2]
            assert url.startswith("http://127.0.0.1:"), line
            assert url.endswith("/metrics"), line
            samples = _scrape(url)
        finally:
            proc.terminate()
            proc.wait(timeout=SERVE_TIMEOUT_S)
    assert _value(samples, "changewatch_store_fetches") == fetched
    assert _value(samples, "changewatch_seen_items") == 10
    assert _value(samples, "changewatch_bloom_fill_ratio") == pytest.approx(10 / 50)


def test_metrics_serve_names_a_missing_port(tmp_path: Path) -> None:
    """``metrics serve`` without --port is a usage error (exit 2)."""
    proc = subprocess.run(
        [script(), "metrics", "serve"],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=SERVE_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 2
    assert "--port" in proc.stderr
