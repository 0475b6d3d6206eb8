"""Load: 8 worker processes × N pages through should_parse on Postgres; every counter adds up.

A small N keeps CI fast; ``benchmarks/load.py`` runs the same workload at N = 20,000.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from integration._race_workers import run_processes

from ._history import read_state
from ._load import LoadReport, check_store, load_worker

WORKERS = 8
PAGES = 300
POOL = 100


@pytest.mark.postgres
@pytest.mark.slow
def test_eight_workers_overlapping_pages_keep_every_counter(
    make_pg_database: Callable[..., str],
) -> None:
    """fetch_count = calls, versions = new+changed+minor decisions, version_no contiguous."""
    database_url = make_pg_database()
    details = run_processes(
        load_worker, [(database_url, seed, PAGES, POOL) for seed in range(WORKERS)]
    )
    report = LoadReport.merge(details)
    assert sum(report.calls.values()) == WORKERS * PAGES
    assert report.kinds["changed"] + report.kinds["minor"] > 0  # content really changed
    assert report.kinds["unchanged"] > 0
    check_store(report, read_state(database_url))
    print(
        f"load: {WORKERS}×{PAGES} pages, {report.throughput:.0f} pages/s, "
        f"p50 {report.percentile(0.5) * 1000:.1f} ms, p99 {report.percentile(0.99) * 1000:.1f} ms"
    )
