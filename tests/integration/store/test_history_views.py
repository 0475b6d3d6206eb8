"""Flip-flops, the analyst views and retention, on SQLite and Postgres."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch

from .._history_data import (
    ABOUT,
    ARTICLE,
    EXPECTED_HOSTS,
    FLIP,
    MINOR,
    SHOP,
    STEADY,
    populate,
)
from .._pages import long_page, one_word_edit, rewrite, snapshot_rows, version_rows

if TYPE_CHECKING:
    from conftest import Clock

URL = "https://example.com/flip"


def _query(watch: ChangeWatch, sql: str, **params: Any) -> list[Any]:
    with watch.store.engine.connect() as conn:
        return list(conn.execute(sa.text(sql), params).all())


# -- flip-flops ---------------------------------------------------------------------------


def test_a_b_a_is_a_change_back_to_version_one(watch: ChangeWatch, clock: Clock) -> None:
    """A → B → A: the third fetch is "changed" (not "unchanged") with reverted_to=1."""
    a, b = rewrite(1), rewrite(2)
    assert watch.should_parse(URL, a).reverted_to is None
    clock.advance(60)
    second = watch.should_parse(URL, b)
    assert (second.kind, second.reverted_to) == ("changed", None)
    clock.advance(60)
    third = watch.should_parse(URL, a)
    assert (third.kind, third.version, third.reverted_to) == ("changed", 3, 1)
    clock.advance(60)
    assert watch.should_parse(URL, a).kind == "unchanged"  # compared with the current: A
    fourth = watch.should_parse(URL, b)
    assert (fourth.version, fourth.reverted_to) == (4, 2)  # the newest earlier B
    assert [v.reverted_to for v in watch.history(URL)] == [None, None, 1, 2]
    assert [r.reverted_to for r in version_rows(watch)] == [None, None, 1, 2]


def test_minor_change_back_is_marked_too(watch: ChangeWatch, clock: Clock) -> None:
    """A → A' (minor) → A: a minor change back to version 1."""
    watch.should_parse(URL, long_page(0))
    assert watch.should_parse(URL, one_word_edit(0)).kind == "minor"
    back = watch.should_parse(URL, long_page(0))
    assert (back.kind, back.reverted_to) == ("minor", 1)


def test_flip_window_bounds_how_far_back(make_watch: Callable[..., ChangeWatch]) -> None:
    """flip_window=2 sees versions n-1 and n-2 only; flip_window=0 turns detection off."""
    narrow = make_watch(flip_window=2)
    bodies = [rewrite(1), rewrite(2), rewrite(3), rewrite(1), rewrite(3)]
    got = [narrow.should_parse(URL, body).reverted_to for body in bodies]
    # v4 (=v1) is 3 versions back: outside the window; v5 (=v3) is 2 back: inside.
    assert got == [None, None, None, None, 3]
    off = make_watch(flip_window=0)
    assert off.should_parse(URL, rewrite(2)).reverted_to is None


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_flip_window_must_be_a_non_negative_int(
    make_watch: Callable[..., ChangeWatch], bad: Any
) -> None:
    from changewatch.errors import ConfigError

    with pytest.raises(ConfigError, match="flip_window"):
        make_watch(flip_window=bad)


def test_batches_mark_reversions_like_single_calls(watch: ChangeWatch) -> None:
    """should_parse_many: several pages of one batch, some flipping back, some not."""
    urls = [f"https://example.com/b/{i}" for i in range(4)]
    watch.should_parse_many([(u, rewrite(i)) for i, u in enumerate(urls)])
    watch.should_parse_many([(u, rewrite(i + 10)) for i, u in enumerate(urls)])
    third = watch.should_parse_many(
        [(u, rewrite(i) if i % 2 == 0 else rewrite(i + 20)) for i, u in enumerate(urls)]
    )
    assert [d.reverted_to for d in third] == [1, None, 1, None]
    # The same URL twice in one batch: B then A again, decided in order.
    again = watch.should_parse_many([(urls[1], rewrite(11)), (urls[1], rewrite(21))])
    assert [(d.version, d.reverted_to) for d in again] == [(4, 2), (5, 3)]


