"""Chrome and outlinks beside the content (fingerprint version 4): a chrome-only change is
unchanged for the crawler, flagged on the Decision and kept in page_snapshots, on both
dialects (issue 20)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.store.tables import page_snapshots

if TYPE_CHECKING:
    from conftest import Clock

URL = "https://example.com/news/budget"
STORY = "<p>The committee approved the revised budget after a long debate on Tuesday.</p>"


def _page(*, nav: str = "<a href='/'>Home</a> <a href='/news'>News</a>", story: str = STORY,
          banner: str = "") -> str:  # fmt: skip
    return (
        f"<html><body><header><nav>{nav}</nav></header>{banner}<main>{story}</main>"
        "<footer>Contact</footer></body></html>"
    )


def _row(watch: ChangeWatch, digest: bytes) -> sa.Row[tuple[object, ...]]:
    cols = page_snapshots.c
    query = sa.select(
        cols.chrome_sha256,
        cols.links_sha256,
        cols.chrome_changed_at,
        cols.links_changed_at,
        cols.version_count,
    ).where(cols.url_digest == digest)
    with watch.store.engine.connect() as conn:
        row = conn.execute(query).one()
    return row


def test_a_new_page_stores_its_chrome_and_links_hashes(watch: ChangeWatch) -> None:
    """The first fetch keeps the chrome and outlinks hashes; nothing is flagged."""
    first = watch.should_parse(URL, _page())
    assert (first.kind, first.chrome_changed, first.links_changed) == ("new", False, False)
    row = _row(watch, first.url_digest)
    assert row.chrome_sha256 is not None
    assert row.links_sha256 is not None
    assert (row.chrome_changed_at, row.links_changed_at) == (None, None)


def test_a_chrome_only_change_is_unchanged_and_flagged(watch: ChangeWatch) -> None:
    """A banner added outside the main content: unchanged (path normalised), chrome_changed,
    links unchanged; the row keeps the new chrome hash and the time of the change."""
    first = watch.should_parse(URL, _page())
    again = watch.should_parse(URL, _page(banner="<aside>We are hiring!</aside>"))
    assert (again.kind, again.path) == ("unchanged", "normalised")
    assert (again.chrome_changed, again.links_changed) == (True, False)
    row = _row(watch, first.url_digest)
    assert row.chrome_changed_at is not None
    assert row.links_changed_at is None
    assert row.version_count == 1
    settled = watch.should_parse(URL, _page(banner="<aside>We are hiring!</aside>"))
    assert (settled.kind, settled.chrome_changed) == ("unchanged", False)


def test_new_outlinks_are_flagged_without_a_content_change(watch: ChangeWatch) -> None:
    """The navigation gains a link: unchanged, links_changed (and chrome_changed: its text
    moved too); a tracking parameter on a link changes nothing."""
    first = watch.should_parse(URL, _page())
    more = "<a href='/'>Home</a> <a href='/news'>News</a> <a href='/new-page'>New</a>"
    again = watch.should_parse(URL, _page(nav=more))
    assert (again.kind, again.links_changed, again.chrome_changed) == ("unchanged", True, True)
    assert _row(watch, first.url_digest).links_changed_at is not None
    tracked = more.replace("/new-page'", "/new-page?utm_source=mail'")
    same = watch.should_parse(URL, _page(nav=tracked))
    assert (same.kind, same.links_changed, same.chrome_changed) == ("unchanged", False, False)


def test_a_content_change_is_changed_with_its_flags(watch: ChangeWatch) -> None:
    """A real edit of the main content is a change, whatever the chrome did."""
    watch.should_parse(URL, _page())
    edited = watch.should_parse(URL, _page(story=STORY.replace("approved", "rejected")))
    assert edited.kind in ("minor", "changed")
    assert (edited.chrome_changed, edited.links_changed) == (False, False)


def test_batches_flag_like_one_by_one(watch: ChangeWatch) -> None:
    """should_parse_many sets the same flags."""
    urls = [f"https://example.com/p{i}" for i in range(4)]
    watch.should_parse_many([(u, _page()) for u in urls])
    again = watch.should_parse_many(
        [(u, _page(banner="<aside>Sale</aside>") if i % 2 else _page()) for i, u in enumerate(urls)]
    )
    assert [(d.kind, d.chrome_changed) for d in again] == [
        ("unchanged", i % 2 == 1) for i in range(4)
    ]


def test_chrome_only_changes_land_in_the_page_history_view(
    watch: ChangeWatch, clock: Clock
) -> None:
    """page_history: a chrome-only change (what 'chrome', kind 'unchanged'), a links change
    ('chrome+links': the menu's text moved too), then a content change that also changed the
    chrome ('content', flagged); page_chrome_changes keeps one row per such fetch."""
    watch.should_parse(URL, _page())
    clock.advance(60)
    watch.should_parse(URL, _page(banner="<aside>We are hiring!</aside>"))
    clock.advance(60)
    more = "<a href='/'>Home</a> <a href='/news'>News</a> <a href='/jobs'>Jobs</a>"
    watch.should_parse(URL, _page(nav=more, banner="<aside>We are hiring!</aside>"))
    clock.advance(60)
    edited = watch.should_parse(URL, _page(nav=more, story=STORY.replace("approved", "rejected")))
    assert edited.kind in ("minor", "changed")
    query = sa.text(
        "SELECT url, what, kind, version_no, chrome_changed, links_changed FROM page_history "
        "ORDER BY changed_at"
    )
    with watch.store.engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(query)]
        chrome_rows = conn.execute(sa.text("SELECT count(*) FROM page_chrome_changes")).scalar()
    assert [(r[1], r[2], r[3], bool(r[4]), bool(r[5])) for r in rows] == [
        ("chrome", "unchanged", None, True, False),
        ("chrome+links", "unchanged", None, True, True),
        ("content", edited.kind, 2, True, False),
    ]
    assert {r[0] for r in rows} == {URL}
    assert chrome_rows == 3
