"""Near-duplicate search on the SimHash band indexes, and duplicate_of for near copies."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch, hamming
from changewatch.decide import MAX_NEAR_DISTANCE
from changewatch.store import SnapshotStore
from changewatch.store.tables import (
    SIMHASH_BANDS,
    page_snapshots,
    simhash_band,
    simhash_band_expr,
)
from changewatch.urls import url_digest
from changewatch.values import Decision, NearDuplicate

from ._pages import long_page, one_word_edit, page, rewrite, words

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
EDGE_VALUES = [
    0,
    1,
    65535,
    2**63 - 1,
    2**63,
    2**63 + 1,
    2**64 - 2,
    2**64 - 1,
    0xFFFF_0000_FFFF_0000,
]


def _digest(n: int) -> bytes:
    return hashlib.blake2b(n.to_bytes(8, "big"), digest_size=16).digest()


def _insert(store: SnapshotStore, simhashes: Iterable[int], start: int = 0) -> list[bytes]:
    """Snapshot rows with these SimHashes (URLs ``https://h.test/<n>``); their digests."""
    rows: list[dict[str, Any]] = []
    for n, value in enumerate(simhashes, start):
        rows.append(
            {
                "url_digest": _digest(n),
                "host": "h.test",
                "url": f"https://h.test/{n}",
                "canon_version": 1,
                "fingerprint_version": 1,
                "raw_sha256": bytes(32),
                "content_sha256": hashlib.sha256(n.to_bytes(8, "big")).digest(),
                "simhash": value,
                "text_length": 1,
                "first_seen": T0,
                "last_seen": T0,
                "last_changed": T0,
                "version_count": 1,
                "fetch_count": 1,
            }
        )
    with store.engine.begin() as conn:
        conn.execute(sa.insert(page_snapshots), rows)
    return [r["url_digest"] for r in rows]


def _flip(value: int, bits: Iterable[int]) -> int:
    for bit in bits:
        value ^= 1 << bit
    return value


def _brute_force(
    stored: dict[bytes, int], query: int, max_distance: int, exclude: bytes | None = None
) -> list[tuple[bytes, int]]:
    found = [
        (digest, hamming(query, value))
        for digest, value in stored.items()
        if digest != exclude and hamming(query, value) <= max_distance
    ]
    return sorted(found, key=lambda x: (x[1], x[0]))


def test_band_indexes_are_on_page_simhashes_only(watch: ChangeWatch) -> None:
    """The band indexes are page_simhashes' (migration 0013), one per band on the
    (simhash >> s) & 65535 expression; page_snapshots' own (0002) were dropped by 0014."""
    with watch.store.engine.connect() as conn:
        if watch.store.dialect == "sqlite":
            sql = "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index'"
        else:
            sql = "SELECT indexname, tablename, indexdef FROM pg_indexes"
        found = {str(n): (str(t), str(text)) for n, t, text in conn.execute(sa.text(sql)).all()}
    for band in range(SIMHASH_BANDS):
        assert f"ix_page_snapshots_simhash_band{band}" not in found
        table, definition = found[f"ix_page_simhashes_band{band}"]
        assert table == "page_simhashes"
        shift = 16 * (SIMHASH_BANDS - 1 - band)
        expected = "simhash & 65535" if shift == 0 else f"simhash >> {shift} & 65535"
        assert expected in definition.replace("(", "").replace(")", ""), definition


def test_sql_bands_equal_the_unsigned_bands(watch: ChangeWatch) -> None:
    """The SQL band expressions over the signed column give the bands of the unsigned value."""
    rng = random.Random(7)
    values = EDGE_VALUES + [rng.getrandbits(64) for _ in range(200)]
    digests = _insert(watch.store, values)
    bands = [simhash_band_expr(page_snapshots.c.simhash, b) for b in range(SIMHASH_BANDS)]
    with watch.store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(page_snapshots.c.url_digest, page_snapshots.c.simhash, *bands)
        )
        got = {bytes(r[0]): (r[1], list(r[2:])) for r in rows}
    for digest, value in zip(digests, values, strict=True):
        assert got[digest] == (value, [simhash_band(value, b) for b in range(SIMHASH_BANDS)])


def test_near_duplicates_equal_a_brute_force_scan(watch: ChangeWatch) -> None:
    """On random SimHashes (half ≥ 2^63) plus planted neighbours, results equal a full scan."""
    rng = random.Random(2007)
    queries = EDGE_VALUES + [rng.getrandbits(64) for _ in range(40)]
    values = [rng.getrandbits(64) for _ in range(3000)]
    for q in queries:
        for distance in range(6):  # neighbours inside and just outside the guaranteed reach
            values.append(_flip(q, rng.sample(range(64), distance)))
    digests = _insert(watch.store, values)
    stored = dict(zip(digests, values, strict=True))
    assert sum(v >= 2**63 for v in values) > len(values) // 3
    for q in queries:
        for max_distance in range(MAX_NEAR_DISTANCE + 1):
            got = watch.store.near_duplicates(q, max_distance, limit=10_000)
            expected = _brute_force(stored, q, max_distance)
            assert [(n.url_digest, n.distance) for n in got] == expected
            assert all(isinstance(n, NearDuplicate) and n.url for n in got)


