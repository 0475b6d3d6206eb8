"""Near-duplicate search over stored SimHashes: the pigeonhole bands of DESIGN.md (Storage).

A 64-bit SimHash is split into 4 bands of 16 bits. Two SimHashes within Hamming distance 3
differ in at most 3 bands, so they agree exactly on at least one (Manku, Jain, Das Sarma,
"Detecting near-duplicates for web crawling", WWW 2007). A search therefore looks up the
stored SimHashes sharing any band with the query and keeps those whose exact Hamming
distance is within the bound.

Real fingerprints cluster: thousands of stored pages hold one of a few dozen SimHashes of one
page's near-copies, so band buckets of pages would hold thousands of rows (the band indexes
of ``page_snapshots``, migration 0002, which migration 0014 dropped once nothing read them).
The searches here read instead the band buckets of ``page_simhashes`` (migration 0013,
:mod:`changewatch.store.simhashes`), which hold each stored SimHash about once, and then the
holders of each SimHash within reach through the ``(simhash, url_digest)`` index, in
URL-digest order with a ``LIMIT``: :func:`read_nearest` takes only as many as the nearer
distances left room for (and, on Postgres, their URLs with them), :func:`read_copies` the
few a batch can use. A cluster of any size
costs at most that many index entries a SimHash.

Past distance 3 the pigeonhole guarantee is gone (four differing bits can hit all four
bands), so a search that cannot promise every match is refused: ``max_distance`` above
:data:`~changewatch.decide.MAX_NEAR_DISTANCE` raises ``ValueError``
(:func:`changewatch.decide.check_near_distance`) rather than silently missing pages; the
exact distances are computed in the statement on Postgres (``bit_count``), by
:func:`changewatch.decide.nearest` on SQLite.

A new page's copies (``duplicate_of``) are read exact first: the stored holders of its
content hash in URL-digest order through the ``(content_sha256, url_digest)`` index
(migration 0010) with a ``LIMIT`` (:func:`read_holders`), and near ones only for pages whose
content may have no holder left (:func:`read_copies`) — so a content shared by 100,000
stored pages costs one short index range read, not a read of every copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from changewatch.decide import MAX_NEAR_DISTANCE, nearest
from changewatch.fingerprint import hamming
from changewatch.store.tables import (
    SIMHASH_BANDS,
    page_simhashes,
    page_snapshots,
    simhash_band,
    simhash_band_expr,
    to_signed64,
)
from changewatch.values import NearCandidate, NearDuplicate

__all__ = [
    "pg_nearest_numbered",
    "pg_nearest_statement",
    "read_copies",
    "read_holders",
    "read_nearest",
]

_SNAP = page_snapshots.c
_VALUES = page_simhashes.c


# The holders of one content hash in URL-digest order, first ``n`` only: a range read of the
# (content_sha256, url_digest) index (migration 0010) however many pages share the content.
_HOLDERS = (
    sa.select(_SNAP.url_digest, _SNAP.url, _SNAP.simhash, _SNAP.content_sha256)
    .where(_SNAP.content_sha256 == sa.bindparam("content"))
    .order_by(_SNAP.url_digest)
    .limit(sa.bindparam("n"))
)


def read_holders(
    conn: Connection, contents: Iterable[bytes], per_content: int = 1
) -> list[NearCandidate]:
    """For each of ``contents``, the ``per_content`` stored pages holding it with the
    smallest URL digests (fewer where fewer hold it): one bounded index range read each
    (``ORDER BY url_digest LIMIT n``), so a content shared by 100,000 stored pages costs
    what one shared by 2 does."""
    return [
        NearCandidate(bytes(d), url, stored, bytes(c))
        for content in sorted(set(contents))
        for d, url, stored, c in conn.execute(_HOLDERS, {"content": content, "n": per_content})
    ]


def _pg_band(column: str, band: int) -> str:
    """The SQL text of band ``band`` over ``column`` (as the index expression has it;
    ``column`` may be qualified, ``v.simhash``)."""
    expr = simhash_band_expr(sa.column("x", sa.BigInteger), band)
    text = str(expr.compile(dialect=postgresql.dialect()))  # type: ignore[no-untyped-call]
    return re.sub(r"\bx\b", column, text)


# Postgres: the holders of every content hash of a batch and the near copies of the pages
# whose content has fewer than ``n`` holders, in one statement. ``lacking`` is computed once;
# ``near`` joins it, band by band, to the band indexes of page_simhashes (distinct SimHashes)
# and keeps those within ``radius`` of a lacking page's; each gives its ``n`` holders with the
# smallest URL digests (the (simhash, url_digest) index), however many pages hold it.
_PG_COPIES = (
    sa.text(
        "WITH wanted AS MATERIALIZED ("
        " SELECT w.c, w.s FROM unnest(CAST(:contents AS BYTEA[]), CAST(:simhashes AS BIGINT[]))"
        " AS w(c, s)),"
        " holder AS MATERIALIZED ("
        " SELECT h.url_digest, h.url, h.simhash, h.content_sha256"
        " FROM (SELECT DISTINCT c FROM wanted) AS d CROSS JOIN LATERAL ("
        " SELECT p.url_digest, p.url, p.simhash, p.content_sha256 FROM page_snapshots AS p"
        " WHERE p.content_sha256 = d.c ORDER BY p.url_digest LIMIT :n) AS h),"
        " lacking AS MATERIALIZED ("
        " SELECT DISTINCT w.s FROM wanted AS w WHERE w.s IS NOT NULL"
        " AND (SELECT count(*) FROM holder AS h WHERE h.content_sha256 = w.c) < :n),"
        " near AS MATERIALIZED ("
        + " UNION ".join(
            "SELECT v.simhash AS v FROM lacking AS l JOIN page_simhashes AS v"
            f" ON {_pg_band('v.simhash', band)} = {_pg_band('l.s', band)}"
            " WHERE bit_count(CAST(v.simhash # l.s AS BIT(64))) <= :radius"
            for band in range(SIMHASH_BANDS)
        )
        + ") SELECT url_digest, url, simhash, content_sha256 FROM holder"
        " UNION ALL SELECT h.url_digest, h.url, h.simhash, h.content_sha256 FROM near"
        " CROSS JOIN LATERAL (SELECT p.url_digest, p.url, p.simhash, p.content_sha256"
        " FROM page_snapshots AS p WHERE p.simhash = near.v ORDER BY p.url_digest LIMIT :n) AS h"
    )
    .bindparams(
        sa.bindparam("contents", type_=postgresql.ARRAY(sa.LargeBinary)),
        sa.bindparam("simhashes", type_=postgresql.ARRAY(sa.BigInteger)),
        sa.bindparam("n", type_=sa.Integer),
        sa.bindparam("radius", type_=sa.Integer),
    )
    .columns(_SNAP.url_digest, _SNAP.url, _SNAP.simhash, _SNAP.content_sha256)
)


def read_copies(
    conn: Connection,
    pages: Sequence[tuple[bytes, int | None]],
    per_content: int,
    radius: int = MAX_NEAR_DISTANCE,
) -> list[NearCandidate]:
    """The exact and near copies of new pages, each ``(content hash, SimHash or None)``:
    the ``per_content`` holders of each content hash with the smallest URL digests, and,
    for each page with a SimHash whose content has fewer holders than that, the
    ``per_content`` holders with the smallest URL digests of every stored SimHash within
    ``radius`` (0..3) of it; once each.

    A content or a SimHash held by many stored pages (a cluster of soft 404s, of
    near-copies) costs one bounded index read, not a read of every copy; one statement on
    Postgres.
    """
    if not pages:
        return []
    radius = min(radius, MAX_NEAR_DISTANCE)
    if conn.dialect.name == "postgresql":
        params = {
            "contents": [c for c, _ in pages],
            "simhashes": [None if v is None else to_signed64(v) for _, v in pages],
            "n": per_content,
            "radius": radius,
        }
        rows: Iterable[Any] = conn.execute(_PG_COPIES, params)
        return _unique(NearCandidate(bytes(d), u, v, bytes(c)) for d, u, v, c in rows)
    holders = read_holders(conn, [c for c, _ in pages], per_content)
    held: dict[bytes, int] = {}
    for h in holders:
        held[h.content_sha256] = held.get(h.content_sha256, 0) + 1
    lacking = {v for c, v in pages if v is not None and held.get(c, 0) < per_content}
    near = _near_any(conn, lacking, radius)
    copies = [c for v in sorted(near) for c in _holders_of(conn, [v], per_content)]
    return _unique([*holders, *copies])


# SQLite: the distinct stored SimHashes sharing a band with any of several, in one statement.
_SHARING_ANY = sa.union(
    *(
        sa.select(_VALUES.simhash).where(
            simhash_band_expr(_VALUES.simhash, band).in_(sa.bindparam(f"b{band}", expanding=True))
        )
        for band in range(SIMHASH_BANDS)
    )
)


def _near_any(conn: Connection, simhashes: set[int], radius: int) -> set[int]:
    """The distinct stored SimHashes within ``radius`` (0 included) of any of
    ``simhashes``: one read of the band buckets of ``page_simhashes``, then each found
    value compared with the SimHashes it shares a band with."""
    if not simhashes:
        return set()
    by_band: list[dict[int, list[int]]] = [{} for _ in range(SIMHASH_BANDS)]
    for s in simhashes:
        for band in range(SIMHASH_BANDS):
            by_band[band].setdefault(simhash_band(s, band), []).append(s)
    params = {f"b{band}": sorted(by_band[band]) for band in range(SIMHASH_BANDS)}
    return {
        value
        for (value,) in conn.execute(_SHARING_ANY, params)
        if any(
            hamming(value, s) <= radius
            for band in range(SIMHASH_BANDS)
            for s in by_band[band].get(simhash_band(value, band), ())
        )
    }


def _unique(candidates: Iterable[NearCandidate]) -> list[NearCandidate]:
    seen: set[bytes] = set()
    out = []
    for c in candidates:
        if c.url_digest not in seen:
            seen.add(c.url_digest)
            out.append(c)
    return out


# Postgres: the ``n`` pages nearest one SimHash, in one statement, as the answer:
# (url_digest, url, distance) by (distance, url_digest). ``near`` is the distinct SimHashes
# within the distance (1..k) from the band buckets of page_simhashes (migration 0013: one
# entry per SimHash, however many pages hold it); t0 the holders of the SimHash itself, t1..t3
# those at distance 1..3. Each stage reads, per SimHash, only as many holders (``ORDER BY
# url_digest LIMIT``) as the nearer stages left room for, so a cluster of thousands of copies
# costs at most ``n`` index entries a SimHash. The holders' URLs are read with them (a heap
# visit each), not by a join back through the primary key, which was 400 of the 431 buffer
# reads of a 100-row answer (EXPLAIN (ANALYZE, BUFFERS), 1,000,000 real fingerprints). An
# index (simhash, url_digest) INCLUDE (url) would spare the heap visits too (p99 about half)
# but cannot hold an 8 KiB URL (a btree entry is about 2.7 KB). Plain psycopg SQL (run by
# ``exec_driver_sql``: no SQLAlchemy compile or type processing per call), prepared by
# psycopg on its 5th run.
def _pg_nearest() -> str:
    bands = " UNION ".join(
        f"SELECT simhash AS v FROM page_simhashes WHERE {_pg_band('simhash', band)} = %(b{band})s"
        for band in range(SIMHASH_BANDS)
    )
    distance = "bit_count(CAST(v # %(q)s AS BIT(64)))"
    sql = (
        f"WITH near AS MATERIALIZED (SELECT v, {distance} AS d FROM ({bands}) AS c"
        f" WHERE {distance} BETWEEN 1 AND %(k)s),"
        " t0 AS MATERIALIZED (SELECT url_digest, url FROM page_snapshots WHERE simhash = %(q)s"
        " ORDER BY url_digest LIMIT %(n)s)"
    )
    room = "%(n)s - (SELECT count(*) FROM t0)"
    for d in range(1, MAX_NEAR_DISTANCE + 1):
        sql += (
            f", t{d} AS MATERIALIZED (SELECT h.url_digest, h.url FROM near CROSS JOIN LATERAL ("
            "SELECT p.url_digest, p.url FROM page_snapshots AS p WHERE p.simhash = near.v"
            f" ORDER BY p.url_digest LIMIT ({room})) AS h WHERE near.d = {d}"
            f" ORDER BY h.url_digest LIMIT ({room}))"
        )
        room += f" - (SELECT count(*) FROM t{d})"
    stages = " UNION ALL ".join(
        f"SELECT url_digest, url, {d} AS d FROM t{d}" for d in range(MAX_NEAR_DISTANCE + 1)
    )
    return f"{sql} {stages} ORDER BY d, url_digest"


_PG_NEAREST = _pg_nearest()
#: The same statement in numbered placeholders (``$1 …``, one per name), for the driver's own
#: cursor (:meth:`~changewatch.store.fasttouch.FastTouch.read`), and its names in order.
_PG_NEAREST_NAMES: list[str] = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", _PG_NEAREST)))
_PG_NEAREST_NUMBERED = re.sub(
    r"%\((\w+)\)s", lambda m: f"${_PG_NEAREST_NAMES.index(m.group(1)) + 1}", _PG_NEAREST
)


def pg_nearest_statement(simhash: int, max_distance: int, n: int) -> tuple[str, dict[str, Any]]:
    """The Postgres statement of :func:`read_nearest` and its psycopg parameters (for
    ``exec_driver_sql``; the benchmark and tests ``EXPLAIN`` it).

    psycopg sends an int as int2, int4 or int8 by its value, and keys its prepared
    statements by the types: the band values alone would make 16 statements a connection,
    each planned afresh 5 times before Postgres settles on its generic plan. All as int8:
    one.
    """
    from psycopg.types.numeric import Int8

    bands = {f"b{band}": simhash_band(simhash, band) for band in range(SIMHASH_BANDS)}
    values = {"q": to_signed64(simhash), "k": max_distance, "n": n, **bands}
    return _PG_NEAREST, {name: Int8(value) for name, value in values.items()}


def pg_nearest_numbered(simhash: int, max_distance: int, n: int) -> tuple[str, list[Any]]:
    """:func:`pg_nearest_statement` in numbered placeholders and positional parameters."""
    _sql, params = pg_nearest_statement(simhash, max_distance, n)
    return _PG_NEAREST_NUMBERED, [params[name] for name in _PG_NEAREST_NAMES]


# SQLite: the distinct stored SimHashes sharing a band with one SimHash, then the holders of
# each, bounded as on Postgres (in-process, so one small statement each costs little).
_SHARING = sa.union(
    *(
        sa.select(_VALUES.simhash).where(
            simhash_band_expr(_VALUES.simhash, band) == sa.bindparam(f"b{band}")
        )
        for band in range(SIMHASH_BANDS)
    )
)
_HOLDERS_OF = (
    sa.select(_SNAP.url_digest, _SNAP.url, _SNAP.simhash, _SNAP.content_sha256)
    .where(_SNAP.simhash == sa.bindparam("v", type_=_SNAP.simhash.type))
    .order_by(_SNAP.url_digest)
    .limit(sa.bindparam("n", type_=sa.Integer))
)


def read_nearest(conn: Connection, simhash: int, max_distance: int, n: int) -> list[NearDuplicate]:
    """The ``n`` stored pages nearest ``simhash`` within ``max_distance`` (0..3), with their
    distances: every page at a smaller distance before any at a larger one, ties by smallest
    URL digest — the first ``n`` of a full scan sorted by (distance, digest), exactly.

    Bounded whatever the clusters: the band buckets read are those of the distinct stored
    SimHashes (``page_simhashes``), and each SimHash within the distance gives at most as
    many holders as are still wanted. One statement on Postgres (which needs
    ``bit_count``, Postgres 14 or newer), whose rows are the answer: the server computes
    the distances, orders and cuts, and reads the URLs from the holder index.
    """
    if n <= 0:
        return []
    if conn.dialect.name == "postgresql":
        # All rows in one fetch: iterating the result fetches row by row (about 2 µs a row
        # in psycopg and SQLAlchemy, a quarter of a 100-row answer's time).
        rows = conn.exec_driver_sql(*pg_nearest_statement(simhash, max_distance, n)).all()
        return [NearDuplicate(d, u, distance) for d, u, distance in rows]
    by_distance = _near_values(conn, simhash, max_distance)
    found = _holders_of(conn, [simhash], n)
    for distance in range(1, max_distance + 1):
        room = n - len(found)
        if room <= 0:
            break
        found += _holders_of(conn, by_distance.get(distance, []), room)
    return nearest(simhash, found, max_distance, None, n)


def _near_values(conn: Connection, simhash: int, radius: int) -> dict[int, list[int]]:
    """The distinct stored SimHashes at distance 1..``radius`` of ``simhash``, by distance
    (from the band buckets of ``page_simhashes``)."""
    bands = {f"b{band}": simhash_band(simhash, band) for band in range(SIMHASH_BANDS)}
    by_distance: dict[int, list[int]] = {}
    for (value,) in conn.execute(_SHARING, bands):
        distance = hamming(simhash, value)
        if 1 <= distance <= radius:
            by_distance.setdefault(distance, []).append(value)
    return by_distance


def _holders_of(conn: Connection, simhashes: list[int], n: int) -> list[NearCandidate]:
    """The ``n`` holders of any of ``simhashes`` with the smallest URL digests (at most
    ``n`` read per SimHash)."""
    found = [
        NearCandidate(bytes(d), url, stored, bytes(c))
        for value in simhashes
        for d, url, stored, c in conn.execute(_HOLDERS_OF, {"v": value, "n": n})
    ]
    found.sort(key=lambda c: c.url_digest)
    return found[:n]
