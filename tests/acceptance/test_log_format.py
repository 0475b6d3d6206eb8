"""``--log-format`` / ``CHANGEWATCH_LOG_FORMAT`` switch the CLI's log lines between kv and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from ._cli import Run

URL = "https://example.com/private?token=abc123"


def test_cli_json_debug_logs_one_line_per_decision(run: Run, tmp_path: Path) -> None:
    """--log-format json --log-level DEBUG: a JSON decision line, no query under no-query."""
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>Some text</p></body></html>")
    proc = run(
        "--log-format",
        "json",
        "--log-level",
        "DEBUG",
        "check",
        URL,
        "--file",
        str(page),
        CHANGEWATCH_URL_POLICY="no-query",
    )
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stderr.splitlines()]
    decisions = [r for r in records if r["msg"] == "decision"]
    assert len(decisions) == 1
    assert decisions[0]["kind"] == "new"
    assert decisions[0]["url"] == "https://example.com/private"
    assert "abc123" not in proc.stderr


def test_cli_log_format_from_the_environment(run: Run, tmp_path: Path) -> None:
    """CHANGEWATCH_LOG_FORMAT=kv with LEVEL=DEBUG gives key=value decision lines."""
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>Some text</p></body></html>")
    proc = run(
        "check",
        URL,
        "--file",
        str(page),
        CHANGEWATCH_LOG_FORMAT="kv",
        CHANGEWATCH_LOG_LEVEL="DEBUG",
    )
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "msg=decision" in line]
    assert len(lines) == 1
    assert "kind=new" in lines[0]
    assert 'url="https://example.com/private?token=abc123"' in lines[0]
