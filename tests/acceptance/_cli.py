"""Helpers for running the installed ``changewatch`` console script in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

#: Seconds any one CLI run may take before the test fails.
RUN_TIMEOUT_S = 60

Run = Callable[..., subprocess.CompletedProcess[str]]


def script() -> str:
    """The console script of the interpreter running the tests, else the one on PATH."""
    beside = Path(sys.executable).parent / "changewatch"
    if beside.is_file():
        return str(beside)
    found = shutil.which("changewatch")
    if found is None:
        pytest.fail("the changewatch console script is not installed (pip install -e .)")
    return found


def clean_env(workdir: Path, **extra: str) -> dict[str, str]:
    """os.environ without CHANGEWATCH_*, with the store and seen-set inside ``workdir``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGEWATCH_")}
    env["CHANGEWATCH_DATABASE_URL"] = f"sqlite:///{workdir / 'cw.db'}"
    env["CHANGEWATCH_SEEN_URL"] = f"file:{workdir / 'cw.seen'}"
    env.update(extra)
    return env


def assert_clean_error(proc: subprocess.CompletedProcess[str]) -> None:
    """Exit 1, a ``changewatch: error:`` first line on stderr, no traceback."""
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("changewatch: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