# -- views --------------------------------------------------------------------------------


def test_page_changes_has_one_row_per_change(watch: ChangeWatch, clock: Clock) -> None:
    kinds = populate(watch, clock)
    assert kinds[FLIP] == [("new", None), ("changed", None), ("changed", 1), ("changed", 2)]
    rows = _query(watch, "SELECT * FROM page_changes ORDER BY changed_at")
    assert [(r.url, r.version_no, r.kind, r.reverted_to) for r in rows] == [
        (FLIP, 2, "changed", None),
        (FLIP, 3, "changed", 1),
        (FLIP, 4, "changed", 2),
        (MINOR, 2, "minor", None),
        (ARTICLE, 2, "changed", None),
    ]
    versions = {(bytes(v.url_digest).hex(), v.version_no): v for v in version_rows(watch)}
    for r in rows:
        new = versions[(r.url_digest, r.version_no)]
        old = versions[(r.url_digest, r.version_no - 1)]
        assert r.content_sha256 == bytes(new.content_sha256).hex()
        assert r.previous_content_sha256 == bytes(old.content_sha256).hex()
        assert r.previous_version_no == r.version_no - 1
        assert r.host == r.url.split("/")[2]
    assert rows[3].distance is not None
    assert 0 < rows[3].distance <= 3
    # A flip-flop's new hash is an earlier version's hash.
    assert rows[1].content_sha256 == rows[0].previous_content_sha256


def test_page_latest_is_the_current_state(watch: ChangeWatch, clock: Clock) -> None:
    populate(watch, clock)
    rows = {r.url: r for r in _query(watch, "SELECT * FROM page_latest")}
    assert set(rows) == {FLIP, MINOR, STEADY, ARTICLE, ABOUT}
    snaps = {bytes(s.url_digest).hex(): s for s in snapshot_rows(watch)}
    for r in rows.values():
        s = snaps[r.url_digest]
        assert r.content_sha256 == bytes(s.content_sha256).hex()
        assert r.simhash == f"{s.simhash:016x}"
        assert (r.current_version_no, r.fetch_count) == (s.version_count, s.fetch_count)
    assert (rows[FLIP].change_count, rows[STEADY].change_count) == (3, 0)
    assert rows[STEADY].fetch_count == 4
    assert rows[STEADY].seconds_unchanged_at_last_fetch == pytest.approx(25 * 86400, abs=1)


def test_page_latest_shows_the_change_rate_and_due_time(watch: ChangeWatch, clock: Clock) -> None:
    """Migration 0006: the scheduling columns of page_snapshots, under analyst names."""
    populate(watch, clock)
    rows = {r.url_digest: r for r in _query(watch, "SELECT * FROM page_latest")}
    with watch.store.engine.connect() as conn:
        snaps = conn.execute(
            sa.text("SELECT url_digest, change_count, change_rate, due_at FROM page_snapshots")
        ).all()
    assert len(snaps) == len(rows) == 5
    for digest, change_count, change_rate, due_at in snaps:
        row = rows[bytes(digest).hex()]
        assert row.fetches_seeing_a_change == change_count
        if change_rate is None:
            assert row.changes_per_day is None
        else:
            assert float(row.changes_per_day) == pytest.approx(change_rate)
        assert (row.due_at is None) == (due_at is None)
    flip = next(r for r in rows.values() if r.url == FLIP)
    assert flip.fetches_seeing_a_change == 3
    assert flip.changes_per_day > 0
    # "What is due now?" from the view alone.
    due = _query(watch, "SELECT url FROM page_latest WHERE due_at IS NOT NULL ORDER BY due_at")
    assert due
    assert {r.url for r in due} <= {FLIP, MINOR, STEADY, ARTICLE, ABOUT}


def test_host_activity_counts_windows_and_medians(watch: ChangeWatch, clock: Clock) -> None:
    populate(watch, clock)
    rows = {r.host: r._asdict() for r in _query(watch, "SELECT * FROM host_activity")}
    assert set(rows) == set(EXPECTED_HOSTS)
    for host, expected in EXPECTED_HOSTS.items():
        for column, value in expected.items():
            got = rows[host][column]
            if value is None:
                assert got is None, (host, column)
            else:
                assert float(got) == pytest.approx(value, abs=1), (host, column)


