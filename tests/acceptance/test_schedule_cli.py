"""``changewatch due`` and ``changewatch diff``, run as the installed script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._cli import Run, assert_clean_error

URL = "https://shop.example/item?id=7"


def _body(tmp_path: Path, name: str, sentences: list[str]) -> str:
    path = tmp_path / name
    path.write_text(f"<html><body><p>{' '.join(sentences)}</p></body></html>", encoding="utf-8")
    return str(path)


def _json(proc: Any) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_diff_prints_the_changed_sentence(run: Run, tmp_path: Path) -> None:
    """With CHANGEWATCH_STORE_TEXT=1, diff prints a unified diff of the last change."""
    before = [f"Item {i} costs {i} euros." for i in range(12)]
    after = [*before[:5], "Item 5 is sold out.", *before[6:]]
    for name, text in (("a.html", before), ("b.html", after)):
        proc = run("check", URL, "--file", _body(tmp_path, name, text), CHANGEWATCH_STORE_TEXT="1")
        assert proc.returncode == 0, proc.stderr
    proc = run("diff", URL)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("--- https://shop.example/item?id=7 version 1")
    assert "-item 5 costs 5 euros." in lines
    assert "+item 5 is sold out." in lines
    data = _json(run("diff", URL, "--from", "1", "--to", "2", "--json"))
    assert (data["from_version"], data["to_version"]) == (1, 2)
    assert "+item 5 is sold out." in data["diff"]


def test_diff_without_stored_texts_is_a_clear_error(run: Run, tmp_path: Path) -> None:
    """Without stored texts diff exits 1 saying how to keep them."""
    run("check", URL, "--file", _body(tmp_path, "a.html", ["One."]))
    proc = run("diff", URL)
    assert_clean_error(proc)
    assert "CHANGEWATCH_STORE_TEXT" in proc.stderr
    assert_clean_error(run("diff", "https://never.example/"))


def test_due_lists_pages_with_estimates(run: Run, tmp_path: Path) -> None:
    """due --json lists stored pages with rate, probability and expected changes; --host filters."""
    body = _body(tmp_path, "a.html", ["Hello."])
    for url in (URL, "https://other.example/"):
        assert run("check", url, "--file", body).returncode == 0
    pages = _json(run("due", "--limit", "5", "--json"))
    assert {p["host"] for p in pages} == {"shop.example", "other.example"}
    for p in pages:
        assert p["rate_per_day"] == 1.0  # the prior for a page fetched once
        assert 0.0 <= p["probability"] < 1.0
        assert set(p) >= {"url", "url_digest", "last_seen", "expected_changes"}
    only = _json(run("due", "--host", "other.example", "--json"))
    assert [p["url"] for p in only] == ["https://other.example/"]
    table = run("due", "--limit", "1")
    assert table.returncode == 0
    assert "P(changed)" in table.stdout
    assert run("due", "--limit", "-1").returncode == 2
