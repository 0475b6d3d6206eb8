"""should_parse / should_parse_many / history against real SQLite and Postgres stores."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from changewatch import ChangeWatch, canonicalise, fingerprint, hamming, url_digest
from changewatch.store.store import _SQLITE_TAKE_WRITE_LOCK

from ._pages import (
    counts,
    long_page,
    one_word_edit,
    page,
    rewrite,
    snapshot,
    snapshot_rows,
    version_rows,
    words,
)

if TYPE_CHECKING:
    from conftest import Clock

URL = "https://example.com/articles/1"


def _is_utc(value: Any) -> bool:
    return value.tzinfo is not None and value.utcoffset() == timedelta(0)


def test_pages_used_here_have_the_intended_distances() -> None:
    """The one-word edit is within distance 1..3 of the long page and the rewrite beyond 3."""
    base = fingerprint(long_page()).simhash
    assert 1 <= hamming(base, fingerprint(one_word_edit()).simhash) <= 3
    assert hamming(base, fingerprint(rewrite()).simhash) > 3


def test_first_fetch_is_new(watch: ChangeWatch) -> None:
    """A URL never stored is "new", truthy, with no distance, no duplicate and version 1."""
    d = watch.should_parse(URL, long_page())
    assert d.kind == "new"
    assert bool(d) is True
    assert d.distance is None
    assert d.duplicate_of is None
    assert d.path == "new"
    assert d.version == 1
    assert d.url == canonicalise(URL)
    assert d.url_digest == url_digest(URL)
    fp = fingerprint(long_page())
    assert (d.content_sha256, d.simhash) == (fp.content_sha256, fp.simhash)


def test_identical_bytes_are_unchanged_via_raw_path(watch: ChangeWatch) -> None:
    """Identical bytes are "unchanged" (falsy) by the raw-hash fast path, distance 0."""
    watch.should_parse(URL, long_page())
    d = watch.should_parse(URL, long_page())
    assert d.kind == "unchanged"
    assert bool(d) is False
    assert d.path == "raw"
    assert d.distance == 0
    assert d.version == 1


def test_str_and_its_utf8_bytes_are_the_same_raw_page(watch: ChangeWatch) -> None:
    """A str page and its UTF-8 bytes hash the same, so the second is unchanged by raw path."""
    html = page(["café", "naïve"] * 20)
    watch.should_parse(URL, html)
    assert watch.should_parse(URL, html.encode("utf-8")).path == "raw"


@pytest.mark.parametrize(
    "noisy",
    [
        pytest.param(page(words(0), nonce="zz9999"), id="script-nonce-and-comment"),
        pytest.param(long_page().replace("<p>", "<p>\n\n   ").replace(" ", "  "), id="whitespace"),
        pytest.param(page(words(0), head_extra="<style>p{color:red}</style>"), id="style"),
        pytest.param(long_page().replace("<p>", "<p><b></b>"), id="empty-markup"),
    ],
)
def test_noise_only_change_is_unchanged_via_normalised_path(watch: ChangeWatch, noisy: str) -> None:
    """Different bytes with the same visible text are "unchanged" via the normalised path."""
    assert noisy != long_page()
    watch.should_parse(URL, long_page())
    d = watch.should_parse(URL, noisy)
    assert (d.kind, d.path, d.distance, bool(d)) == ("unchanged", "normalised", 0, False)


def test_after_normalised_match_the_new_bytes_take_the_raw_path(watch: ChangeWatch) -> None:
    """The raw hash of a noise-only re-render is kept: the same bytes next time hit "raw"."""
    watch.should_parse(URL, long_page())
    noisy = page(words(0), nonce="n2")
    assert watch.should_parse(URL, noisy).path == "normalised"
    assert watch.should_parse(URL, noisy).path == "raw"
    assert watch.should_parse(URL, long_page()).path == "normalised"


def test_one_word_edit_is_minor(watch: ChangeWatch) -> None:
    """One word changed in a long page is "minor" (truthy) with distance 1..3 and version 2."""
    watch.should_parse(URL, long_page())
    d = watch.should_parse(URL, one_word_edit())
    assert d.kind == "minor"
    assert bool(d) is True
    assert d.distance is not None
    assert 1 <= d.distance <= 3
    assert d.distance == hamming(
        fingerprint(long_page()).simhash, fingerprint(one_word_edit()).simhash
    )
    assert (d.path, d.version) == ("simhash", 2)


def test_rewrite_is_changed(watch: ChangeWatch) -> None:
    """A rewritten page is "changed" (truthy) with distance above 3."""
    watch.should_parse(URL, long_page())
    d = watch.should_parse(URL, rewrite())
    assert d.kind == "changed"
    assert bool(d) is True
    assert d.distance is not None
    assert d.distance > 3
    assert (d.path, d.version) == ("simhash", 2)


def test_same_content_under_another_url_is_new_with_duplicate_of(watch: ChangeWatch) -> None:
    """Same normalised content at a second URL: "new", duplicate_of the first canonical URL."""
    watch.should_parse("HTTPS://Example.com:443/a?utm_source=x", long_page())
    d = watch.should_parse("https://example.com/b", page(words(0), nonce="other"))
    assert d.kind == "new"
    assert d.duplicate_of == "https://example.com/a"
    unrelated = watch.should_parse("https://example.com/c", rewrite())
    assert unrelated.duplicate_of is None


def test_minor_distance_zero_makes_a_one_word_edit_changed(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """With minor_distance=0 the one-word edit (distance ≥ 1) is "changed", not "minor"."""
    watch = make_watch(minor_distance=0)
    watch.should_parse(URL, long_page())
    d = watch.should_parse(URL, one_word_edit())
    assert d.kind == "changed"
    assert d.distance is not None
    assert d.distance >= 1


def test_minor_distance_is_an_inclusive_bound(make_watch: Callable[..., ChangeWatch]) -> None:
    """minor_distance equal to the edit's distance keeps it minor; one less makes it changed."""
    distance = hamming(fingerprint(long_page()).simhash, fingerprint(one_word_edit()).simhash)
    exact = make_watch(minor_distance=distance)
    exact.should_parse(URL, long_page())
    assert exact.should_parse(URL, one_word_edit()).kind == "minor"
    below = make_watch(minor_distance=distance - 1)
    assert below.should_parse(URL, long_page()).kind == "changed"


