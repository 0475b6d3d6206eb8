"""Near-duplicate search over clusters of near-copies: page_simhashes, bounded and exact."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch, hamming
from changewatch.errors import StoreError
from changewatch.store.near import _HOLDERS_OF, _PG_NEAREST, _SHARING, read_nearest
from changewatch.store.tables import (
    SIMHASH_BANDS,
    page_simhashes,
    page_snapshots,
    simhash_band,
    simhash_band_index_names,
    to_signed64,
)

from ._pages import terminate_other_connections
from .test_near_duplicates import _brute_force, _flip, _insert


def _values(watch: ChangeWatch) -> list[int]:
    with watch.store.engine.connect() as conn:
        return sorted(v for (v,) in conn.execute(sa.select(page_simhashes.c.simhash)))


def test_triggers_keep_each_simhash_once(watch: ChangeWatch) -> None:
    """Inserting pages adds each new SimHash once; changing a page's SimHash adds the new one
    and keeps the old; an update that leaves the SimHash alone adds nothing."""
    base = 2**63 + 77
    digests = _insert(watch.store, [base, base, base, 5])
    assert _values(watch) == [5, base]
    update = sa.update(page_snapshots)
    by = page_snapshots.c.url_digest
    with watch.store.engine.begin() as conn:
        conn.execute(update.where(by == digests[0]).values(simhash=9))
        conn.execute(update.where(by == digests[1]).values(simhash=base))
        conn.execute(update.where(by == digests[2]).values(fetch_count=3))
    assert _values(watch) == [5, 9, base]
    d = watch.should_parse("https://example.com/a", "<p>" + "word " * 50 + "</p>")
    assert d.simhash in _values(watch)


def test_clustered_answers_equal_the_first_of_a_full_scan(watch: ChangeWatch) -> None:
    """Clusters of hundreds of copies over a few SimHashes at distances 0–5: every limit and
    distance answers exactly the first ``limit`` of a full scan by (distance, digest)."""
    rng = random.Random(17)
    centre = rng.getrandbits(64) | 1 << 63
    variants = [centre] + [_flip(centre, rng.sample(range(64), d)) for d in (1, 1, 2, 3, 3, 4, 5)]
    values = [rng.choice(variants) for _ in range(1500)]
    values += [rng.getrandbits(64) for _ in range(500)]
    stored = dict(zip(_insert(watch.store, values), values, strict=True))
    queries = [centre, variants[1], _flip(centre, [7]), _flip(variants[3], [9, 11])]
    for q in queries:
        for max_distance in range(4):
            expected = _brute_force(stored, q, max_distance)
            for limit in (0, 1, 7, 100, 250, 10_000):
                got = watch.store.near_duplicates(q, max_distance, limit=limit)
                assert [(n.url_digest, n.distance) for n in got] == expected[:limit], (q, limit)
    first = min(d for d, v in stored.items() if v == centre)
    got = watch.store.near_duplicates(centre, 3, first, limit=5)
    assert [n.url_digest for n in got] == [
        d for d, _ in _brute_force(stored, centre, 3, exclude=first)[:5]
    ]


def test_a_negative_limit_is_refused(watch: ChangeWatch) -> None:
    """``limit`` must be a non-negative int, for a SimHash and for a URL never stored."""
    for bad in (-1, -100):
        with pytest.raises(ValueError, match="limit must be 0 or more"):
            watch.near_duplicates(12345, limit=bad)
        with pytest.raises(ValueError, match="limit must be 0 or more"):
            watch.near_duplicates("https://example.com/never-stored", limit=bad)
    with pytest.raises(TypeError, match="limit must be an int"):
        watch.near_duplicates(12345, limit=2.5)  # type: ignore[arg-type]


def _rows_read(plan: Any, table: str) -> int:
    """The rows every scan of ``table`` read (kept or filtered out) in a JSON ``EXPLAIN
    ANALYZE`` plan."""
    node = plan
    total = 0
    if node.get("Relation Name") == table:
        read = int(node["Actual Rows"]) + int(node.get("Rows Removed by Filter", 0))
        total += read * int(node["Actual Loops"])
    for child in node.get("Plans", []):
        total += _rows_read(child, table)
    return total


def _scans(plan: Any, table: str) -> list[Any]:
    """Every scan node of ``table`` in a JSON ``EXPLAIN`` plan."""
    found = [plan] if plan.get("Relation Name") == table else []
    for child in plan.get("Plans", []):
        found += _scans(child, table)
    return found


def _index_of(node: Any) -> str | None:
    return node.get("Index Name")


def test_search_near_a_large_cluster_reads_a_bounded_number_of_rows(watch: ChangeWatch) -> None:
    """Postgres: 3,000 copies of one SimHash and 3,000 at distance 1 cost the search about
    ``limit`` index entries a SimHash and the band entries of the distinct SimHashes — not
    the 6,000 rows sharing its bands that the previous read took."""
    if watch.store.dialect != "postgresql":
        pytest.skip("reads counted from Postgres' EXPLAIN ANALYZE")
    centre = 0x0123_4567_89AB_CDEF
    rng = random.Random(5)
    others = [rng.getrandbits(64) for _ in range(2000)]
    _insert(watch.store, [centre] * 3000 + [_flip(centre, [40])] * 3000 + others)
    with watch.store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE page_snapshots")
        conn.exec_driver_sql("ANALYZE page_simhashes")
    query = _flip(centre, [3])
    params = {
        "q": to_signed64(query),
        "k": 3,
        "n": 10,
        **{f"b{b}": simhash_band(query, b) for b in range(SIMHASH_BANDS)},
    }
    with watch.store.engine.connect() as conn:
        sql = f"EXPLAIN (ANALYZE, FORMAT JSON) {_PG_NEAREST}"
        (plan,) = conn.exec_driver_sql(sql, params).one()
    plan = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]
    text = json.dumps(plan)
    holders = "ix_page_snapshots_simhash_url_digest"
    for name in [*simhash_band_index_names(), holders]:
        assert name in text, name
    assert "Seq Scan" not in text
    # The holders with their URLs, from the covering index (migration 0014): no join back
    # to page_snapshots by primary key, no scan of it other than the holder index's.
    assert "pk_page_snapshots" not in text
    assert {_index_of(node) for node in _scans(plan, "page_snapshots")} == {holders}
    assert _rows_read(plan, "page_snapshots") <= 2 * 10  # each SimHash's first 10 at most
    assert _rows_read(plan, "page_simhashes") <= 2 * SIMHASH_BANDS + 5  # + unrelated
    got = watch.store.near_duplicates(query, 3, limit=10)
    assert [n.distance for n in got] == [1] * 10
    assert hamming(query, centre) == 1


def test_concurrent_writers_of_the_same_new_simhashes_never_wait(watch: ChangeWatch) -> None:
    """Postgres: two open transactions storing pages with the same two new SimHashes, in
    opposite orders, neither wait for the other (a unique key on the values would make the
    second wait, then deadlock); after both commit every page is found."""
    if watch.store.dialect != "postgresql":
        pytest.skip("SQLite has one writer at a time")
    a, b = 0xAAAA_0000_0000_0001, 0xBBBB_0000_0000_0002
    columns = "url_digest, host, url, canon_version, fingerprint_version, raw_sha256, " + (
        "content_sha256, simhash, text_length, first_seen, last_seen, last_changed, "
        "version_count, fetch_count"
    )
    row = (
        f"INSERT INTO page_snapshots ({columns}) VALUES (%(d)s, 'h.test', %(u)s, 1, 1, "
        "%(z)s, %(d)s || %(d)s, %(s)s, 1, now(), now(), now(), 1, 1)"
    )
    digests = [bytes([n]) * 16 for n in range(1, 5)]
    first = watch.store.engine.raw_connection()
    second = watch.store.engine.raw_connection()
    try:
        cursors = [first.cursor(), second.cursor()]
        for cursor in cursors:
            cursor.execute("SET lock_timeout = '2s'")
        order = [(0, a), (1, b), (1, a), (0, b)]  # T1: a, T2: b, T2: a, T1: b
        for n, (who, value) in enumerate(order):
            cursors[who].execute(
                row,
                {
                    "d": digests[n],
                    "u": f"https://h.test/{n}",
                    "z": bytes(32),
                    "s": to_signed64(value),
                },
            )
        first.commit()
        second.commit()
    finally:
        first.close()
        second.close()
    assert set(_values(watch)) >= {a, b}
    assert {n.url_digest for n in watch.store.near_duplicates(a, 0)} == {digests[0], digests[2]}
    assert {n.url_digest for n in watch.store.near_duplicates(b, 0)} == {digests[1], digests[3]}


def test_one_prepared_statement_whatever_the_band_values(watch: ChangeWatch) -> None:
    """Postgres: searches for SimHashes whose bands are small and large numbers share one
    server-side prepared statement on a connection (so its generic plan is reused), where
    parameters typed by their value would key up to 16."""
    if watch.store.dialect != "postgresql":
        pytest.skip("server-side prepared statements are psycopg's")
    rng = random.Random(11)
    _insert(watch.store, [rng.getrandbits(64) for _ in range(50)])
    with watch.store.engine.connect() as conn:
        for _ in range(200):  # psycopg prepares a statement on its 5th run
            read_nearest(conn, rng.getrandbits(64), 3, 10)
        statements = conn.exec_driver_sql(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'WITH near%%'"
        ).scalar_one()
    assert statements == 1


def test_sqlite_reads_the_distinct_simhashes_through_their_band_indexes(
    watch: ChangeWatch,
) -> None:
    """SQLite: the band lookup of page_simhashes searches its four band indexes, and a
    SimHash's holders are read through (simhash, url_digest) — no table scan."""
    if watch.store.dialect != "sqlite":
        pytest.skip("Postgres' plan is checked above")
    rng = random.Random(13)
    _insert(watch.store, [rng.getrandbits(64) for _ in range(2000)])
    with watch.store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    params = {f"b{b}": simhash_band(rng.getrandbits(64), b) for b in range(SIMHASH_BANDS)}
    with watch.store.engine.connect() as conn:
        plans = []
        for statement, values in ((_SHARING, params), (_HOLDERS_OF, {"v": 5, "n": 10})):
            sql = statement.params(**values).compile(
                dialect=conn.dialect, compile_kwargs={"literal_binds": True}
            )
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}").all()
            plans.append("\n".join(str(r[-1]) for r in rows))
    sharing, holders = plans
    for name in simhash_band_index_names():
        assert name in sharing, sharing
    assert "SCAN page_simhashes" not in sharing, sharing
    assert "ix_page_snapshots_simhash_url_digest" in holders, holders


