"""Structured decision logs: one DEBUG line per decision, key=value or JSON, URLs minimised."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from changewatch import ChangeWatch, url_digest
from changewatch.config import load_log_settings
from changewatch.errors import ConfigError
from changewatch.logs import configure_logging

URL = "https://alice:s3cret@Example.com/account?email=alice%40example.org&page=2"
PAGE = "<html><body><p>Hello there, a page with some words in it.</p></body></html>"


@pytest.fixture
def logged() -> Iterator[tuple[io.StringIO, list[str]]]:
    """Configure the changewatch loggers into a buffer at DEBUG; undo afterwards."""
    logger = logging.getLogger("changewatch")
    level = logger.level
    buffer = io.StringIO()
    handler = configure_logging("kv", "DEBUG", buffer)
    formats: list[str] = []
    yield buffer, formats
    logger.removeHandler(handler)
    logger.setLevel(level)


def _decide(tmp_path: Path, policy: str, log_format: str, buffer: io.StringIO) -> list[str]:
    configure_logging(log_format, "DEBUG", buffer)
    with ChangeWatch(f"sqlite:///{tmp_path}/cw.db", "memory:", url_policy=policy) as watch:  # type: ignore[arg-type]
        watch.should_parse(URL, PAGE)
        watch.should_parse(URL, PAGE)
        watch.should_parse_many([(URL, PAGE + "<p>more words</p>")])
    return [
        line
        for line in buffer.getvalue().splitlines()
        if "msg=decision" in line or '"decision"' in line
    ]


@pytest.mark.parametrize("policy", ["full", "no-query", "none"])
def test_kv_decision_lines_follow_the_url_policy(
    tmp_path: Path, policy: str, logged: tuple[io.StringIO, list[str]]
) -> None:
    """kv: one line per decision with kind, path, digest, distance, ms; no password ever."""
    lines = _decide(tmp_path, policy, "kv", logged[0])
    assert len(lines) == 3
    digest = url_digest(URL).hex()
    for line, kind, path in zip(
        lines, ["new", "unchanged", "changed"], ["new", "raw", "simhash"], strict=False
    ):
        assert f"kind={kind}" in line
        assert f"path={path}" in line
        assert f"digest={digest}" in line
        assert "distance=" in line
        assert " ms=" in line
        assert "level=debug" in line
    text = logged[0].getvalue()
    assert "s3cret" not in text
    assert "alice:" not in text
    if policy == "full":
        # a value holding "=" is quoted (logfmt)
        assert 'url="https://example.com/account?email=alice%40example.org&page=2"' in text
    elif policy == "no-query":
        assert "url=https://example.com/account " in text or text.rstrip().endswith(
            "url=https://example.com/account"
        )
        assert "email" not in text
        assert "?" not in text
    else:
        assert "example.com" not in text
        assert "url=-" in text


def test_json_decision_lines_parse_and_drop_the_query(
    tmp_path: Path, logged: tuple[io.StringIO, list[str]]
) -> None:
    """json: every line is a JSON object; under no-query the URL has no query string."""
    buffer = logged[0]
    _decide(tmp_path, "no-query", "json", buffer)
    records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    decisions = [r for r in records if r["msg"] == "decision"]
    assert [r["kind"] for r in decisions] == ["new", "unchanged", "changed"]
    assert decisions[0]["distance"] is None
    assert isinstance(decisions[2]["distance"], int)
    assert all(r["url"] == "https://example.com/account" for r in decisions)
    assert all(isinstance(r["ms"], float) for r in decisions)
    assert "s3cret" not in buffer.getvalue()


def test_no_decision_lines_above_debug(
    tmp_path: Path, logged: tuple[io.StringIO, list[str]]
) -> None:
    """At INFO, decisions are not logged at all."""
    buffer = logged[0]
    configure_logging("kv", "INFO", buffer)
    with ChangeWatch(f"sqlite:///{tmp_path}/cw.db", "memory:") as watch:
        watch.should_parse(URL, PAGE)
    assert buffer.getvalue() == ""


def test_messages_with_connection_strings_are_masked(logged: tuple[io.StringIO, list[str]]) -> None:
    """A password in any scheme://user:password@ text of a log message is masked."""
    buffer = logged[0]
    logging.getLogger("changewatch").warning("cannot reach postgresql://cw:hunter2@db/cw")
    assert "hunter2" not in buffer.getvalue()
    assert "postgresql://cw:***@db/cw" in buffer.getvalue()


def test_log_settings_come_from_the_environment() -> None:
    """CHANGEWATCH_LOG_FORMAT/LEVEL are read and checked, with a clear error naming them."""
    settings = load_log_settings(
        {"CHANGEWATCH_LOG_FORMAT": "JSON", "CHANGEWATCH_LOG_LEVEL": "debug"}
    )
    assert (settings.format, settings.level) == ("json", "DEBUG")
    assert load_log_settings({}).format == "kv"
    with pytest.raises(ConfigError, match="CHANGEWATCH_LOG_FORMAT"):
        load_log_settings({"CHANGEWATCH_LOG_FORMAT": "xml"})
    with pytest.raises(ConfigError, match="CHANGEWATCH_LOG_LEVEL"):
        load_log_settings({"CHANGEWATCH_LOG_LEVEL": "loud"})


def test_a_plain_formatter_shows_kind_path_and_distance(tmp_path: Path) -> None:
    """Under another framework's formatter (Scrapy's LOG_FORMAT prints only the message) a
    decision line still carries kind, path and distance, and never a password."""
    logger = logging.getLogger("changewatch.decisions")
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("%(asctime)s [%(name)s] %(levelname)s: %(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with ChangeWatch(f"sqlite:///{tmp_path}/cw.db", "memory:") as watch:
            watch.should_parse(URL, PAGE)
            watch.should_parse(URL, PAGE + "<p>" + "other words " * 30 + "</p>")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 2
    assert "DEBUG: decision kind=new path=new distance=- url=https://example.com/" in lines[0]
    assert "decision kind=changed path=simhash distance=" in lines[1]
    assert "s3cret" not in buffer.getvalue()
