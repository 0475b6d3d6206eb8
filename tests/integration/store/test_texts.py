"""Optional text snapshots and ``diff`` (both dialects)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.errors import PageNotStoredError, TextNotStoredError
from changewatch.fingerprint import normalise
from changewatch.store.tables import page_texts
from changewatch.store.texts import decompress_text

from .._pages import long_page, one_word_edit, page, rewrite, words

if TYPE_CHECKING:
    from conftest import Clock

URL = "https://example.com/shop/item"


def _text_rows(watch: ChangeWatch) -> list[sa.Row[tuple[bytes, bytes, int, int]]]:
    with watch.store.engine.connect() as conn:
        stmt = sa.select(
            page_texts.c.content_sha256,
            page_texts.c.text_zstd,
            page_texts.c.text_bytes,
            page_texts.c.compressed_bytes,
        )
        return list(conn.execute(stmt).all())


def test_store_text_is_off_by_default(watch: ChangeWatch) -> None:
    """Without store_text no page_texts row is written, and diff says texts were not kept."""
    assert watch.store_text is False
    watch.should_parse(URL, long_page())
    watch.should_parse(URL, rewrite())
    assert _text_rows(watch) == []
    with pytest.raises(TextNotStoredError, match="store_text") as info:
        watch.diff(URL)
    assert info.value.versions == [1, 2]


def test_texts_are_kept_once_per_content(make_watch: Callable[..., ChangeWatch]) -> None:
    """Each new/changed/minor version's normalised text is stored once, compressed."""
    watch = make_watch(store_text=True)
    watch.should_parse(URL, long_page())
    watch.should_parse(URL, long_page())  # unchanged: nothing new
    watch.should_parse("https://example.com/copy", long_page())  # same text, other URL
    watch.should_parse(URL, one_word_edit())  # minor
    watch.should_parse_many([(URL, rewrite()), ("https://example.com/other", rewrite(3))])
    rows = _text_rows(watch)
    assert len(rows) == 4
    by_hash = {bytes(r.content_sha256): r for r in rows}
    for version in watch.history(URL):
        row = by_hash[version.content_sha256]
        text = decompress_text(bytes(row.text_zstd))
        assert len(text.encode()) == row.text_bytes == version.text_length
        assert row.compressed_bytes == len(row.text_zstd) < row.text_bytes
    assert decompress_text(bytes(by_hash[watch.history(URL)[0].content_sha256].text_zstd)) == (
        normalise(long_page())
    )


def test_diff_between_versions(make_watch: Callable[..., ChangeWatch]) -> None:
    """diff shows the changed sentence between the previous and current version, or any two."""
    watch = make_watch(store_text=True)
    sentences = [f"Item {i} costs {i} euros." for i in range(20)]
    v1 = page(sentences)
    sentences[7] = "Item 7 costs 99 euros."
    v2 = page(sentences)
    v3 = page(["Sold out.", *sentences[1:]])
    for html in (v1, v2, v3):
        watch.should_parse(URL, html)
    latest = watch.diff(URL)
    assert (latest.from_version, latest.to_version) == (2, 3)
    # The page title, "Page", starts the text.
    assert "-page item 0 costs 0 euros." in latest.lines
    assert "+page sold out." in latest.lines
    first = watch.diff(URL, from_version=1, to_version=2)
    changed = [line for line in first.lines if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert changed == ["-item 7 costs 7 euros.", "+item 7 costs 99 euros."]
    assert first.lines[0].startswith(f"--- {URL} version 1 (new, ")
    assert first.lines[1].startswith(f"+++ {URL} version 2 (")
    whole = watch.diff(URL, from_version=0, to_version=1)
    assert len([line for line in whole.lines if line[:1] == "+" and "costs" in line]) == 20
    assert watch.diff(URL, from_version=2, to_version=2).lines == []


def test_diff_errors(make_watch: Callable[..., ChangeWatch]) -> None:
    """diff on a page never stored, or a version it does not have, is a clear error."""
    watch = make_watch(store_text=True)
    with pytest.raises(PageNotStoredError, match="never stored"):
        watch.diff(URL)
    watch.should_parse(URL, page(words(1)))
    with pytest.raises(PageNotStoredError, match="no version 5"):
        watch.diff(URL, to_version=5)
    assert watch.diff(URL).from_version == 0  # a single version: diffed against nothing


def test_binary_bodies_keep_no_text(make_watch: Callable[..., ChangeWatch]) -> None:
    """A binary body (PDF) has no text to keep."""
    watch = make_watch(store_text=True)
    watch.should_parse("https://example.com/a.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj")
    assert _text_rows(watch) == []


def test_from_env_passes_store_text(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """CHANGEWATCH_STORE_TEXT=1 turns store_text on in ChangeWatch.from_env()."""
    monkeypatch.setenv("CHANGEWATCH_STORE_TEXT", "1")
    monkeypatch.setenv("CHANGEWATCH_DATABASE_URL", f"sqlite:///{tmp_path}/env.db")
    monkeypatch.setenv("CHANGEWATCH_SEEN_URL", "memory:")
    with ChangeWatch.from_env() as watch:
        assert watch.store_text is True
        watch.should_parse(URL, long_page())
        assert len(_text_rows(watch)) == 1


def test_prune_removes_texts_no_version_refers_to(
    make_watch: Callable[..., ChangeWatch], clock: Clock
) -> None:
    """prune deletes a pruned version's text, keeps one a kept version (of any page) shares."""
    watch = make_watch(store_text=True)
    watch.should_parse(URL, long_page())  # v1: text shared with /copy below
    watch.should_parse("https://example.com/copy", long_page())
    clock.advance(60)
    watch.should_parse(URL, rewrite())  # v2: only this version has this text
    clock.advance(60)
    watch.should_parse(URL, rewrite(7))  # v3: current
    clock.advance(3600)
    assert len(_text_rows(watch)) == 3
    dry = watch.prune(1, timedelta(seconds=30), dry_run=True)
    assert (dry.removed, dry.texts_removed) == (2, 0)
    report = watch.prune(1, timedelta(seconds=30))
    assert (report.removed, report.texts_removed) == (2, 1)
    left = {bytes(r.content_sha256) for r in _text_rows(watch)}
    assert left == {
        watch.history(URL)[-1].content_sha256,
        watch.history("https://example.com/copy")[0].content_sha256,
    }