def test_history_records_every_version_with_times(watch: ChangeWatch, clock: Clock) -> None:
    """history() lists versions oldest first; each version's last_seen is its last fetch."""
    t0 = clock.now
    assert watch.should_parse(URL, long_page()).kind == "new"
    t1 = clock.advance(10)
    assert watch.should_parse(URL, long_page()).kind == "unchanged"
    t2 = clock.advance(10)
    assert watch.should_parse(URL, one_word_edit()).kind == "minor"
    t3 = clock.advance(10)
    assert watch.should_parse(URL, one_word_edit()).kind == "unchanged"
    t4 = clock.advance(10)
    changed = watch.should_parse(URL, rewrite())
    assert changed.kind == "changed"
    t5 = clock.advance(10)
    assert watch.should_parse(URL, page(words(1000), nonce="x")).kind == "unchanged"

    history = watch.history("https://EXAMPLE.com/articles/1#frag")
    assert [(v.version, v.kind) for v in history] == [(1, "new"), (2, "minor"), (3, "changed")]
    assert history[0].distance is None
    assert history[1].distance == hamming(
        fingerprint(long_page()).simhash, fingerprint(one_word_edit()).simhash
    )
    assert history[2].distance == changed.distance
    assert [(v.first_seen, v.last_seen) for v in history] == [(t0, t1), (t2, t3), (t4, t5)]
    assert all(_is_utc(v.first_seen) and _is_utc(v.last_seen) for v in history)
    assert [v.content_sha256 for v in history] == [
        fingerprint(html).content_sha256 for html in (long_page(), one_word_edit(), rewrite())
    ]
    assert history[2].raw_sha256 == fingerprint(rewrite()).raw_sha256


