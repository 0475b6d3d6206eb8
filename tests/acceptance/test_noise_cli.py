"""`changewatch noise list` and `changewatch noise reset`, through the console script: the
rules a watch learned are listed per host (table and JSON) and a host's are forgotten."""

from __future__ import annotations

import json
from pathlib import Path

from changewatch import ChangeWatch

from ._cli import Run

HOST = "noise.example"


def _page(i: int, banner: bool) -> str:
    flag = "<div>Winter sale: 20% off!</div>" if banner else ""
    return (
        f"<html><body>{flag}<div><p>Document {i} says how we handle your data and why we "
        "keep it for thirty days.</p></div></body></html>"
    )


def _learn(database: Path) -> None:
    """12 pages of HOST and 1 of another host, fetched 3 times, the banner flipping."""
    with ChangeWatch(f"sqlite:///{database}", "memory:", learn_noise=True) as watch:
        for n in range(3):
            watch.should_parse_many(
                [(f"https://{HOST}/doc/{i}", _page(i, n % 2 == 1)) for i in range(12)]
                + [("https://other.example/doc", _page(0, n % 2 == 1))]
            )


def test_noise_list_and_reset(run: Run, tmp_path: Path) -> None:
    """List shows the learned shape of HOST (and observed-only rules of the other host);
    --host and --learned filter; reset forgets HOST's rules only."""
    _learn(tmp_path / "cw.db")
    listed = run("noise", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rules = json.loads(listed.stdout)
    learned = [r for r in rules if r["learned_at"] is not None]
    assert [(r["host"], r["kind"], r["path"]) for r in learned] == [
        (HOST, "shape", "html/body/div")
    ]
    assert learned[0]["observations"] == learned[0]["changes"] == 24
    assert {r["host"] for r in rules} == {HOST, "other.example"}
    only = json.loads(run("noise", "list", "--host", HOST, "--learned", "--json").stdout)
    assert only == learned
    table = run("noise", "list", "--host", HOST)
    assert table.returncode == 0, table.stderr
    assert "html/body/div" in table.stdout
    assert "1 learned" in table.stdout
    reset = run("noise", "reset", "--host", HOST)
    assert reset.returncode == 0, reset.stderr
    assert f"of {HOST}" in reset.stdout
    after = json.loads(run("noise", "list", "--json").stdout)
    assert {r["host"] for r in after} == {"other.example"}
    missing = run("noise", "reset")
    assert missing.returncode == 2
    assert "--host" in missing.stderr
