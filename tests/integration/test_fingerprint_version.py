"""Rows fingerprinted under older rules: re-keyed when unchanged, never a spurious version."""

from __future__ import annotations

import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.fingerprint import FINGERPRINT_VERSION
from changewatch.fingerprint.legacy import content_sha256_v3
from changewatch.store.tables import page_snapshots

from ._pages import counts, long_page, page, snapshot, version_rows, words

OLD = FINGERPRINT_VERSION - 1
URL = "https://example.com/a"


def _age(watch: ChangeWatch, digest: bytes, *, simhash: int | None = None) -> None:
    """Make a stored row look fingerprinted by the previous rules: old version, other hashes."""
    values: dict[str, object] = {"fingerprint_version": OLD, "content_sha256": b"\x01" * 32}
    values["simhash"] = simhash if simhash is not None else 0x0123_4567_89AB_CDEF
    with watch.store.engine.begin() as conn:
        conn.execute(
            sa.update(page_snapshots).where(page_snapshots.c.url_digest == digest).values(values)
        )


def test_same_bytes_under_older_rules_is_unchanged_and_rekeyed(watch: ChangeWatch) -> None:
    """Identical bytes, older fingerprint_version: unchanged, row re-keyed, no version row."""
    html = long_page()
    first = watch.should_parse(URL, html)
    _age(watch, first.url_digest)
    again = watch.should_parse(URL, html)
    assert (again.kind, again.path, again.distance, again.version) == (
        "unchanged",
        "refingerprint",
        0,
        1,
    )
    assert (again.content_sha256, again.simhash) == (first.content_sha256, first.simhash)
    row = snapshot(watch, first.url_digest)
    assert row.fingerprint_version == FINGERPRINT_VERSION
    assert (row.content_sha256, row.simhash) == (first.content_sha256, first.simhash)
    assert (row.version_count, row.fetch_count) == (1, 2)
    assert counts(watch) == (1, 1, 2)
    third = watch.should_parse(URL, html)
    assert (third.kind, third.path) == ("unchanged", "raw")  # back on the fast path


def test_batch_rekeys_like_one_by_one(watch: ChangeWatch) -> None:
    """should_parse_many re-keys old-rule rows with identical bytes the same way."""
    pages = [(f"https://example.com/{i}", page(words(i, 60))) for i in range(5)]
    firsts = watch.should_parse_many(pages)
    for d in firsts[::2]:
        _age(watch, d.url_digest)
    again = watch.should_parse_many(pages)
    assert [(d.kind, d.path) for d in again] == [
        ("unchanged", "refingerprint" if i % 2 == 0 else "raw") for i in range(5)
    ]
    rows = [snapshot(watch, d.url_digest) for d in firsts]
    assert {r.fingerprint_version for r in rows} == {FINGERPRINT_VERSION}
    assert [bytes(r.content_sha256) for r in rows] == [d.content_sha256 for d in firsts]
    assert len(version_rows(watch)) == 5


def test_other_bytes_under_older_rules_are_decided_by_simhash(watch: ChangeWatch) -> None:
    """New bytes on an old-rule row: no content-hash comparison is possible, SimHash decides.

    Here the old rules happened to give the same SimHash, so a noise-only re-render is
    ``minor`` at distance 0 — the documented cost of a rule change on the first fetch after it.
    """
    first = watch.should_parse(URL, page(words(1), nonce="one"))
    _age(watch, first.url_digest, simhash=first.simhash)
    later = watch.should_parse(URL, page(words(1), nonce="two"))
    assert (later.kind, later.distance, later.path) == ("minor", 0, "simhash")
    row = snapshot(watch, first.url_digest)
    assert (row.fingerprint_version, row.version_count) == (FINGERPRINT_VERSION, 2)
    settled = watch.should_parse(URL, page(words(1), nonce="three"))
    assert (settled.kind, settled.path) == ("unchanged", "normalised")


def test_real_edit_under_older_rules_is_never_unchanged(watch: ChangeWatch) -> None:
    """An edited page on an old-rule row is reported as a change, with a new version row."""
    first = watch.should_parse(URL, long_page())
    _age(watch, first.url_digest)
    edited = watch.should_parse(URL, page(words(5)))
    assert edited.kind in ("minor", "changed")
    assert len(version_rows(watch)) == 2


def _as_version_3(watch: ChangeWatch, digest: bytes, html: str) -> None:
    """Make a stored row what fingerprint version 3 wrote for ``html``: its content hash
    over the whole visible text, every time of day removed, and version 3."""
    values = {"fingerprint_version": 3, "content_sha256": content_sha256_v3(html)}
    with watch.store.engine.begin() as conn:
        conn.execute(
            sa.update(page_snapshots).where(page_snapshots.c.url_digest == digest).values(values)
        )


def _v3_page(story: str, *, nav: str, clock: str) -> str:
    return (
        f"<html><body><nav>{nav}</nav><main><p>{story}</p></main>"
        f"<footer>Generated at {clock}</footer></body></html>"
    )


def test_version_3_rows_move_to_version_4_without_a_spurious_change(watch: ChangeWatch) -> None:
    """A row stored under version 3 and a re-fetch with other bytes but the same content by
    version 3's own rules (another clock): unchanged (refingerprint), the row re-keyed to
    version 4 with no new version; the next noise-only fetch is decided under version 4."""
    story = "The committee approved the revised budget after a long debate on Tuesday."
    first_html = _v3_page(story, nav="Home News", clock="12:00")
    first = watch.should_parse(URL, first_html)
    _as_version_3(watch, first.url_digest, first_html)
    again = watch.should_parse(URL, _v3_page(story, nav="Home News", clock="13:45"))
    assert (again.kind, again.path, again.version) == ("unchanged", "refingerprint", 1)
    row = snapshot(watch, first.url_digest)
    assert (row.fingerprint_version, row.version_count) == (FINGERPRINT_VERSION, 1)
    assert row.content_sha256 == first.content_sha256
    chrome_only = watch.should_parse(URL, _v3_page(story, nav="Home News Sport", clock="14:00"))
    assert (chrome_only.kind, chrome_only.path) == ("unchanged", "normalised")


def test_a_real_edit_on_a_version_3_row_is_a_change(watch: ChangeWatch) -> None:
    """A row stored under version 3 and a re-fetch whose words changed: never unchanged."""
    story = "The committee approved the revised budget after a long debate on Tuesday."
    first_html = _v3_page(story, nav="Home News", clock="12:00")
    first = watch.should_parse(URL, first_html)
    _as_version_3(watch, first.url_digest, first_html)
    edited = _v3_page(story.replace("approved", "rejected"), nav="Home News", clock="12:00")
    later = watch.should_parse(URL, edited)
    assert later.kind in ("minor", "changed")
    assert later.path == "simhash"
    assert snapshot(watch, first.url_digest).version_count == 2