def test_history_of_unknown_url_is_empty(watch: ChangeWatch) -> None:
    """history() of a URL never stored is an empty list."""
    watch.should_parse(URL, long_page())
    assert watch.history("https://example.com/never") == []


def test_snapshot_counters_and_timestamps(watch: ChangeWatch, clock: Clock) -> None:
    """page_snapshots counts every call in fetch_count and every version in version_count."""
    t0 = clock.now
    htmls = [
        long_page(),
        long_page(),
        page(words(0), nonce="q"),
        one_word_edit(),
        rewrite(),
        rewrite(),
        long_page(),
    ]
    kinds = []
    for html in htmls:
        kinds.append(watch.should_parse(URL, html).kind)
        clock.advance(5)
    assert kinds == ["new", "unchanged", "unchanged", "minor", "changed", "unchanged", "changed"]
    row = snapshot(watch, url_digest(URL))
    assert row.fetch_count == len(htmls)
    assert row.version_count == 4
    assert len(version_rows(watch)) == 4
    assert (row.first_seen, row.last_changed, row.last_seen) == (
        t0,
        t0 + timedelta(seconds=30),
        t0 + timedelta(seconds=30),
    )
    for value in (row.first_seen, row.last_seen, row.last_changed):
        assert _is_utc(value)
    for version in version_rows(watch):
        assert _is_utc(version.first_seen)
        assert _is_utc(version.last_seen)
    assert (row.url, row.host) == ("https://example.com/articles/1", "example.com")


def test_timestamps_are_utc_in_the_database_itself(watch: ChangeWatch, clock: Clock) -> None:
    """The stored instant, read back without the type decorator, is the clock's UTC time."""
    watch.should_parse(URL, long_page())
    with watch.store.engine.connect() as conn:
        if watch.store.dialect == "postgresql":
            conn.execute(sa.text("SET TIME ZONE 'America/New_York'"))
            raw = conn.execute(sa.text("SELECT first_seen FROM page_snapshots")).scalar_one()
            assert raw == clock.now
        else:
            raw = conn.execute(sa.text("SELECT first_seen FROM page_snapshots")).scalar_one()
            assert raw == clock.now.replace(tzinfo=None).isoformat(sep=" ")


@pytest.mark.parametrize(
    ("policy", "stored"),
    [
        ("full", "https://example.com/a/b?page=2&session=1"),
        ("no-query", "https://example.com/a/b"),
        ("none", None),
    ],
)
def test_url_policy_decides_what_of_the_url_is_stored(
    make_watch: Callable[..., ChangeWatch], policy: str, stored: str | None
) -> None:
    """url_policy full/no-query/none stores the canonical URL, it without query, or NULL."""
    watch = make_watch(url_policy=policy)
    url = "https://alice:s3cret@example.com/a/b?session=1&page=2#top"
    assert watch.should_parse(url, long_page()).kind == "new"
    assert watch.should_parse(url, long_page()).kind == "unchanged"
    (row,) = snapshot_rows(watch)
    assert row.url == stored
    assert row.host == "example.com"
    assert row.url_digest == url_digest(url)


@pytest.mark.parametrize("policy", ["full", "no-query", "none"])
def test_credentials_are_never_stored(make_watch: Callable[..., ChangeWatch], policy: str) -> None:
    """User and password of an input URL appear in no stored column under any policy."""
    watch = make_watch(url_policy=policy)
    url = "https://alice:s3cret@example.com/a?q=1"
    watch.should_parse(url, long_page())
    watch.should_parse("http://bob:hunter2@example.com:8080/", long_page())
    watch.should_parse(url, rewrite())
    with watch.store.engine.connect() as conn:
        for table in ("page_snapshots", "page_versions"):
            for row in conn.execute(sa.text(f"SELECT * FROM {table}")).all():
                for value in row:
                    text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
                    for secret in ("alice", "s3cret", "bob", "hunter2"):
                        assert secret not in text


