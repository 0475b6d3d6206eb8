"""The URL-storage policy, checked against every column of every table (both dialects).

Every text and binary value in the database — views included, compressed page texts
decompressed — is searched for the parts of the URL the policy must keep out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.store.texts import decompress_text

from .._pages import long_page, one_word_edit, rewrite

USER, PASSWORD = "alice", "hunter2pw"
PATH = "/private/account-7f3a"
QUERY_SECRET = "SECRETQ9"
URL = f"https://{USER}:{PASSWORD}@example.com{PATH}?token={QUERY_SECRET}&b=2"
OTHER = f"https://{USER}:{PASSWORD}@example.com/other?sid={QUERY_SECRET}"


def _values(watch: ChangeWatch) -> Iterator[tuple[str, str]]:
    """(table.column, value as text) for every text/bytes value of every table and view."""
    engine = watch.store.engine
    inspector = sa.inspect(engine)
    names = inspector.get_table_names() + inspector.get_view_names()
    with engine.connect() as conn:
        for name in names:
            result = conn.execute(sa.text(f'SELECT * FROM "{name}"'))
            columns = list(result.keys())
            for row in result:
                for column, value in zip(columns, row, strict=True):
                    if isinstance(value, memoryview):
                        value = bytes(value)
                    if isinstance(value, bytes):
                        if name == "page_texts" and column == "text_zstd":
                            yield f"{name}.{column}", decompress_text(value)
                        yield f"{name}.{column}", value.decode("latin-1")
                    elif isinstance(value, str):
                        yield f"{name}.{column}", value


def _crawl(watch: ChangeWatch) -> None:
    """Every write path: new, unchanged (raw and 304), minor, changed, a batch."""
    watch.should_parse(URL, long_page(), headers={"ETag": '"e1"'})
    watch.should_parse(URL, long_page())
    watch.should_parse(URL, None, status=304)
    watch.should_parse(URL, one_word_edit())
    watch.should_parse_many([(URL, rewrite()), (OTHER, rewrite(2))])
    watch.mark_seen(URL)


def _found(watch: ChangeWatch, needle: str) -> list[str]:
    return [where for where, text in _values(watch) if needle.lower() in text.lower()]


@pytest.mark.parametrize("policy", ["full", "no-query", "none"])
def test_credentials_never_stored(make_watch: Callable[..., ChangeWatch], policy: str) -> None:
    """user:password@ never lands in any table, under any policy."""
    watch = make_watch(url_policy=policy, store_text=True)
    _crawl(watch)
    assert _found(watch, PASSWORD) == []
    assert _found(watch, f"{USER}:") == []
    assert _found(watch, f"{USER}@") == []


def test_no_query_keeps_query_strings_out(make_watch: Callable[..., ChangeWatch]) -> None:
    """Under no-query the path is stored but no query string lands in any table."""
    watch = make_watch(url_policy="no-query", store_text=True)
    _crawl(watch)
    assert _found(watch, QUERY_SECRET) == []
    assert _found(watch, "token=") == []
    assert "page_snapshots.url" in _found(watch, PATH)
    assert watch.due(5)[0].url in (f"https://example.com{PATH}", "https://example.com/other")


def test_none_keeps_urls_out(make_watch: Callable[..., ChangeWatch]) -> None:
    """Under none no URL lands anywhere: only the host (for per-host queries) and the digest."""
    watch = make_watch(url_policy="none", store_text=True)
    _crawl(watch)
    assert _found(watch, PATH) == []
    assert _found(watch, QUERY_SECRET) == []
    assert _found(watch, "https://") == []
    assert {p.url for p in watch.due(5)} == {None}


def test_full_policy_is_what_the_scan_would_catch(make_watch: Callable[..., ChangeWatch]) -> None:
    """The scan finds the query under full: the other tests' empty results are not vacuous."""
    watch = make_watch(url_policy="full", store_text=True)
    _crawl(watch)
    assert "page_snapshots.url" in _found(watch, QUERY_SECRET)
