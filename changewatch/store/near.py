"""Near-duplicate search over stored SimHashes: the pigeonhole bands of DESIGN.md (Storage).

A 64-bit SimHash is split into 4 bands of 16 bits, each indexed by an expression index
(migration 0002). Two SimHashes within Hamming distance 3 differ in at most 3 bands, so they
agree exactly on at least one (Manku, Jain, Das Sarma, "Detecting near-duplicates for web
crawling", WWW 2007). A search therefore reads the rows that share any band with the query —
four indexed equality lookups combined with ``UNION ALL``, one statement — and keeps those
whose exact Hamming distance is within the bound.

Past distance 3 the pigeonhole guarantee is gone (four differing bits can hit all four
bands), so a search that cannot promise every match is refused: ``max_distance`` above
:data:`~changewatch.decide.MAX_NEAR_DISTANCE` raises ``ValueError``
(:func:`changewatch.decide.check_near_distance`) rather than silently missing pages; the
exact distances are computed by :func:`changewatch.decide.nearest`.

A new page's copies (``duplicate_of``) are read exact first: the stored holders of its
content hash in URL-digest order through the ``(content_sha256, url_digest)`` index
(migration 0010) with a ``LIMIT`` (:func:`read_holders`), and the bands only for pages whose
content may have no holder left (:func:`read_copies`) — so a content shared by 100,000
stored pages costs one short index range read, not a read of every copy. A page near, but
not equal to, a large cluster still reads every row of the cluster that shares its bands.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from changewatch.store.tables import (
    SIMHASH_BANDS,
    page_snapshots,
    simhash_band,
    simhash_band_expr,
    to_signed64,
)
from changewatch.values import NearCandidate

__all__ = ["read_candidates", "read_copies", "read_holders"]

_SNAP = page_snapshots.c


def _band_select(band: int) -> sa.Select[Any]:
    expr = simhash_band_expr(_SNAP.simhash, band)
    return sa.select(_SNAP.url_digest, _SNAP.url, _SNAP.simhash, _SNAP.content_sha256).where(
        expr.in_(sa.bindparam(f"band{band}", expanding=True))
    )


# One statement, cached by SQLAlchemy: each branch is an index lookup on one band expression.
_CANDIDATES = sa.union_all(*(_band_select(band) for band in range(SIMHASH_BANDS)))

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
    """The SQL text of band ``band`` over ``column`` (as the index expression has it)."""
    expr = simhash_band_expr(sa.column(column, sa.BigInteger), band)
    return str(expr.compile(dialect=postgresql.dialect()))  # type: ignore[no-untyped-call]


# Postgres: the holders of every content hash of a batch and the band candidates of the pages
# whose content has fewer than ``n`` holders, in one statement. ``lacking`` is computed once;
# each band is an index scan on ``= ANY(ARRAY(...))`` of its values.
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
        " SELECT w.s FROM wanted AS w WHERE w.s IS NOT NULL"
        " AND (SELECT count(*) FROM holder AS h WHERE h.content_sha256 = w.c) < :n)"
        " SELECT url_digest, url, simhash, content_sha256 FROM holder"
        + "".join(
            " UNION ALL SELECT url_digest, url, simhash, content_sha256 FROM page_snapshots"
            f" WHERE {_pg_band('simhash', band)}"
            f" = ANY(ARRAY(SELECT DISTINCT {_pg_band('s', band)} FROM lacking))"
            for band in range(SIMHASH_BANDS)
        )
    )
    .bindparams(
        sa.bindparam("contents", type_=postgresql.ARRAY(sa.LargeBinary)),
        sa.bindparam("simhashes", type_=postgresql.ARRAY(sa.BigInteger)),
        sa.bindparam("n", type_=sa.Integer),
    )
    .columns(_SNAP.url_digest, _SNAP.url, _SNAP.simhash, _SNAP.content_sha256)
)


def read_copies(
    conn: Connection, pages: Sequence[tuple[bytes, int | None]], per_content: int
) -> list[NearCandidate]:
    """The exact and near copies of new pages, each ``(content hash, SimHash or None)``:
    the ``per_content`` holders of each content hash with the smallest URL digests, and,
    for each page with a SimHash whose content has fewer holders than that, the stored
    pages sharing a band with it; once each.

    A content held by many stored pages (a cluster of soft 404s) costs one bounded index
    read, not a read of every copy; one statement on Postgres.
    """
    if not pages:
        return []
    if conn.dialect.name == "postgresql":
        params = {
            "contents": [c for c, _ in pages],
            "simhashes": [None if v is None else to_signed64(v) for _, v in pages],
            "n": per_content,
        }
        rows: Iterable[Any] = conn.execute(_PG_COPIES, params)
        return _unique(NearCandidate(bytes(d), u, v, bytes(c)) for d, u, v, c in rows)
    holders = read_holders(conn, [c for c, _ in pages], per_content)
    held: dict[bytes, int] = {}
    for h in holders:
        held[h.content_sha256] = held.get(h.content_sha256, 0) + 1
    lacking = [v for c, v in pages if v is not None and held.get(c, 0) < per_content]
    return _unique([*holders, *read_candidates(conn, lacking)])


def _unique(candidates: Iterable[NearCandidate]) -> list[NearCandidate]:
    seen: set[bytes] = set()
    out = []
    for c in candidates:
        if c.url_digest not in seen:
            seen.add(c.url_digest)
            out.append(c)
    return out


def read_candidates(
    conn: Connection, simhashes: Iterable[int], contents: Iterable[bytes] = ()
) -> list[NearCandidate]:
    """Every stored page sharing a band with any of ``simhashes``, and for each of
    ``contents`` the stored page with that content hash and the smallest URL digest
    (:func:`read_holders`); once each."""
    values = list(simhashes)
    found = read_holders(conn, contents)
    if values:
        params: dict[str, list[Any]] = {
            f"band{band}": sorted({simhash_band(v, band) for v in values})
            for band in range(SIMHASH_BANDS)
        }
        rows = conn.execute(_CANDIDATES, params)
        found += [NearCandidate(bytes(d), url, stored, bytes(c)) for d, url, stored, c in rows]
    return _unique(found)
