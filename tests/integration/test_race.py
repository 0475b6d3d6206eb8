"""Concurrent workers (real processes) on one store: the invariants hold under races."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch, url_digest
from changewatch.store.tables import (
    host_template_pages,
    host_templates,
    page_snapshots,
    page_versions,
)

from ._race_workers import (
    TEMPLATE_HOST,
    URL,
    batch_worker,
    noise_worker,
    run_processes,
    same_page_worker,
    template_worker,
)

WORKERS = 8


def _assert_same_page_race(database_url: str) -> None:
    kinds = run_processes(same_page_worker, [(database_url,)] * WORKERS)
    assert Counter(kinds) == {"new": 1, "unchanged": WORKERS - 1}
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            snap = conn.execute(sa.select(page_snapshots)).one()
            versions = conn.execute(sa.select(page_versions)).all()
    finally:
        engine.dispose()
    assert snap.url_digest == url_digest(URL)
    assert (snap.fetch_count, snap.version_count) == (WORKERS, 1)
    assert [(v.version_no, v.kind) for v in versions] == [(1, "new")]


@pytest.mark.postgres
@pytest.mark.slow
def test_same_new_page_from_eight_processes_on_postgres(
    make_pg_database: Callable[..., str],
) -> None:
    """8 processes, same new page at once (Postgres): one "new", 7 "unchanged", one version."""
    _assert_same_page_race(make_pg_database())


@pytest.mark.slow
def test_same_new_page_from_eight_processes_on_sqlite(tmp_path: Path) -> None:
    """8 processes, same new page at once (SQLite file): one "new", 7 "unchanged", one version."""
    url = f"sqlite:///{tmp_path}/race.db"
    ChangeWatch(database_url=url, seen_url="memory:").close()  # create the schema first
    _assert_same_page_race(url)


@pytest.mark.postgres
@pytest.mark.slow
def test_overlapping_batches_from_eight_processes_keep_the_invariants(
    make_pg_database: Callable[..., str],
) -> None:
    """8 processes × overlapping random batches: counts and version rows match the decisions."""
    database_url = make_pg_database()
    rounds = 3
    reports = run_processes(batch_worker, [(database_url, seed, rounds) for seed in range(WORKERS)])
    calls: Counter[str] = Counter()
    versions_decided: Counter[str] = Counter()
    for report in reports:
        for url, kind in report:
            calls[url] += 1
            if kind != "unchanged":
                versions_decided[url] += 1
    assert sum(calls.values()) == WORKERS * rounds * 53
    assert sum(1 for r in reports for _, kind in r if kind == "new") == len(calls)

    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            snaps = {bytes(r.url_digest): r for r in conn.execute(sa.select(page_snapshots))}
            rows = conn.execute(
                sa.select(
                    page_versions.c.url_digest, page_versions.c.version_no, page_versions.c.kind
                )
            ).all()
    finally:
        engine.dispose()
    numbers: defaultdict[bytes, list[int]] = defaultdict(list)
    kinds: defaultdict[bytes, list[str]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (bytes(r.url_digest), r.version_no)):
        numbers[bytes(row.url_digest)].append(row.version_no)
        kinds[bytes(row.url_digest)].append(row.kind)

    assert sum(s.fetch_count for s in snaps.values()) == sum(calls.values())
    assert set(snaps) == {url_digest(u) for u in calls}
    for url, n_calls in calls.items():
        digest = url_digest(url)
        snap = snaps[digest]
        assert snap.fetch_count == n_calls, url
        assert snap.version_count == versions_decided[url], url
        assert numbers[digest] == list(range(1, versions_decided[url] + 1)), url
        assert kinds[digest][0] == "new", url
        assert "new" not in kinds[digest][1:], url


def _assert_noise_counts_add_up(database_url: str) -> None:
    run_processes(noise_worker, [(database_url, 10)] * 4)
    with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
        rules = {r["kind"]: r for r in watch.noise_rules("race.example")}
    assert (rules["key"]["observations"], rules["key"]["changes"]) == (80, 40)
    assert (rules["shape"]["observations"], rules["shape"]["changes"]) == (40, 40)
    assert rules["key"]["learned_at"] is not None  # met the thresholds on the way
    assert rules["key"]["path"] == "body/div"


@pytest.mark.postgres
@pytest.mark.slow
def test_noise_counts_from_four_processes_add_up_on_postgres(
    make_pg_database: Callable[..., str],
) -> None:
    """4 processes × 10 upserts of the same noise rules at once: no count is lost."""
    _assert_noise_counts_add_up(make_pg_database())


@pytest.mark.slow
def test_noise_counts_from_four_processes_add_up_on_sqlite(tmp_path: Path) -> None:
    """The same on one SQLite file."""
    url = f"sqlite:///{tmp_path}/noise.db"
    ChangeWatch(database_url=url, seen_url="memory:").close()  # create the schema first
    _assert_noise_counts_add_up(url)


def _assert_template_counts_add_up(database_url: str) -> None:
    """4 processes fetch the same 30 pages with their own promo lines: every value's
    ``pages`` is exactly the number of sampled pages whose row holds it (0 only for a learned
    slot kept for its key)."""
    run_processes(template_worker, [(database_url, w) for w in range(4)])
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            blobs = conn.execute(
                sa.select(host_template_pages.c.template_values).where(
                    host_template_pages.c.host == TEMPLATE_HOST
                )
            ).scalars()
            held: Counter[bytes] = Counter()
            for blob in blobs:
                held.update(bytes(blob)[i : i + 8] for i in range(0, len(blob), 8))
            rows = conn.execute(
                sa.select(
                    host_templates.c.value,
                    host_templates.c.pages,
                    host_templates.c.kind,
                    host_templates.c.learned_at,
                ).where(host_templates.c.host == TEMPLATE_HOST)
            ).all()
            sampled = conn.execute(
                sa.select(sa.func.count()).where(host_template_pages.c.host == TEMPLATE_HOST)
            ).scalar_one()
    finally:
        engine.dispose()
    assert sampled == 30
    assert {bytes(r.value): r.pages for r in rows if r.pages} == dict(held)
    # A learned slot no page holds stays, as its key's hold on being template.
    assert all(r.kind == "slot" and r.learned_at for r in rows if not r.pages)
    assert sum(held.values()) > 0


@pytest.mark.postgres
@pytest.mark.slow
def test_template_counts_from_four_processes_add_up_on_postgres(
    make_pg_database: Callable[..., str],
) -> None:
    """Racing template counts on Postgres: none lost, none doubled."""
    _assert_template_counts_add_up(make_pg_database())


@pytest.mark.slow
def test_template_counts_from_four_processes_add_up_on_sqlite(tmp_path: Path) -> None:
    """The same on one SQLite file."""
    url = f"sqlite:///{tmp_path}/templates.db"
    ChangeWatch(database_url=url, seen_url="memory:").close()  # create the schema first
    _assert_template_counts_add_up(url)