def test_max_distance_edges(watch: ChangeWatch) -> None:
    """0 finds only equal SimHashes, 3 includes distance 3, 4 and -1 raise ValueError."""
    base = 2**63 + 12345
    digests = _insert(watch.store, [_flip(base, range(d)) for d in range(6)])
    store = watch.store
    assert [n.url_digest for n in store.near_duplicates(base, 0)] == digests[:1]
    assert [n.distance for n in store.near_duplicates(base, 3)] == [0, 1, 2, 3]
    assert [n.distance for n in watch.near_duplicates(base)] == [0, 1, 2, 3]
    for bad in (4, 64, -1):
        with pytest.raises(ValueError, match="between 0 and 3"):
            watch.near_duplicates(base, bad)
    with pytest.raises(ValueError, match="between 0 and 3"):
        watch.near_duplicates("https://example.com/never-stored", 4)
    with pytest.raises(TypeError):
        watch.near_duplicates(base, True)
    for bad_hash in (-1, 2**64):
        with pytest.raises(ValueError, match="unsigned 64-bit"):
            watch.near_duplicates(bad_hash)


def test_limit_exclude_and_order(watch: ChangeWatch) -> None:
    """Results are nearest first, then by digest; limit truncates; exclude_digest leaves one out."""
    base = 0xDEAD_BEEF_0000_0001
    values = [base, base, _flip(base, [1]), _flip(base, [2, 3]), _flip(base, [4, 5, 6])]
    digests = _insert(watch.store, values)
    got = watch.store.near_duplicates(base, 3)
    assert [n.distance for n in got] == [0, 0, 1, 2, 3]
    assert got[0].url_digest < got[1].url_digest
    assert [n.distance for n in watch.store.near_duplicates(base, 3, limit=2)] == [0, 0]
    without = watch.store.near_duplicates(base, 3, exclude_digest=digests[0])
    assert digests[0] not in [n.url_digest for n in without]
    assert len(without) == 4


def test_watch_near_duplicates_by_url_and_by_simhash(watch: ChangeWatch) -> None:
    """A URL searches with its stored SimHash and leaves itself out; an int is a SimHash."""
    a = watch.should_parse("https://example.com/a", long_page())
    b = watch.should_parse("https://example.com/b", one_word_edit())
    watch.should_parse("https://example.com/c", rewrite())
    by_url = watch.near_duplicates("https://EXAMPLE.com/a")
    assert [(n.url, n.distance) for n in by_url] == [
        ("https://example.com/b", hamming(a.simhash, b.simhash))
    ]
    by_hash = watch.near_duplicates(a.simhash, 0)
    same = {"https://example.com/a"} | (
        {"https://example.com/b"} if hamming(a.simhash, b.simhash) == 0 else set()
    )
    assert {n.url for n in by_hash} == same
    assert all(n.distance == 0 for n in by_hash)
    assert watch.near_duplicates("https://example.com/unknown") == []


def test_new_near_copy_names_the_nearest_page(watch: ChangeWatch) -> None:
    """A new page within minor_distance of a page at another URL: duplicate_of that URL."""
    a = watch.should_parse("https://example.com/a", long_page())
    d = watch.should_parse("https://example.com/b", one_word_edit())
    assert a.content_sha256 != d.content_sha256
    assert hamming(a.simhash, d.simhash) <= 3
    assert (d.kind, d.duplicate_of) == ("new", "https://example.com/a")
    unrelated = watch.should_parse("https://example.com/c", rewrite())
    assert (unrelated.kind, unrelated.duplicate_of) == ("new", None)


def test_exact_copy_wins_over_a_nearer_digest(watch: ChangeWatch) -> None:
    """An exact content copy is named even when a near copy has the smaller URL digest."""
    urls = sorted((f"https://example.com/p{i}" for i in range(10)), key=lambda u: url_digest(u))
    near_url, exact_url, new_url = urls[0], urls[1], urls[2]
    watch.should_parse(near_url, long_page())
    watch.should_parse(exact_url, one_word_edit())
    d = watch.should_parse(new_url, one_word_edit())
    assert d.duplicate_of == exact_url