def test_page_flip_flops_lists_pages_that_returned(watch: ChangeWatch, clock: Clock) -> None:
    populate(watch, clock)
    rows = _query(watch, "SELECT * FROM page_flip_flops")
    assert [(r.url, r.host, r.reversions, r.versions_returned_to) for r in rows] == [
        (FLIP, SHOP, 2, 2)
    ]
    assert rows[0].reverted_versions == "3->1, 4->2"
    assert rows[0].current_version_no == 4


# -- retention ----------------------------------------------------------------------------


def _history_of(watch: ChangeWatch, url: str) -> list[int]:
    return [v.version for v in watch.history(url)]


def test_prune_keeps_current_and_latest_n(watch: ChangeWatch, clock: Clock) -> None:
    """Only versions both old enough and outside the latest N go; version_count is kept."""
    for i in range(6):  # versions 1..6, one a day
        watch.should_parse(URL, rewrite(i))
        watch.should_parse("https://other.example/x", rewrite(100 + i % 2))
        clock.advance(86400)
    before = {bytes(s.url_digest): (s.version_count, s.fetch_count) for s in snapshot_rows(watch)}
    dry = watch.prune(2, timedelta(days=3), dry_run=True)
    assert dry.dry_run
    assert dry.removed_by_host == {"example.com": 3, "other.example": 3}
    assert _history_of(watch, URL) == [1, 2, 3, 4, 5, 6]  # a dry run removes nothing
    report = watch.prune(2, timedelta(days=3))
    # Version k was fetched only on day k - 1 (its last_seen); it is day 6 now, so versions
    # 1..3 (last seen before day 3) go; 4 is too recent; 5 and 6 are the latest two.
    assert report.removed_by_host == {"example.com": 3, "other.example": 3}
    assert _history_of(watch, URL) == [4, 5, 6]
    assert watch.prune(2, timedelta(0)).removed == 2  # now everything but the latest two
    assert _history_of(watch, URL) == [5, 6]
    assert watch.prune(1, timedelta(0)).removed == 2
    assert _history_of(watch, URL) == [6]
    assert watch.prune(1, timedelta(0)).removed == 0
    after = {bytes(s.url_digest): (s.version_count, s.fetch_count) for s in snapshot_rows(watch)}
    assert after == before
    # The store keeps deciding on top of a pruned history; the next version is 7.
    assert watch.should_parse(URL, rewrite(0)).version == 7
    changes = _query(watch, "SELECT * FROM page_changes WHERE url = :u ORDER BY version_no", u=URL)
    assert [(c.version_no, c.previous_content_sha256 is None) for c in changes] == [
        (6, True),
        (7, False),
    ]


