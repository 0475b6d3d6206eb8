"""ChangeWatch and its seen-set: mark_seen, the on_error policy, the should_parse pre-check."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from changewatch import ChangeWatch, ConfigError, SeenSetUnavailableError
from changewatch.errors import SeenSetError

from .._pages import page, snapshot_rows, words

# A real redis:// seen-set whose server does not answer (nothing listens on port 1).
UNREACHABLE = "redis://:s3cret@127.0.0.1:1/0?kind=set&timeout=0.5"


def test_mark_seen_through_a_file_bloom_filter(tmp_path: Path) -> None:
    """mark_seen over file:…?kind=bloom: canonical twins are one URL and survive a restart."""
    seen_url = f"file:{tmp_path}/crawl.seen?kind=bloom&capacity=10000&error_rate=0.001"
    db = f"sqlite:///{tmp_path}/cw.db"
    with ChangeWatch(database_url=db, seen_url=seen_url) as watch:
        assert watch.mark_seen("https://Example.com/a?utm_source=x") is True
        assert watch.mark_seen("https://example.com/a#frag") is False
        assert watch.mark_seen_many(["https://example.com/b", "https://example.com/a"]) == [
            True,
            False,
        ]
        assert watch.stats()["seen"]["kind"] == "file-bloom"
    with ChangeWatch(database_url=db, seen_url=seen_url) as watch:
        assert watch.mark_seen("https://example.com/b") is False


def test_second_watch_on_the_same_seen_file_is_refused(tmp_path: Path) -> None:
    """Two ChangeWatch instances cannot write one seen-set file: the second gets an error."""
    seen_url = f"file:{tmp_path}/one.seen"
    db = f"sqlite:///{tmp_path}/cw.db"
    with ChangeWatch(database_url=db, seen_url=seen_url) as first:
        first.mark_seen("https://example.com/")
        with (
            ChangeWatch(database_url=db, seen_url=seen_url) as second,
            pytest.raises(SeenSetError, match="already open"),
        ):
            second.mark_seen("https://example.com/x")


def test_on_error_raise_is_the_default(tmp_path: Path) -> None:
    """With the default policy an unreachable seen-set raises SeenSetUnavailableError."""
    with (
        ChangeWatch(database_url=f"sqlite:///{tmp_path}/cw.db", seen_url=UNREACHABLE) as w,
        pytest.raises(SeenSetUnavailableError) as info,
    ):
        w.mark_seen("https://example.com/")
    assert "127.0.0.1:1" in str(info.value)
    assert "s3cret" not in str(info.value)


def test_on_error_assume_new_answers_true_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """seen_on_error="assume-new": every URL is new, one warning per call, nothing raised."""
    with (
        ChangeWatch(
            database_url=f"sqlite:///{tmp_path}/cw.db",
            seen_url=UNREACHABLE,
            seen_on_error="assume-new",
        ) as watch,
        caplog.at_level(logging.WARNING, logger="changewatch"),
    ):
        assert watch.mark_seen("https://example.com/") is True
        assert watch.mark_seen_many(["https://example.com/a", "https://example.com/b"]) == [
            True,
            True,
        ]
    assert sum("assuming" in r.getMessage() for r in caplog.records) == 2


def test_on_error_policy_is_validated(tmp_path: Path) -> None:
    """An unknown seen_on_error value is a ConfigError."""
    with pytest.raises(ConfigError, match="seen_on_error"):
        ChangeWatch(
            database_url=f"sqlite:///{tmp_path}/cw.db",
            seen_url="memory:",
            seen_on_error="ignore",  # type: ignore[arg-type]
        )


def _selects(watch: ChangeWatch, action: Callable[[], object], *, lookups: bool = False) -> int:
    """SELECTs ``action`` runs; ``lookups``: only those that read pages by URL digest (the
    snapshot lookup), not the duplicate-candidate reads by content hash or SimHash band."""
    count = 0

    def on_execute(*args: Any) -> None:
        nonlocal count
        sql = " ".join(args[2].split()).upper()
        if not sql.startswith("SELECT"):
            return
        where = sql.partition(" WHERE ")[2]
        if not lookups or re.search(r"URL_DIGEST (=|IN\b)", where):
            count += 1

    event.listen(watch.store.engine, "before_cursor_execute", on_execute)
    try:
        action()
    finally:
        event.remove(watch.store.engine, "before_cursor_execute", on_execute)
    return count


def test_precheck_skips_the_lookup_for_urls_never_seen(database_url: str) -> None:
    """seen_precheck: a URL absent from the seen-set is decided new with no snapshot SELECT."""
    with ChangeWatch(database_url=database_url, seen_url="memory:", seen_precheck=True) as w:
        html = page(words(3, 60))
        decisions: list[Any] = []
        decide = lambda: decisions.append(w.should_parse("https://e.com/1", html))  # noqa: E731
        assert _selects(w, decide, lookups=True) == 0
        assert decisions[0].kind == "new"
        w.mark_seen("https://e.com/1")
        assert w.should_parse("https://e.com/1", html).kind == "unchanged"


def test_precheck_wrong_guess_is_retried_not_wrong(database_url: str) -> None:
    """A stored URL missing from a fresh seen-set is retried with a lookup: right answer, counts."""
    html = page(words(4, 60))
    with ChangeWatch(database_url=database_url, seen_url="memory:") as first:
        assert first.should_parse("https://e.com/2", html).kind == "new"
    with ChangeWatch(database_url=database_url, seen_url="memory:", seen_precheck=True) as w:
        assert w.should_parse("https://e.com/2", html).kind == "unchanged"
        assert [d.kind for d in w.should_parse_many([("https://e.com/2", html)])] == ["unchanged"]
        (row,) = snapshot_rows(w)
        assert (row.fetch_count, row.version_count) == (3, 1)


def test_an_ageing_seen_set_reads_the_watchs_clock(tmp_path: Path) -> None:
    """ChangeWatch(clock=…) drives an ageing seen-set: a URL is new again after max_age + window."""
    from datetime import UTC, datetime, timedelta

    now = [datetime(2026, 1, 5, tzinfo=UTC)]
    seen_url = f"file:{tmp_path}/aged.seen?max_age=7d&window=1d"
    db = f"sqlite:///{tmp_path}/cw.db"
    with ChangeWatch(database_url=db, seen_url=seen_url, clock=lambda: now[0]) as watch:
        assert watch.mark_seen("https://example.com/a") is True
        now[0] += timedelta(days=7)
        assert watch.mark_seen("https://example.com/a") is False
        now[0] += timedelta(days=1)
        assert watch.mark_seen("https://example.com/a") is True
        assert watch.stats()["seen"]["live_generations"] == 8
