"""Retention while crawlers write: writer and pruner processes on one store."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch, url_digest
from changewatch.store.tables import page_snapshots, page_versions

from .._prune_workers import counting_writer, dispatch, pruner, writer
from .._race_workers import run_processes as _run

WRITERS = 4
PRUNERS = 2
ROUNDS = 6


@pytest.mark.slow
def test_pruning_beside_writers_keeps_every_invariant(
    make_database_url: Callable[..., str],
) -> None:
    """4 writers and 2 pruners at once: counts stay exact, no current or latest-2 row is lost,
    and every version ever made is either still stored or was reported removed exactly once."""
    url = make_database_url()
    ChangeWatch(database_url=url, seen_url="memory:").close()  # schema first (SQLite)
    jobs: list[tuple[Callable[..., None], tuple[object, ...]]] = [
        (writer, (url, seed, ROUNDS)) for seed in range(WRITERS)
    ] + [(pruner, (url, ROUNDS * 3))] * PRUNERS
    outcomes = _run(dispatch, [(target, args) for target, args in jobs])
    assert sorted(type(r).__name__ for r in outcomes) == ["int"] * PRUNERS + ["list"] * WRITERS
    writes = [o for o in outcomes if isinstance(o, list)]
    pruned = sum(o for o in outcomes if isinstance(o, int))

    calls: Counter[str] = Counter()
    made: Counter[str] = Counter()
    for report in writes:
        for page_url, kind in report:
            calls[page_url] += 1
            made[page_url] += kind != "unchanged"
    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        final = watch.prune(2, timedelta(0)).removed
        engine = watch.store.engine
        with engine.connect() as conn:
            snaps = {bytes(r.url_digest): r for r in conn.execute(sa.select(page_snapshots))}
            rows = conn.execute(
                sa.select(page_versions.c.url_digest, page_versions.c.version_no)
            ).all()
    stored: defaultdict[bytes, list[int]] = defaultdict(list)
    for digest, number in rows:
        stored[bytes(digest)].append(number)
    for page_url, n in calls.items():
        snap = snaps[url_digest(page_url)]
        assert snap.fetch_count == n, page_url
        assert snap.version_count == made[page_url], page_url
        latest = list(range(max(1, made[page_url] - 1), made[page_url] + 1))
        assert sorted(stored[url_digest(page_url)]) == latest, page_url
    assert pruned + final + len(rows) == sum(made.values())
    assert pruned > 0  # the pruners did run beside the writers


@pytest.mark.slow
def test_sqlite_batches_of_overlapping_pages_never_lose_a_race(tmp_path: Path) -> None:
    """On SQLite a batch holds the write lock from its first read, so 4 workers deciding
    overlapping batches wait for each other instead of deciding on a state another batch
    then changes: no batch is ever decided twice (it lost 10 races in a row under load)."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    ChangeWatch(database_url=url, seen_url="memory:").close()
    lost = _run(counting_writer, [(url, seed, 8) for seed in range(WRITERS)])
    assert lost == [0] * WRITERS
