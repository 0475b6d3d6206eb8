"""Batches of any shape and size: malformed items refused by index, huge batches within the
drivers' parameter limits, and StoreError.retryable true only when a retry can succeed."""

from __future__ import annotations

import os
from typing import Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch, StoreError
from changewatch.store import open_store
from changewatch.store.errors import translate_errors

from ._pages import counts, long_page


@pytest.mark.parametrize(
    ("item", "message"),
    [
        pytest.param(("https://example.com/x",), "item 1 must be a (url, html)", id="1-tuple"),
        pytest.param("https://example.com/x", "item 1 must be a (url, html)", id="bare-string"),
        pytest.param(
            ("https://example.com/x", "<p>x</p>", ["ETag: 1"]),
            "item 1: headers must be a mapping",
            id="headers-as-list",
        ),
        pytest.param((b"https://example.com/x", "<p>x</p>"), "item 1: url must be str", id="url"),
        pytest.param(("https://example.com/x", 42), "item 1: html must be str", id="html-int"),
        pytest.param(("u", "<p>x</p>", None, "extra"), "item 1 must be", id="4-tuple"),
        pytest.param(None, "item 1 must be", id="none"),
    ],
)
def test_malformed_batch_items_raise_type_error_naming_the_item(
    watch: ChangeWatch, item: Any, message: str
) -> None:
    """A malformed item raises TypeError naming its index and what was expected; the valid
    items before it are not written either."""
    watch.should_parse("https://example.com/known", long_page())
    before = counts(watch)
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        watch.should_parse_many([("https://example.com/ok", long_page()), item])
    assert counts(watch) == before


def test_lookups_of_any_size_stay_within_the_parameter_limit(database_url: str) -> None:
    """A transaction looks up 70,000 digests and the copies of 70,000 pages in one
    call (psycopg refuses a statement of over 65,535 parameters: they go in chunks)."""
    store = open_store(database_url)
    try:
        digests = [os.urandom(16) for _ in range(70_000)]
        simhashes = [int.from_bytes(os.urandom(8), "big") for _ in range(70_000)]
        with store.transaction() as tx:
            assert tx.lookup(digests) == {}
            pages = [(os.urandom(32), v) for v in simhashes]
            assert tx.copy_candidates(pages, 3) == []
            assert tx.recent_contents(digests, 10, 4) == {}
    finally:
        store.close()


@pytest.mark.postgres
def test_a_statement_over_the_parameter_limit_is_not_retryable(pg_admin_url: str) -> None:
    """A refusal a retry would repeat (too many parameters) is a StoreError with
    retryable=False; the database's password never shows."""
    engine = sa.create_engine(pg_admin_url)
    stmt = sa.select(sa.literal(1)).where(sa.literal(1).in_(sa.bindparam("x", expanding=True)))
    try:
        with (
            pytest.raises(StoreError) as info,
            translate_errors("postgresql://u:hunter2@h/db"),
            engine.connect() as conn,
        ):
            conn.execute(stmt, {"x": list(range(70_000))})
    finally:
        engine.dispose()
    assert info.value.retryable is False
    assert "hunter2" not in str(info.value)


def test_an_unreachable_server_is_retryable() -> None:
    """Connection refused is transient: StoreError with retryable=True."""
    url = "postgresql+psycopg://postgres:secret@127.0.0.1:1/none"
    with pytest.raises(StoreError) as info:
        ChangeWatch(url, "memory:")
    assert info.value.retryable is True
    assert "secret" not in str(info.value)


def test_a_missing_table_on_sqlite_is_not_retryable(tmp_path: Any) -> None:
    """SQLite reports a missing table as OperationalError, like a busy database: only
    'locked' and 'busy' count as retryable."""
    engine = sa.create_engine(f"sqlite:///{tmp_path}/x.db")
    try:
        with (
            pytest.raises(StoreError) as info,
            translate_errors(f"sqlite:///{tmp_path}/x.db"),
            engine.connect() as conn,
        ):
            conn.execute(sa.text("SELECT * FROM nowhere"))
    finally:
        engine.dispose()
    assert info.value.retryable is False
