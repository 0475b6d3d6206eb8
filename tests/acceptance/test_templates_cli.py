"""`changewatch templates list` and `changewatch templates reset`, through the console script:
the template a watch learned is listed per host (table and JSON) and a host's is forgotten."""

from __future__ import annotations

import json
from pathlib import Path

from changewatch import ChangeWatch

from ._cli import Run

HOST = "shop.example"


def _page(i: int) -> str:
    return (
        "<html><body><div>Free shipping this week</div><div><p>Table "
        f"{i} is made of oak, seats six people and ships in two boxes.</p></div></body></html>"
    )


def _learn(database: Path) -> None:
    """12 pages of HOST sharing a promo line, and 1 page of another host."""
    with ChangeWatch(f"sqlite:///{database}", "memory:", learn_templates=True) as watch:
        watch.should_parse_many(
            [(f"https://{HOST}/t/{i}", _page(i)) for i in range(12)]
            + [("https://other.example/t/0", _page(0))]
        )


def test_templates_list_and_reset(run: Run, tmp_path: Path) -> None:
    """List shows HOST's learned promo (text and slot, on 12 of 12 pages) and the other
    host's counted-only rules; --host and --learned filter; reset forgets HOST's only."""
    _learn(tmp_path / "cw.db")
    listed = run("templates", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rules = json.loads(listed.stdout)
    learned = [r for r in rules if r["learned_at"] is not None]
    assert sorted((r["host"], r["kind"], r["path"], r["pages"], r["sampled"]) for r in learned) == [
        (HOST, "slot", "html/body/div", 12, 12),
        (HOST, "text", "html/body/div", 12, 12),
    ]
    assert {r["host"] for r in rules} == {HOST, "other.example"}
    only = json.loads(run("templates", "list", "--host", HOST, "--learned", "--json").stdout)
    assert only == learned
    table = run("templates", "list", "--host", HOST)
    assert table.returncode == 0, table.stderr
    assert "12/12" in table.stdout
    assert "2 learned" in table.stdout
    reset = run("templates", "reset", "--host", HOST)
    assert reset.returncode == 0, reset.stderr
    assert f"forgot {len(rules) - 2} template rule(s) of {HOST}" in reset.stdout
    after = json.loads(run("templates", "list", "--json").stdout)
    assert {r["host"] for r in after} == {"other.example"}
    missing = run("templates", "reset")
    assert missing.returncode == 2
    assert "--host" in missing.stderr


def test_check_learns_templates_when_the_variable_says_so(run: Run, tmp_path: Path) -> None:
    """`changewatch check` with CHANGEWATCH_LEARN_TEMPLATES=1 counts each page: after five
    pages of a host the promo is learned; without the variable nothing is counted."""
    for i in range(5):
        (tmp_path / f"t{i}.html").write_text(_page(i), encoding="utf-8")
        on = run(
            "check", f"https://{HOST}/t/{i}", "--file", f"t{i}.html",
            CHANGEWATCH_LEARN_TEMPLATES="1",
        )  # fmt: skip
        assert on.returncode == 0, on.stderr
    learned = json.loads(run("templates", "list", "--learned", "--json").stdout)
    assert sorted((r["kind"], r["pages"], r["sampled"]) for r in learned) == [
        ("slot", 5, 5),
        ("text", 5, 5),
    ]
    off = run("check", f"https://{HOST}/t/9", "--file", "t0.html")
    assert off.returncode == 0, off.stderr
    rules = json.loads(run("templates", "list", "--json").stdout)
    assert {r["sampled"] for r in rules} == {5}
