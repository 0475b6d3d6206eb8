"""The observer hook: what ChangeWatch reports, and that the core never loads prometheus_client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from changewatch import ChangeWatch
from changewatch.observe import NULL_OBSERVER, Observer
from changewatch.values import Decision

_PROBE = """
import json, sys
import changewatch, changewatch.watch, changewatch.observe, changewatch.logs, changewatch.cli
print(json.dumps(sorted(n for n in sys.modules if n.split(".")[0] == "prometheus_client")))
"""


class Recorder(Observer):
    """Keeps every call."""

    def __init__(self) -> None:
        self.decisions: list[tuple[list[str], float]] = []
        self.marks: list[tuple[int, int]] = []
        self.errors: list[str] = []

    def on_decisions(self, decisions: Sequence[Decision], seconds: float) -> None:
        self.decisions.append(([d.kind for d in decisions], seconds))

    def on_mark_seen(self, new_count: int, total: int) -> None:
        self.marks.append((new_count, total))

    def on_error(self, kind: str) -> None:
        self.errors.append(kind)


def test_core_and_cli_never_import_prometheus_client() -> None:
    """A fresh interpreter importing the core, the CLI and the hook loads no prometheus_client."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(result.stdout) == []


def test_watch_reports_decisions_and_marks(tmp_path: Path) -> None:
    """Each should_parse call, batch and mark_seen reaches the observer once, with its answers."""
    recorder = Recorder()
    with ChangeWatch(f"sqlite:///{tmp_path}/cw.db", "memory:", observer=recorder) as watch:
        watch.should_parse("https://example.com/a", "<p>one</p>")
        watch.should_parse_many(
            [("https://example.com/a", "<p>one</p>"), ("https://example.com/b", "<p>two</p>")]
        )
        watch.mark_seen_many(["https://example.com/a", "https://example.com/a#x"])
        watch.mark_seen("https://example.com/c")
    assert [kinds for kinds, _ in recorder.decisions] == [["new"], ["unchanged", "new"]]
    assert all(seconds > 0 for _, seconds in recorder.decisions)
    assert recorder.marks == [(1, 2), (1, 1)]
    assert recorder.errors == []


def test_watch_without_observer_uses_the_null_one(tmp_path: Path) -> None:
    """No observer given: the shared no-op observer."""
    with ChangeWatch(f"sqlite:///{tmp_path}/cw.db", "memory:") as watch:
        assert watch.observer is NULL_OBSERVER
