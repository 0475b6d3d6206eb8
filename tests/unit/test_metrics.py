"""PrometheusObserver and StatsCollector on their own registries: counts, ratio, caching."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from changewatch.metrics import DEDUP_RATIO, PrometheusObserver, StatsCollector, record_reconcile
from changewatch.values import Decision


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def _decision(kind: str, path: str) -> Decision:
    return Decision(kind, "https://example.com/", b"\0" * 16, b"\0" * 32, 0, path=path)  # type: ignore[arg-type]


def test_observer_counts_decisions_marks_and_errors() -> None:
    """Kinds, per-path latency shares, discoveries/hits/ratio and errors land where named."""
    observer = PrometheusObserver()
    reg = observer.registry
    observer.on_decisions([_decision("unchanged", "raw"), _decision("changed", "simhash")], 0.5)
    observer.on_mark_seen(3, 4)
    observer.on_mark_seen(0, 4)
    observer.on_error("store")
    observer.on_error("seen")
    observer.on_error("seen")
    assert _value(reg, "changewatch_decisions_total", kind="unchanged") == 1
    assert _value(reg, "changewatch_decisions_total", kind="new") == 0
    assert _value(reg, "changewatch_should_parse_seconds_sum", path="raw") == 0.25
    assert _value(reg, "changewatch_should_parse_seconds_count", path="changed") == 1
    assert _value(reg, "changewatch_discoveries_total") == 8
    assert _value(reg, "changewatch_seen_hits_total") == 5
    assert _value(reg, DEDUP_RATIO) == 5 / 8
    assert _value(reg, "changewatch_store_errors_total") == 1
    assert _value(reg, "changewatch_seen_errors_total") == 2


def test_record_reconcile_adds_findings_and_refuses_negative_totals() -> None:
    """Findings add up by kind; a negative total is a ValueError naming it."""
    observer = PrometheusObserver()
    record_reconcile({"missing": 2, "stale": 1}, observer)
    record_reconcile({"missing": 1, "vanished": 4}, observer)
    reg = observer.registry
    assert _value(reg, "changewatch_reconcile_findings_total", kind="missing") == 3
    assert _value(reg, "changewatch_reconcile_findings_total", kind="vanished") == 4
    with pytest.raises(ValueError, match="'stale'"):
        record_reconcile({"stale": -1}, observer)


def test_stats_collector_reads_at_most_every_interval() -> None:
    """Scrapes within the interval reuse the last figures; Bloom fill is items / capacity."""
    now = [0.0]
    calls: list[int] = []

    def stats() -> dict[str, Any]:
        calls.append(1)
        seen = {"kind": "file-bloom", "items": 25 * len(calls), "capacity": 100}
        return {"pages": 3, "versions": 4, "fetches": 9, "seen": seen}

    registry = CollectorRegistry()
    registry.register(StatsCollector(stats, interval=10, clock=lambda: now[0]))
    assert _value(registry, "changewatch_bloom_fill_ratio") == 0.25
    now[0] = 5
    assert _value(registry, "changewatch_bloom_fill_ratio") == 0.25
    now[0] = 10
    assert _value(registry, "changewatch_bloom_fill_ratio") == 0.5
    assert _value(registry, "changewatch_store_fetches") == 9
    assert len(calls) == 2
