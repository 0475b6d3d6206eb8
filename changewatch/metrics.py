"""Prometheus metrics for changewatch (the optional ``metrics`` extra: ``prometheus_client``).

Two sources feed one registry:

* :class:`PrometheusObserver`, handed to ``ChangeWatch(observer=...)``, counts what the
  process does, as it does it;
* :class:`StatsCollector` reads ``ChangeWatch.stats()`` (store and seen-set figures) when
  scraped, at most every ``interval`` seconds — for ``changewatch metrics serve``.

=============================================  =========  ======================================
metric                                         type       meaning
=============================================  =========  ======================================
``changewatch_discoveries_total``              counter    URLs given to ``mark_seen``
``changewatch_seen_hits_total``                counter    of those, already in the seen-set
``crawl_dedup_hit_ratio``                      gauge      hits / discoveries
``changewatch_decisions_total{kind}``          counter    should_parse answers by kind
``changewatch_should_parse_seconds{path}``     histogram  per-page latency: ``raw`` fast path,
                                                          ``normalised``, ``changed`` (SimHash)
``changewatch_store_errors_total``             counter    StoreError raised by should_parse
``changewatch_seen_errors_total``              counter    seen-set (Redis, file) failures
``changewatch_reconcile_findings_total{kind}`` counter    sitemap reconciliation findings
``changewatch_bloom_fill_ratio``               gauge      items / capacity of a Bloom seen-set
``changewatch_seen_estimated_false_positive_rate``  gauge  from the real fill
``changewatch_seen_items``                     gauge      URLs in the seen-set
``changewatch_store_pages`` / ``_versions`` /  gauge      store counters
``_fetches``
=============================================  =========  ======================================

Crawler workers in several processes use prometheus_client's multiprocess mode: set
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory shared by the workers *before* they start
(prometheus_client reads it on import), build ``PrometheusObserver(multiprocess=True)`` in
each worker, and expose the sum with ``changewatch metrics serve --multiprocess`` (or
:func:`multiprocess_registry`). Counters and histograms add up across workers; the dedup
ratio is then computed from the summed counters at scrape time. Empty the directory between
runs, and call :func:`mark_process_dead` when a worker exits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import start_http_server
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from changewatch.observe import Observer, path_group
from changewatch.values import KINDS, Decision

__all__ = [
    "DEDUP_RATIO",
    "LATENCY_BUCKETS_S",
    "METRIC_NAMES",
    "PrometheusObserver",
    "StatsCollector",
    "default_observer",
    "mark_process_dead",
    "multiprocess_registry",
    "record_reconcile",
    "serve",
]

DEDUP_RATIO = "crawl_dedup_hit_ratio"
#: Histogram buckets for should_parse latency, 50 µs to 5 s.
LATENCY_BUCKETS_S = (
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)
#: Reconciliation finding kinds (see the reconcile job): counted even when zero.
RECONCILE_KINDS = ("missing", "stale", "vanished", "fresh")
#: Every metric family name exposed (as text: counters get ``_total``).
METRIC_NAMES = (
    "changewatch_discoveries_total",
    "changewatch_seen_hits_total",
    DEDUP_RATIO,
    "changewatch_decisions_total",
    "changewatch_should_parse_seconds",
    "changewatch_store_errors_total",
    "changewatch_seen_errors_total",
    "changewatch_reconcile_findings_total",
    "changewatch_bloom_fill_ratio",
    "changewatch_seen_estimated_false_positive_rate",
    "changewatch_seen_items",
    "changewatch_store_pages",
    "changewatch_store_versions",
    "changewatch_store_fetches",
)


class PrometheusObserver(Observer):
    """An :class:`~changewatch.observe.Observer` that keeps Prometheus metrics.

    ``registry`` receives the metrics (a new :class:`CollectorRegistry` if not given; pass
    ``prometheus_client.REGISTRY`` to use the global one). With ``multiprocess=True`` the
    values go to ``PROMETHEUS_MULTIPROC_DIR`` files instead and the dedup ratio is left to the
    exposing process (:func:`multiprocess_registry`).
    """

    def __init__(
        self, registry: CollectorRegistry | None = None, *, multiprocess: bool = False
    ) -> None:
        self.multiprocess = multiprocess
        self.registry = registry if registry is not None else CollectorRegistry()
        reg = None if multiprocess else self.registry
        self.discoveries = Counter(
            "changewatch_discoveries", "URLs given to mark_seen.", registry=reg
        )
        self.seen_hits = Counter(
            "changewatch_seen_hits", "URLs mark_seen found already seen.", registry=reg
        )
        self.dedup_ratio: Gauge | None = None
        if not multiprocess:
            self.dedup_ratio = Gauge(DEDUP_RATIO, "Seen-set hits / discoveries.", registry=reg)
        self.decisions = Counter(
            "changewatch_decisions", "should_parse decisions by kind.", ["kind"], registry=reg
        )
        self.latency = Histogram(
            "changewatch_should_parse_seconds",
            "should_parse latency per page, by path (raw, normalised, changed).",
            ["path"],
            buckets=LATENCY_BUCKETS_S,
            registry=reg,
        )
        self.store_errors = Counter(
            "changewatch_store_errors", "StoreError raised by should_parse.", registry=reg
        )
        self.seen_errors = Counter(
            "changewatch_seen_errors", "Seen-set (Redis, file) failures.", registry=reg
        )
        self.reconcile_findings = Counter(
            "changewatch_reconcile_findings",
            "Sitemap reconciliation findings by kind.",
            ["kind"],
            registry=reg,
        )
        for decision_kind in KINDS:
            self.decisions.labels(decision_kind)
        for group in ("raw", "normalised", "changed"):
            self.latency.labels(group)
        for kind in RECONCILE_KINDS:
            self.reconcile_findings.labels(kind)
        self._lock = threading.Lock()
        self._discovered = 0
        self._hits = 0

    def on_decisions(self, decisions: Sequence[Decision], seconds: float) -> None:
        """Count each decision by kind; observe its share of the call's time by path."""
        if not decisions:
            return
        share = seconds / len(decisions)
        for d in decisions:
            self.decisions.labels(d.kind).inc()
            self.latency.labels(path_group(d.path)).observe(share)

    def on_mark_seen(self, new_count: int, total: int) -> None:
        """Count discoveries and hits, and update the dedup ratio."""
        hits = total - new_count
        self.discoveries.inc(total)
        self.seen_hits.inc(hits)
        if self.dedup_ratio is not None:
            with self._lock:
                self._discovered += total
                self._hits += hits
                if self._discovered:
                    self.dedup_ratio.set(self._hits / self._discovered)

    def on_error(self, kind: str) -> None:
        """Count a store or seen-set failure."""
        (self.store_errors if kind == "store" else self.seen_errors).inc()

    def record_reconcile(self, totals: Mapping[str, int]) -> None:
        """Add a reconciliation run's findings: ``{"missing": n, "stale": n, "vanished": n}``…"""
        for kind, count in totals.items():
            if count < 0:
                raise ValueError(f"reconcile total {kind!r} is negative: {count}")
            self.reconcile_findings.labels(kind).inc(count)


