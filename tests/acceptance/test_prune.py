"""`changewatch prune` and reverted_to in `check`/`history`, through the console script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._cli import Run

URL = "https://example.com/flip"


def _body(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(f"<html><body><p>{text}</p></body></html>", encoding="utf-8")
    return path


def _json(proc: Any) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_flip_flop_then_prune(run: Run, tmp_path: Path) -> None:
    """A, B, A: the third check reports reverted_to 1; prune keeps only the latest version."""
    a = _body(tmp_path, "a.html", "Price: 10 euros. " * 40)
    b = _body(tmp_path, "b.html", "Sold out, back next month, sorry about that. " * 40)
    kinds = [_json(run("check", URL, "--file", str(f), "--json")) for f in (a, b, a)]
    assert [(k["kind"], k["reverted_to"]) for k in kinds] == [
        ("new", None),
        ("changed", None),
        ("changed", 1),
    ]
    dry = _json(run("prune", "--keep-versions", "1", "--older-than", "0s", "--dry-run", "--json"))
    assert (dry["dry_run"], dry["removed"], dry["removed_by_host"]) == (
        True,
        2,
        {"example.com": 2},
    )
    assert len(_json(run("history", URL, "--json"))) == 3
    table = run("prune", "--keep-versions", "1", "--older-than", "0s")
    assert table.returncode == 0, table.stderr
    assert "example.com" in table.stdout
    assert "total" in table.stdout
    versions = _json(run("history", URL, "--json"))
    assert [(v["version"], v["reverted_to"]) for v in versions] == [(3, 1)]
    again = _json(run("prune", "--keep-versions", "1", "--older-than", "1w2d", "--json"))
    assert again["removed"] == 0


def test_prune_refuses_bad_options(run: Run) -> None:
    """A duration without a unit, or keeping 0 versions, is a usage error naming the option."""
    bad = run("prune", "--keep-versions", "2", "--older-than", "30")
    assert bad.returncode == 2
    assert "--older-than" in bad.stderr
    assert "duration '30' is not understood" in bad.stderr
    zero = run("prune", "--keep-versions", "0", "--older-than", "30d")
    assert zero.returncode == 2
    assert "--keep-versions" in zero.stderr
