"""The atheris targets run: a short session of each finds nothing (skipped without atheris)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TARGETS = sorted(p.name for p in Path(__file__).parent.glob("atheris_*.py"))
RUNS = 3000
TIMEOUT_S = 120


@pytest.mark.parametrize("target", TARGETS)
def test_atheris_target_runs_clean(target: str, tmp_path: Path) -> None:
    """``python tests/fuzz/TARGET -atheris_runs=3000`` exits 0 (no crash, no assertion)."""
    pytest.importorskip("atheris")
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name(target)), f"-atheris_runs={RUNS}",
         "-max_len=4096", "-seed=1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"Done {RUNS} " in proc.stderr
