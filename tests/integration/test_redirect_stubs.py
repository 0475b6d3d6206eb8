"""Redirect stubs through a real store, on both dialects: a meta-refresh stub served in
place of a stored page keeps the stored version, as an HTTP redirect would (issue 20: a real
capture of a legal page was such a stub for one fetch, between two unchanged ones)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.store.tables import page_snapshots

if TYPE_CHECKING:
    from conftest import Clock

URL = "https://example.com/en/privacy-policy"
PAGE = (
    "<html><head><title>Privacy policy</title></head><body><nav><a href='/'>Home</a></nav>"
    "<main><h1>Privacy policy</h1><p>We keep the e-mail address you give us to tell you "
    "when a document changes, and nothing else.</p></main></body></html>"
)
STUB = (
    "<!doctype html><html><head><title>You should be redirected quickly</title><meta "
    'http-equiv="refresh" content="0; url=https://example.com/en/privacy-policy/"></head>'
    '<body><p>You should be redirected quickly, if not <a href="/en/privacy-policy/">click '
    "here</a>.</p></body></html>"
)


def _row(watch: ChangeWatch, digest: bytes) -> sa.Row[tuple[object, ...]]:
    cols = page_snapshots.c
    query = sa.select(cols.raw_sha256, cols.content_sha256, cols.version_count, cols.etag)
    with watch.store.engine.connect() as conn:
        return conn.execute(query.where(cols.url_digest == digest)).one()


def test_a_stub_between_two_fetches_of_a_page_changes_nothing(
    watch: ChangeWatch, clock: Clock
) -> None:
    first = watch.should_parse(URL, PAGE, etag='"v1"')
    stored = _row(watch, first.url_digest)
    clock.advance(86_400)
    stub = watch.should_parse(URL, STUB, etag='"stub"')
    assert (stub.kind, stub.path, bool(stub)) == ("unchanged", "redirect", False)
    assert stub.redirect_to == "https://example.com/en/privacy-policy/"
    assert stub.content_sha256 == first.content_sha256
    assert _row(watch, first.url_digest) == stored  # raw hash, content, versions, validators
    clock.advance(86_400)
    back = watch.should_parse(URL, PAGE)
    assert (back.kind, back.path) == ("unchanged", "raw")
    assert [v.version for v in watch.history(URL)] == [1]
    clock.advance(86_400)
    edited = watch.should_parse(URL, PAGE.replace("nothing else", "your name"))
    assert edited.kind in ("changed", "minor")
    assert [v.version for v in watch.history(URL)] == [1, 2]


def test_the_same_stub_in_a_batch_and_one_by_one_decides_alike(
    watch: ChangeWatch, clock: Clock
) -> None:
    """``should_parse_many`` takes the same decision, and a page first met as a stub is
    ``new`` with its target named (it is stored: the real page later is a change)."""
    other = "https://example.com/en/terms"
    watch.should_parse(URL, PAGE)
    clock.advance(86_400)
    decisions = watch.should_parse_many([(URL, STUB), (other, STUB)])
    assert [(d.kind, d.path) for d in decisions] == [("unchanged", "redirect"), ("new", "redirect")]
    assert {d.redirect_to for d in decisions} == {"https://example.com/en/privacy-policy/"}
    clock.advance(86_400)
    real = watch.should_parse(other, PAGE)
    assert real.kind == "changed"
    assert real.redirect_to is None
