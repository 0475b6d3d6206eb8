"""Pure parts of retention and the analyst views: durations, arguments, view SQL text."""

from __future__ import annotations

from datetime import timedelta

import pytest

from changewatch.decide import reverted_to
from changewatch.schedule import parse_duration
from changewatch.store.prune import check_prune_args
from changewatch.store.views import (
    VIEW_COMMENTS,
    VIEW_NAMES,
    comment_statements,
    create_statements,
    drop_statements,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("1w2d", timedelta(days=9)),
        ("90m", timedelta(minutes=90)),
        (" 45S ", timedelta(seconds=45)),
        ("1d 6h", timedelta(days=1, hours=6)),
        ("0s", timedelta(0)),
    ],
)
def test_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "30", "d", "3y", "-1d", "1.5d", "1d x", "ten days"])
def test_bad_durations_are_named(text: str) -> None:
    with pytest.raises(ValueError, match=f"duration {text!r} is not understood"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("keep", "older", "batch", "name"),
    [
        (0, timedelta(0), 10, "keep_versions"),
        (True, timedelta(0), 10, "keep_versions"),
        (1, timedelta(seconds=-1), 10, "older_than"),
        (1, timedelta(0), 0, "batch_size"),
    ],
)
def test_prune_arguments(keep: int, older: timedelta, batch: int, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        check_prune_args(keep, older, batch)


def test_reverted_to_prefers_the_newest_match() -> None:
    recent = [(5, b"x"), (4, b"a"), (3, b"b"), (2, b"a")]
    assert reverted_to(b"a", recent) == 4
    assert reverted_to(b"b", recent) == 3
    assert reverted_to(b"z", recent) is None
    assert reverted_to(b"a", []) is None


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_one_create_statement_per_view(dialect: str) -> None:
    statements = create_statements(dialect)
    assert [s.split()[2] for s in statements] == list(VIEW_NAMES)
    other = "sqlite" if dialect == "postgresql" else "postgresql"
    assert statements != create_statements(other)  # the dialects do differ
    assert drop_statements() == [f"DROP VIEW IF EXISTS {v}" for v in reversed(VIEW_NAMES)]


def test_every_view_and_column_is_commented_without_bind_markers() -> None:
    assert set(VIEW_COMMENTS) == set(VIEW_NAMES)
    statements = comment_statements()
    assert len(statements) == sum(len(c) for c in VIEW_COMMENTS.values())
    for statement in statements:
        # sa.text() would read ":word" as a bind parameter.
        assert not any(
            part[:1].isalnum() for part in statement.split(" IS ", 1)[1].split(":")[1:]
        ), statement
