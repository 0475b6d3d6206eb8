"""Bad URLs, bad bodies, bad databases: the right error, and nothing written."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from changewatch import (
    ChangeWatch,
    InvalidURLError,
    PageTooComplexError,
    PageTooLargeError,
    SchemaOutOfDateError,
    StoreError,
    fingerprint,
)
from changewatch.store.migrate import head_revision
from changewatch.store.tables import page_snapshots

from ._pages import counts, long_page, rewrite

BAD_URLS = [
    pytest.param("", id="empty"),
    pytest.param("ftp://x", id="ftp"),
    pytest.param("javascript:alert(1)", id="javascript"),
    pytest.param("http://", id="no-host"),
    pytest.param("http://exa mple.com/", id="space-in-host"),
    pytest.param("http://example.com:99999/", id="port-out-of-range"),
    pytest.param("/path", id="relative"),
]


def _seed(watch: ChangeWatch) -> tuple[int, int, int]:
    """Store one page fetched twice, so "nothing written" also covers known pages."""
    watch.should_parse("https://example.com/known", long_page())
    watch.should_parse("https://example.com/known", long_page())
    before = counts(watch)
    assert before == (1, 1, 2)
    return before


@pytest.mark.parametrize("url", BAD_URLS)
def test_invalid_url_raises_and_writes_nothing(watch: ChangeWatch, url: str) -> None:
    """An invalid URL raises InvalidURLError (a ValueError) with a reason; nothing is written."""
    before = _seed(watch)
    with pytest.raises(InvalidURLError) as info:
        watch.should_parse(url, long_page())
    assert isinstance(info.value, ValueError)
    assert info.value.url == url
    assert isinstance(info.value.reason, str)
    assert info.value.reason
    assert counts(watch) == before


@pytest.mark.parametrize("url", BAD_URLS)
def test_invalid_url_in_the_middle_of_a_batch_writes_nothing(watch: ChangeWatch, url: str) -> None:
    """One invalid URL in a should_parse_many batch: InvalidURLError and no row touched."""
    before = _seed(watch)
    batch = [
        ("https://example.com/known", rewrite()),
        ("https://example.com/new-1", long_page(3)),
        (url, long_page(4)),
        ("https://example.com/new-2", long_page(5)),
    ]
    with pytest.raises(InvalidURLError):
        watch.should_parse_many(batch)
    assert counts(watch) == before
    assert [v.kind for v in watch.history("https://example.com/known")] == ["new"]


def test_oversized_page_in_a_batch_writes_nothing(make_watch: Callable[..., ChangeWatch]) -> None:
    """One page over max_page_bytes in a batch: PageTooLargeError and no row touched."""
    watch = make_watch(max_page_bytes=100_000)
    before = _seed(watch)
    batch = [("https://example.com/known", rewrite()), ("https://example.com/big", "x" * 100_001)]
    with pytest.raises(PageTooLargeError):
        watch.should_parse_many(batch)
    assert counts(watch) == before


@pytest.mark.parametrize("html", [12, None, ["<p>a</p>"], 3.5])
def test_html_of_wrong_type_raises_type_error(watch: ChangeWatch, html: Any) -> None:
    """A body that is neither str nor bytes raises TypeError and writes nothing."""
    before = _seed(watch)
    with pytest.raises(TypeError):
        watch.should_parse("https://example.com/known", html)
    with pytest.raises(TypeError):
        watch.should_parse("https://example.com/other", html)
    with pytest.raises(TypeError):
        watch.should_parse_many(
            [("https://example.com/a", "<p>ok</p>"), ("https://example.com/b", html)]
        )
    assert counts(watch) == before


def test_empty_page_is_a_valid_page(watch: ChangeWatch) -> None:
    """An empty body, str or bytes, is stored: "new" first, then "unchanged"."""
    assert watch.should_parse("https://example.com/empty", "").kind == "new"
    assert watch.should_parse("https://example.com/empty", b"").kind == "unchanged"
    assert watch.should_parse("https://example.com/empty", "").kind == "unchanged"
    assert watch.should_parse("https://example.com/blank", b"<html></html>").kind == "new"
    assert counts(watch) == (2, 2, 4)


def test_invalid_utf8_bytes_do_not_crash(watch: ChangeWatch) -> None:
    """Bytes that are not valid UTF-8 are decoded with replacement and stored normally."""
    html = b"<html><body><p>caf\xe9 \xff\xfe\xc3\x28 ok \x80</p></body></html>"
    assert watch.should_parse("https://example.com/bad-utf8", html).kind == "new"
    assert watch.should_parse("https://example.com/bad-utf8", html).path == "raw"
    assert counts(watch) == (1, 1, 2)


def test_utf16_with_bom_is_decoded(watch: ChangeWatch) -> None:
    """A UTF-16 page with a BOM has the same content hash as the same page in UTF-8."""
    text = "<html><body><p>Grüße aus Köln, 東京</p></body></html>"
    utf16 = codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    d = watch.should_parse("https://example.com/utf16", utf16)
    assert d.kind == "new"
    assert d.content_sha256 == fingerprint(text).content_sha256
    same = watch.should_parse("https://example.com/utf8", text)
    assert same.duplicate_of == "https://example.com/utf16"
    assert watch.should_parse("https://example.com/utf16", text).path == "normalised"


def test_latin1_with_meta_charset_is_decoded(watch: ChangeWatch) -> None:
    """A latin-1 page declaring its charset in <meta> has the content hash of its UTF-8 twin."""
    latin1 = '<html><head><meta charset="iso-8859-1"></head><body><p>café à la crème</p>'
    d = watch.should_parse("https://example.com/latin1", latin1.encode("latin-1"))
    assert d.kind == "new"
    assert d.content_sha256 == fingerprint(latin1).content_sha256


@pytest.mark.parametrize(
    "html",
    [
        pytest.param("<p>a\x00b</p>", id="str"),
        pytest.param(b"<p>a\x00b</p>\x00\x00", id="bytes"),
        pytest.param("\x00" * 50, id="only-nul"),
    ],
)
def test_nul_characters_do_not_crash(watch: ChangeWatch, html: str | bytes) -> None:
    """NUL characters in a page do not break fingerprinting or storage on either dialect."""
    assert watch.should_parse("https://example.com/nul", html).kind == "new"
    assert watch.should_parse("https://example.com/nul", html).kind == "unchanged"
    assert counts(watch) == (1, 1, 2)


def test_page_over_max_page_bytes_is_refused(make_watch: Callable[..., ChangeWatch]) -> None:
    """A page over max_page_bytes raises PageTooLargeError with its size; nothing is written."""
    watch = make_watch(max_page_bytes=1000)
    before = _seed_small(watch)
    with pytest.raises(PageTooLargeError) as info:
        watch.should_parse("https://example.com/big", b"<p>" + b"x" * 1000)
    assert isinstance(info.value, ValueError)
    assert (info.value.size, info.value.limit) == (1003, 1000)
    assert info.value.url == "https://example.com/big"
    with pytest.raises(PageTooLargeError):
        watch.should_parse("https://example.com/known", "<p>" + "x" * 998)
    assert counts(watch) == before


def test_page_too_complex_is_refused_naming_page_and_limit(watch: ChangeWatch) -> None:
    """A page over a parse limit (an element of 300 attributes; 100,000 U+FDFA) raises
    PageTooComplexError naming the page and the limit, alone or in a batch; nothing is
    written."""
    before = _seed_small(watch)
    attributes = "<p " + " ".join(f"a{i}" for i in range(300)) + ">x</p>"
    for page, limit_name in ((attributes, "attributes"), ("\ufdfa" * 100_000, "text")):
        with pytest.raises(PageTooComplexError) as info:
            watch.should_parse("https://example.com/hostile", page)
        assert isinstance(info.value, ValueError)
        assert (info.value.limit_name, info.value.url) == (
            limit_name,
            "https://example.com/hostile",
        )
        assert "'https://example.com/hostile' is refused" in str(info.value)
        with pytest.raises(PageTooComplexError):
            watch.should_parse_many(
                [("https://example.com/fine", "<p>a</p>"), ("https://example.com/h", page)]
            )
    assert counts(watch) == before


def _seed_small(watch: ChangeWatch) -> tuple[int, int, int]:
    watch.should_parse("https://example.com/known", "<p>known</p>")
    return counts(watch)


def test_max_page_bytes_counts_utf8_bytes_not_characters(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """The limit is in bytes: exactly the limit passes, one multi-byte character over fails."""
    watch = make_watch(max_page_bytes=1000)
    assert watch.should_parse("https://example.com/at-limit", "x" * 1000).kind == "new"
    with pytest.raises(PageTooLargeError) as info:
        watch.should_parse("https://example.com/wide", "é" * 501)
    assert info.value.size == 1002
    assert counts(watch) == (1, 1, 1)


def test_oversized_page_is_refused_before_parsing(make_watch: Callable[..., ChangeWatch]) -> None:
    """An oversized body is refused on its size alone: even a huge one returns at once."""
    watch = make_watch(max_page_bytes=1000)
    with pytest.raises(PageTooLargeError):
        # 50 MB of nested tags: parsing this would take seconds and hundreds of MB.
        watch.should_parse("https://example.com/huge", b"<div>" * 10_000_000)
    assert counts(watch) == (0, 0, 0)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://user:s3cret@127.0.0.1:1/db",
        "postgresql://user:s3cret@127.0.0.1:1/db",
    ],
)
def test_unreachable_database_raises_store_error_without_password(url: str) -> None:
    """An unreachable database raises StoreError; no message in its chain shows the password."""
    with pytest.raises(StoreError) as info:
        ChangeWatch(database_url=url, seen_url="memory:")
    assert "s3cret" not in str(info.value)
    assert "127.0.0.1" in str(info.value)
    exc: BaseException | None = info.value
    while exc is not None:
        assert "s3cret" not in str(exc)
        assert "s3cret" not in repr(exc)
        exc = exc.__cause__ or exc.__context__


@pytest.mark.postgres
def test_unmigrated_postgres_raises_schema_out_of_date(
    make_pg_database: Callable[..., str],
) -> None:
    """An empty Postgres database is refused with SchemaOutOfDateError naming the fix."""
    url = make_pg_database(migrated=False)
    with pytest.raises(SchemaOutOfDateError) as info:
        ChangeWatch(database_url=url, seen_url="memory:")
    assert isinstance(info.value, StoreError)
    assert "changewatch db upgrade" in str(info.value)
    assert info.value.current is None
    assert info.value.expected == head_revision()
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        assert sa.inspect(engine).get_table_names() == []
    finally:
        engine.dispose()


def test_sqlite_database_in_a_fresh_path_is_created(tmp_path: Path) -> None:
    """A SQLite URL naming a file that does not exist yet creates it with the schema."""
    path = tmp_path / "fresh" / "store.db"
    path.parent.mkdir()
    with ChangeWatch(database_url=f"sqlite:///{path}", seen_url="memory:") as watch:
        assert watch.should_parse("https://example.com/", "<p>hi</p>").kind == "new"
        with watch.store.engine.connect() as conn:
            assert (
                conn.execute(sa.select(sa.func.count()).select_from(page_snapshots)).scalar_one()
                == 1
            )
    assert path.is_file()
    with ChangeWatch(database_url=f"sqlite:///{path}", seen_url="memory:") as again:
        assert again.should_parse("https://example.com/", "<p>hi</p>").kind == "unchanged"
