"""Concurrent workers (real processes): 304s, validators, texts and estimates stay consistent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch, url_digest
from changewatch.schedule import change_rate, rate_band
from changewatch.store.tables import page_snapshots, page_texts, page_versions

from .._race_workers import run_processes as _run
from .._schedule_workers import body, mixed_worker, urls

WORKERS = 4
ROUNDS = 40


@pytest.mark.slow
def test_mixed_fetches_from_four_processes(make_database_url: Callable[..., str]) -> None:
    """4 processes × bodies, 304s and batches: counts, change counts, rates and texts agree."""
    database_url = make_database_url()
    with ChangeWatch(database_url=database_url, seen_url="memory:", store_text=True) as watch:
        watch.should_parse_many([(url, body(i, 0)) for i, url in enumerate(urls())])
    reports = _run(mixed_worker, [(database_url, seed, ROUNDS) for seed in range(WORKERS)])
    calls = Counter(url for report in reports for url in report)

    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            snaps = {bytes(r.url_digest): r for r in conn.execute(sa.select(page_snapshots))}
            contents = set(conn.execute(sa.select(page_versions.c.content_sha256)).scalars())
            texts = set(conn.execute(sa.select(page_texts.c.content_sha256)).scalars())
    finally:
        engine.dispose()
    assert {bytes(c) for c in contents} == {bytes(t) for t in texts}
    for url in urls():
        snap = snaps[url_digest(url)]
        assert snap.fetch_count == calls[url] + 1, url
        assert snap.change_count == snap.version_count - 1, url
        days = (snap.last_seen - snap.first_seen) / timedelta(days=1)
        expected = change_rate(snap.fetch_count - 1, snap.change_count, days)
        # Spans here are seconds: SQLite's julianday() resolves about 50 µs of them.
        assert snap.change_rate == pytest.approx(expected, rel=1e-3), url
        assert snap.rate_band == rate_band(snap.change_rate), url
        assert snap.etag is not None