def test_prune_in_small_batches_removes_the_same(watch: ChangeWatch, clock: Clock) -> None:
    urls = [f"https://h{i % 3}.example/p/{i}" for i in range(12)]
    for round_ in range(4):
        watch.should_parse_many([(u, rewrite(round_ * 50 + i)) for i, u in enumerate(urls)])
        clock.advance(3600)
    report = watch.store.prune(1, timedelta(0), clock.now, batch_size=5)
    assert report.removed == 36
    assert report.batches == 8
    assert report.removed_by_host == {f"h{i}.example": 12 for i in range(3)}
    assert sorted(r.version_no for r in version_rows(watch)) == [4] * 12


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, timedelta(days=1)), "keep_versions"),
        ((1, timedelta(days=-1)), "older_than"),
        ((1, 30), "older_than"),
    ],
)
def test_prune_refuses_bad_arguments(watch: ChangeWatch, args: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        watch.prune(*args)


def test_migration_backfills_host_and_shows_old_rows(
    make_database_url: Callable[..., str],
) -> None:
    """Rows written before 0004 get page_versions.host and appear in the views."""
    from datetime import UTC, datetime

    from changewatch.store import create_engine
    from changewatch.store.migrate import upgrade
    from changewatch.store.tables import page_snapshots, page_versions

    url = make_database_url(migrated=False)
    engine = create_engine(url)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    common = {
        "raw_sha256": b"r" * 32,
        "simhash": 5,
        "fingerprint_version": 1,
        "text_length": 10,
    }
    try:
        upgrade(engine, "0002")
        with engine.begin() as conn:
            conn.execute(
                sa.insert(page_snapshots),
                {
                    "url_digest": b"d" * 16,
                    "host": "old.example",
                    "url": "https://old.example/",
                    "canon_version": 1,
                    "content_sha256": b"b" * 32,
                    "first_seen": t0,
                    "last_seen": t0,
                    "last_changed": t0,
                    "version_count": 2,
                    "fetch_count": 2,
                    **common,
                },
            )
            # The 0002 columns only: page_versions of this code has two more.
            rows = ((1, "new", None, b"a" * 32), (2, "changed", 9, b"b" * 32))
            for n, kind, dist, content in rows:
                conn.execute(
                    sa.text(
                        "INSERT INTO page_versions (url_digest, version_no, kind, distance, "
                        "raw_sha256, content_sha256, simhash, fingerprint_version, text_length, "
                        "first_seen, last_seen) VALUES (:d, :n, :k, :dist, :r, :c, 5, 1, 10, "
                        ":t, :t)"
                    ).bindparams(sa.bindparam("t", type_=page_versions.c.first_seen.type)),
                    {"d": b"d" * 16, "n": n, "k": kind, "dist": dist, "r": b"r" * 32}
                    | {"c": content, "t": t0},
                )
        upgrade(engine)
        with engine.connect() as conn:
            hosts = conn.execute(sa.select(page_versions.c.host)).scalars().all()
            changes = conn.execute(sa.text("SELECT host, version_no FROM page_changes")).all()
    finally:
        engine.dispose()
    assert hosts == ["old.example", "old.example"]
    assert [tuple(r) for r in changes] == [("old.example", 2)]


@pytest.mark.postgres
def test_postgres_comments_every_view_and_history_column(
    make_pg_database: Callable[..., str],
) -> None:
    """COMMENT ON every view, every view column and every page_versions column."""
    from changewatch.store import create_engine
    from changewatch.store.views import VIEW_NAMES

    engine = create_engine(make_pg_database())
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT c.relname, a.attname, col_description(c.oid, a.attnum), "
                "obj_description(c.oid, 'pg_class') FROM pg_class c "
                "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
                "AND NOT a.attisdropped WHERE c.relname = ANY(%(names)s)",
                {"names": [*VIEW_NAMES, "page_versions"]},
            ).all()
    finally:
        engine.dispose()
    assert {r[0] for r in rows} == {*VIEW_NAMES, "page_versions"}
    missing = [f"{r[0]}.{r[1]}" for r in rows if not r[2]]
    assert missing == []
    assert all(r[3] for r in rows)


@pytest.mark.postgres
def test_postgres_comments_of_the_change_rate_say_what_the_code_does(
    make_pg_database: Callable[..., str],
) -> None:
    """After the migrations, the Postgres comments of page_latest.changes_per_day and
    page_snapshots.change_rate are the code's: 1 after one fetch, never NULL."""
    from changewatch.store import create_engine
    from changewatch.store.tables import page_snapshots
    from changewatch.store.views import VIEW_COMMENTS

    engine = create_engine(make_pg_database())
    try:
        with engine.connect() as conn:
            got = dict(
                conn.exec_driver_sql(
                    "SELECT c.relname || '.' || a.attname, col_description(c.oid, a.attnum) "
                    "FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
                    "WHERE (c.relname, a.attname) IN "
                    "(('page_latest', 'changes_per_day'), ('page_snapshots', 'change_rate'))"
                ).all()
            )
    finally:
        engine.dispose()
    assert got == {
        "page_latest.changes_per_day": VIEW_COMMENTS["page_latest"]["changes_per_day"],
        "page_snapshots.change_rate": page_snapshots.c.change_rate.comment,
    }
    assert all("1" in text and "NULL" not in text for text in got.values())