def test_duplicate_of_names_the_digest_when_no_url_is_stored(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """Under url_policy "none", duplicate_of is the first page's URL digest in hex."""
    watch = make_watch(url_policy="none")
    watch.should_parse("https://example.com/a", long_page())
    d = watch.should_parse("https://example.com/b", long_page())
    assert d.duplicate_of == url_digest("https://example.com/a").hex()


def _batches() -> list[list[tuple[str, str | bytes]]]:
    """Batches covering every decision kind, repeats within a batch and in-batch duplicates."""
    a, b, c, d, e = (f"https://example.com/{name}" for name in "abcde")
    return [
        [
            (a, long_page()),
            (b, rewrite()),
            (c, long_page(7)),
            (a, long_page()),  # repeated: unchanged after its own "new"
            (d, page(words(0), nonce="dup")),  # duplicate of a, within the batch
            (e, long_page(7)),  # duplicate of c
            (a, one_word_edit()),  # third occurrence: minor
        ],
        [
            (a, one_word_edit()),  # unchanged, raw
            (b, page(words(1000), nonce="n")),  # unchanged, normalised
            (c, rewrite(7)),  # changed
            ("https://example.com/f", rewrite()),  # new, duplicate of b (stored)
            (d, one_word_edit()),  # minor
            (c, long_page(7)),  # changed back, repeat in batch
            (e, long_page(7).encode("utf-8")),  # unchanged, raw (bytes)
        ],
        [(url, html) for url, html in [(a, rewrite(3)), (b, rewrite()), (e, "")]],
    ]


def _store_state(watch: ChangeWatch) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    snaps = [tuple(r) for r in snapshot_rows(watch)]
    versions = [tuple(v for k, v in r._mapping.items() if k != "id") for r in version_rows(watch)]
    return snaps, versions


def test_should_parse_many_equals_one_by_one_calls(
    make_database_url: Callable[..., str], make_watch: Callable[..., ChangeWatch], clock: Clock
) -> None:
    """A batch gives the same decisions and the same stored rows as one-by-one calls."""
    batched = make_watch()
    single = make_watch(database_url=make_database_url())
    batch_decisions = []
    single_decisions = []
    for batch in _batches():
        batch_decisions.extend(batched.should_parse_many(batch))
        single_decisions.extend(single.should_parse(url, html) for url, html in batch)
        clock.advance(60)
    assert [(d.kind, d.distance, d.duplicate_of) for d in batch_decisions] == [
        (d.kind, d.distance, d.duplicate_of) for d in single_decisions
    ]
    assert batch_decisions == single_decisions
    kinds = {d.kind for d in batch_decisions}
    assert kinds == {"new", "unchanged", "minor", "changed"}
    assert {d.path for d in batch_decisions} >= {"raw", "normalised"}
    assert any(d.duplicate_of for d in batch_decisions)
    assert _store_state(batched) == _store_state(single)


def test_should_parse_many_duplicate_of_agrees_with_one_by_one_for_three_copies(
    make_database_url: Callable[..., str], make_watch: Callable[..., ChangeWatch]
) -> None:
    """Several new pages with one content in one batch name the same duplicate_of as singly."""
    # Largest digest first, so "the first copy" and "the smallest digest" differ.
    urls = sorted((f"https://example.com/copy/{i}" for i in range(8)), key=url_digest, reverse=True)
    batched = make_watch()
    single = make_watch(database_url=make_database_url())
    batch = batched.should_parse_many([(u, long_page()) for u in urls])
    one_by_one = [single.should_parse(u, long_page()) for u in urls]
    assert [d.duplicate_of for d in batch] == [d.duplicate_of for d in one_by_one]


def test_should_parse_many_of_nothing_is_empty(watch: ChangeWatch) -> None:
    """An empty batch returns an empty list and writes nothing."""
    assert watch.should_parse_many([]) == []
    assert counts(watch) == (0, 0, 0)


class _StatementLog:
    """Records the SQL statements an engine runs, and its transactions."""

    def __init__(self, engine: sa.Engine) -> None:
        self.statements: list[tuple[str, bool]] = []
        self.begins = 0
        self.commits = 0
        self.locks = 0
        self._engine = engine
        event.listen(engine, "before_cursor_execute", self._on_execute)
        event.listen(engine, "begin", self._on_begin)
        event.listen(engine, "commit", self._on_commit)

    def _on_execute(
        self,
        _conn: Any,
        _cursor: Any,
        statement: str,
        _params: Any,
        _context: Any,
        executemany: bool,
    ) -> None:
        if statement == _SQLITE_TAKE_WRITE_LOCK:
            self.locks += 1  # SQLite's batch transaction takes the write lock first
            return
        self.statements.append((statement.lstrip().split(None, 1)[0].upper(), executemany))

    def _on_begin(self, _conn: Any) -> None:
        self.begins += 1

    def _on_commit(self, _conn: Any) -> None:
        self.commits += 1

    def count(self, verb: str) -> int:
        return sum(1 for v, _ in self.statements if v == verb)

    def remove(self) -> None:
        event.remove(self._engine, "before_cursor_execute", self._on_execute)
        event.remove(self._engine, "begin", self._on_begin)
        event.remove(self._engine, "commit", self._on_commit)


def test_should_parse_many_known_unchanged_batch_is_one_select_and_one_update(
    watch: ChangeWatch, clock: Clock
) -> None:
    """A batch of known, unchanged pages: one SELECT, one executemany UPDATE, one transaction."""
    pages = [(f"https://example.com/p/{i}", page(words(i, 50))) for i in range(25)]
    watch.should_parse_many(pages)
    clock.advance(30)
    log = _StatementLog(watch.store.engine)
    try:
        decisions = watch.should_parse_many(pages)
    finally:
        log.remove()
    assert [d.kind for d in decisions] == ["unchanged"] * len(pages)
    assert {d.path for d in decisions} == {"raw"}
    assert log.count("SELECT") == 1
    assert log.count("UPDATE") == 1
    assert log.count("INSERT") == 0
    assert [many for verb, many in log.statements if verb == "UPDATE"] == [True]
    assert (log.begins, log.commits) == (1, 1)
    assert log.locks == (watch.store.dialect == "sqlite")
    rows = snapshot_rows(watch)
    assert [r.fetch_count for r in rows] == [2] * len(pages)
    assert {r.last_seen for r in rows} == {clock.now}


def test_should_parse_unchanged_bytes_is_one_autocommitted_statement(
    watch: ChangeWatch, clock: Clock
) -> None:
    """One page with identical bytes: a single UPDATE … RETURNING in autocommit, nothing else."""
    html = page(words(7, 80))
    watch.should_parse("https://example.com/one", html)
    clock.advance(5)
    log = _StatementLog(watch.store.engine)
    try:
        decision = watch.should_parse("https://example.com/one", html)
    finally:
        log.remove()
    assert (decision.kind, decision.path) == ("unchanged", "raw")
    assert log.statements == [("UPDATE", False)]
    assert log.commits == 0
    (row,) = snapshot_rows(watch)
    assert (row.fetch_count, row.last_seen) == (2, clock.now)


def test_should_parse_many_new_batch_is_one_transaction(watch: ChangeWatch) -> None:
    """A batch of new pages is written in one transaction; its lookups are two SELECTs on
    Postgres (on SQLite, in-process, the exact copies are one bounded SELECT per content)."""
    pages = [(f"https://example.com/n/{i}", page(words(i, 50))) for i in range(25)]
    log = _StatementLog(watch.store.engine)
    try:
        decisions = watch.should_parse_many(pages)
    finally:
        log.remove()
    assert [d.kind for d in decisions] == ["new"] * len(pages)
    pg = watch.store.engine.dialect.name == "postgresql"
    assert log.count("SELECT") <= (2 if pg else 2 + len(pages))
    assert log.count("UPDATE") == 0
    assert (log.begins, log.commits) == (1, 1)
    assert counts(watch) == (25, 25, 25)