_default: PrometheusObserver | None = None
_default_lock = threading.Lock()


def default_observer() -> PrometheusObserver:
    """One observer per process on the global ``prometheus_client.REGISTRY``."""
    global _default
    with _default_lock:
        if _default is None:
            from prometheus_client import REGISTRY

            _default = PrometheusObserver(REGISTRY)
        return _default


def record_reconcile(totals: Mapping[str, int], observer: PrometheusObserver | None = None) -> None:
    """Count a reconciliation run's findings by kind (on :func:`default_observer` if none)."""
    (observer or default_observer()).record_reconcile(totals)


class StatsCollector(Collector):
    """Gauges from ``stats()`` (``ChangeWatch.stats``), read at most every ``interval`` s.

    The Bloom fill is ``items / capacity`` (0 for exact sets and scalable filters, which
    have no fixed capacity); the false-positive rate is the seen-set's own estimate from the
    real fill. A failing ``stats()`` keeps the last figures and counts nothing new.
    """

    def __init__(
        self,
        stats: Callable[[], Mapping[str, Any]],
        interval: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stats = stats
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: Mapping[str, Any] | None = None
        self._read_at = 0.0

    def read(self) -> Mapping[str, Any]:
        """The current stats, re-read when older than the interval."""
        with self._lock:
            now = self._clock()
            if self._cached is None or now - self._read_at >= self._interval:
                self._cached = self._stats()
                self._read_at = now
            return self._cached

    def collect(self) -> Iterator[Metric]:
        stats = self.read()
        seen: Mapping[str, Any] = stats.get("seen") or {}
        items = float(seen.get("items") or 0)
        capacity = seen.get("capacity")
        bloom = "bloom" in str(seen.get("kind", ""))
        fill = items / capacity if bloom and capacity else 0.0
        yield _gauge("changewatch_bloom_fill_ratio", "Bloom seen-set items / capacity.", fill)
        yield _gauge(
            "changewatch_seen_estimated_false_positive_rate",
            "Seen-set false-positive rate estimated from its fill.",
            float(seen.get("estimated_error_rate") or 0.0),
        )
        yield _gauge("changewatch_seen_items", "URLs in the seen-set.", items)
        for key in ("pages", "versions", "fetches"):
            yield _gauge(
                f"changewatch_store_{key}", f"Store {key} (from stats).", float(stats.get(key, 0))
            )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class _RatioCollector(Collector):
    """``crawl_dedup_hit_ratio`` from the summed multiprocess counters."""

    def __init__(self, source: Collector) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        totals: dict[str, float] = {}
        for family in self._source.collect():
            for sample in family.samples:
                totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
        discovered = totals.get("changewatch_discoveries_total", 0.0)
        hits = totals.get("changewatch_seen_hits_total", 0.0)
        ratio = hits / discovered if discovered else 0.0
        yield _gauge(DEDUP_RATIO, "Seen-set hits / discoveries.", ratio)


def multiprocess_registry(path: str | None = None) -> CollectorRegistry:
    """A registry summing every worker's ``PROMETHEUS_MULTIPROC_DIR`` files, plus the ratio."""
    registry = CollectorRegistry()
    source = multiprocess.MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    registry.register(_RatioCollector(source))
    return registry


def mark_process_dead(pid: int, path: str | None = None) -> None:
    """Tell multiprocess mode a worker exited (drops its live gauges)."""
    multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]


def serve(registry: CollectorRegistry, port: int, addr: str = "127.0.0.1") -> tuple[Any, int]:
    """Serve ``/metrics`` from ``registry`` on a daemon thread; ``(server, port)``.

    ``port=0`` picks a free port, returned. Stop it with ``server.shutdown()`` then
    ``server.server_close()``.
    """
    server, _thread = start_http_server(port, addr=addr, registry=registry)
    return server, int(server.server_address[1])
