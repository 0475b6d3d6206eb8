"""Worker functions for test_fast_touch_paths, run in spawned processes (no pytest imports)."""

from __future__ import annotations

import traceback
from typing import Any

import sqlalchemy as sa

from changewatch import ChangeWatch

from .._pages import long_page

URLS = [f"https://touch.example/p/{i}" for i in range(5)]
TIMEOUT_S = 90


def body(page: int, edition: int) -> str:
    """Page ``page`` as of its ``edition`` (a new edition is a different text)."""
    return long_page(page * 100 + edition)


def refetch_worker(database_url: str, worker: int, rounds: int, barrier: Any, results: Any) -> None:
    """Re-fetch every page ``rounds`` times; odd workers force the SQLAlchemy path (a statement
    listener), worker 0 also moves page 0 to a new edition every third round. Reports
    ``(url, kind)`` for every call."""
    try:
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            if worker % 2:
                sa.event.listen(watch.store.engine, "before_cursor_execute", lambda *_: None)
            barrier.wait(timeout=TIMEOUT_S)
            report = []
            for round_no in range(rounds):
                for i, url in enumerate(URLS):
                    edition = round_no // 3 if worker == 0 and i == 0 else 0
                    report.append((url, watch.should_parse(url, body(i, edition)).kind))
            results.put(("ok", report))
    except BaseException:
        results.put(("error", traceback.format_exc()))