def test_minor_distance_bounds_the_near_copy_search(make_watch: Callable[..., ChangeWatch]) -> None:
    """With minor_distance=0 only equal SimHashes count as near copies."""
    watch = make_watch(minor_distance=0)
    watch.should_parse("https://example.com/a", long_page())
    d = watch.should_parse("https://example.com/b", one_word_edit())
    assert (d.kind, d.duplicate_of) == ("new", None)


def _script() -> list[tuple[str, str]]:
    """A batch where earlier pages change what later new pages are copies of."""
    base, edit, other = long_page(), one_word_edit(), rewrite()
    far = page(words(77))
    return [
        ("https://example.com/x", base),  # new
        ("https://example.com/y", edit),  # new, near x
        ("https://example.com/z", base),  # new, exact copy of x
        ("https://example.com/s", far),  # known: changes away from its stored content
        ("https://example.com/t", far),  # new, exact copy of s's new content
        ("https://example.com/u", other),  # new: a copy of what s held before it changed
        ("https://example.com/k", edit),  # known: changes to a near copy of x
        ("https://example.com/w", edit),  # new, exact copy of y and k
    ]


def _seed(watch: ChangeWatch) -> None:
    watch.should_parse("https://example.com/s", rewrite())
    watch.should_parse("https://example.com/k", page(words(99)))


def _key(d: Decision) -> tuple[Any, ...]:
    return (d.url, d.kind, d.distance, d.duplicate_of, d.path, d.version)


def test_batch_answers_equal_one_by_one_answers(
    make_watch: Callable[..., ChangeWatch], make_database_url: Callable[..., str]
) -> None:
    """should_parse_many gives the duplicate_of (exact and near) that one-by-one calls give."""
    one = make_watch(database_url=make_database_url())
    many = make_watch(database_url=make_database_url())
    _seed(one)
    _seed(many)
    script = _script()
    singles = [one.should_parse(url, html) for url, html in script]
    batch = many.should_parse_many(script)
    assert [_key(d) for d in batch] == [_key(d) for d in singles]
    dup = {d.url.rsplit("/", 1)[1]: d.duplicate_of for d in singles}
    assert dup["y"] == "https://example.com/x"
    assert dup["z"] == "https://example.com/x"
    assert dup["t"] == "https://example.com/s"
    assert dup["u"] is None  # the stored copy at s changed earlier in the batch
    assert dup["w"] in ("https://example.com/y", "https://example.com/k")


def test_pages_without_text_get_exact_copies_only(watch: ChangeWatch) -> None:
    """Empty-text pages name exact copies, never a page that merely shares their SimHash."""
    empty = "<html><body><script>app()</script></body></html>"
    first = watch.should_parse("https://example.com/e1", empty)
    copy = watch.should_parse("https://example.com/e2", empty + "<!-- other bytes -->")
    assert (copy.kind, copy.duplicate_of) == ("new", "https://example.com/e1")
    # A text page whose stored SimHash equals the empty page's: "near" at distance 0.
    text = watch.should_parse("https://example.com/t", long_page())
    with watch.store.engine.begin() as conn:
        conn.execute(
            sa.update(page_snapshots)
            .where(page_snapshots.c.url_digest.in_([first.url_digest, copy.url_digest]))
            .values(content_sha256=b"\x02" * 32)
        )
        conn.execute(
            sa.update(page_snapshots)
            .where(page_snapshots.c.url_digest == text.url_digest)
            .values(simhash=first.simhash)
        )
    assert "https://example.com/t" in {n.url for n in watch.near_duplicates(first.simhash, 0)}
    lone = watch.should_parse("https://example.com/e3", empty)
    assert (lone.kind, lone.duplicate_of) == ("new", None)


def test_new_pages_cost_one_statement_for_copies(watch: ChangeWatch) -> None:
    """A batch of new pages reads exact and near copies in one SELECT beside the lookup on
    Postgres (on SQLite, in-process: one bounded SELECT per content, one of the distinct
    SimHashes' bands for the pages lacking a holder, one bounded SELECT per stored SimHash
    near one of them — here a's)."""
    watch.should_parse("https://example.com/a", long_page())
    selects: list[str] = []

    def record(*args: Any) -> None:
        if args[2].lstrip().upper().startswith(("SELECT", "(SELECT", "WITH")):
            selects.append(args[2])

    sa.event.listen(watch.store.engine, "before_cursor_execute", record)
    try:
        decisions = watch.should_parse_many(
            [("https://example.com/b", one_word_edit()), ("https://example.com/c", long_page())]
        )
    finally:
        sa.event.remove(watch.store.engine, "before_cursor_execute", record)
    assert [d.duplicate_of for d in decisions] == ["https://example.com/a"] * 2
    pg = watch.store.engine.dialect.name == "postgresql"
    assert len(selects) == (2 if pg else 5), selects
