"""``sqlite:///:memory:`` is one store for every thread of the process (issue 15)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.errors import StoreError
from changewatch.store import open_store
from changewatch.store.tables import page_snapshots, page_versions

THREADS = 6
CALLS = 100


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite://"])
def test_threads_share_one_in_memory_store(url: str) -> None:
    """6 threads × 100 should_parse calls on one in-memory store: every call succeeds, each
    thread's writes are seen by the others, and every counter is exact (before: 600 of 600
    calls from other threads failed, 'no such table: page_snapshots')."""
    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        watch.should_parse("https://example.com/main", "<p>from the main thread</p>")
        start = threading.Barrier(THREADS)

        def work(worker: int) -> list[str]:
            start.wait()
            kinds = []
            for i in range(CALLS):
                page = f"https://example.com/{i % 10}"
                kinds.append(watch.should_parse(page, f"<p>{i} by {worker % 2}</p>").kind)
            return kinds

        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(work, range(THREADS)))
        kinds = [kind for result in results for kind in result]
        assert len(kinds) == THREADS * CALLS
        assert kinds.count("new") == 10
        with watch.store.engine.connect() as conn:
            fetches = conn.execute(sa.select(sa.func.sum(page_snapshots.c.fetch_count))).scalar()
            versions = conn.execute(sa.select(sa.func.count()).select_from(page_versions)).scalar()
        assert fetches == THREADS * CALLS + 1
        assert versions == 1 + sum(kind != "unchanged" for kind in kinds)
        assert len(watch.history("https://example.com/main")) == 1


def test_a_thread_waiting_past_the_timeout_gets_a_clear_error() -> None:
    """While one thread holds the in-memory store's connection, another thread's call waits
    and, past the busy timeout, fails with a StoreError that says why (nothing is lost)."""
    store = open_store("sqlite:///:memory:", busy_timeout_s=0.2)
    try:
        errors: list[BaseException] = []
        with store.transaction():

            def other() -> None:
                try:
                    store.stats()
                except BaseException as exc:
                    errors.append(exc)

            thread = threading.Thread(target=other)
            thread.start()
            thread.join(30)
        assert len(errors) == 1
        assert isinstance(errors[0], StoreError)
        assert "in-memory" in str(errors[0])
        assert store.stats()["pages"] == 0
    finally:
        store.close()