def _sqlalchemy_nearest(watch: ChangeWatch, q: int, k: int, n: int) -> list[Any]:
    with watch.store.engine.connect() as conn:
        return read_nearest(conn, q, k, n)


def test_the_driver_path_answers_as_the_sqlalchemy_path(watch: ChangeWatch) -> None:
    """Postgres runs near_duplicates on the touch's own connections (the driver's cursor):
    for queries near clusters, far from everything, at the limit and past it, its answers
    are read_nearest's through SQLAlchemy, row for row; with a statement listener on the
    engine, the SQLAlchemy path runs and answers the same."""
    if watch.store.dialect != "postgresql":
        pytest.skip("SQLite reads through SQLAlchemy only")
    rng = random.Random(17)
    centres = [rng.getrandbits(64) for _ in range(6)]
    values = [
        _flip(c, rng.sample(range(64), rng.randint(0, 3))) for c in centres for _ in range(40)
    ]
    _insert(watch.store, values + [rng.getrandbits(64) for _ in range(300)])
    assert watch.store._fast_touch.usable()  # type: ignore[attr-defined]
    queries = [_flip(c, rng.sample(range(64), 1)) for c in centres] + [rng.getrandbits(64)] * 2
    for q in queries:
        for k, n in ((3, 100), (2, 7), (0, 1)):
            assert watch.store.near_duplicates(q, k, limit=n) == _sqlalchemy_nearest(watch, q, k, n)
    seen: list[str] = []
    sa.event.listen(watch.store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    assert not watch.store._fast_touch.usable()  # type: ignore[attr-defined]
    assert watch.store.near_duplicates(queries[0], 3) == _sqlalchemy_nearest(
        watch, queries[0], 3, 100
    )
    assert any(s.startswith("WITH near") for s in seen)


def test_the_driver_path_prepares_one_statement(watch: ChangeWatch) -> None:
    """On the driver's cursor too, the search is one server-side prepared statement per
    connection, whatever the band values (every parameter sent as int8)."""
    if watch.store.dialect != "postgresql":
        pytest.skip("server-side prepared statements are psycopg's")
    rng = random.Random(19)
    _insert(watch.store, [rng.getrandbits(64) for _ in range(50)])
    for _ in range(200):
        watch.store.near_duplicates(rng.getrandbits(64), 3, limit=10)
    (count,) = watch.store._fast_touch.read(  # type: ignore[attr-defined]
        "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'WITH near%'", []
    )[0]
    assert count == 1


@pytest.mark.postgres
def test_a_search_on_a_dropped_connection_is_retryable_and_replaced(
    make_pg_database: Any,
) -> None:
    """An administrator's kill of every connection: the next search is a retryable
    StoreError, the one after it answers on a new connection."""
    url = make_pg_database()
    with ChangeWatch(database_url=url, seen_url="memory:") as w:
        digests = _insert(w.store, [5, 6, 2**63 + 5])  # distances 0, 2 and 1 from 5
        expected = [(digests[0], 0), (digests[2], 1)]
        assert [(n.url_digest, n.distance) for n in w.store.near_duplicates(5, 1)] == expected
        terminate_other_connections(url)
        with pytest.raises(StoreError) as info:
            w.store.near_duplicates(5, 1)
        assert info.value.retryable
        assert [(n.url_digest, n.distance) for n in w.store.near_duplicates(5, 1)] == expected
