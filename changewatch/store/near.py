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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from changewatch.store.tables import (
    SIMHASH_BANDS,
    page_snapshots,
    simhash_band,
    simhash_band_expr,
)
from changewatch.values import NearCandidate

__all__ = ["read_candidates"]

_SNAP = page_snapshots.c


def _band_select(band: int) -> sa.Select[Any]:
    expr = simhash_band_expr(_SNAP.simhash, band)
    return sa.select(_SNAP.url_digest, _SNAP.url, _SNAP.simhash, _SNAP.content_sha256).where(
        expr.in_(sa.bindparam(f"band{band}", expanding=True))
    )


# One statement, cached by SQLAlchemy: each branch is an index lookup on one band expression.
_CANDIDATES = sa.union_all(*(_band_select(band) for band in range(SIMHASH_BANDS)))

# For each content hash asked for, the stored page with it that has the smallest URL digest
# (row_number(): Postgres before 18 has no min(bytea)), beside the band lookups — so a batch
# of new pages finds exact and near copies in one statement.
_RANKED = (
    sa.select(
        _SNAP.url_digest,
        _SNAP.url,
        _SNAP.simhash,
        _SNAP.content_sha256,
        sa.func.row_number()
        .over(partition_by=_SNAP.content_sha256, order_by=_SNAP.url_digest)
        .label("n"),
    )
    .where(_SNAP.content_sha256.in_(sa.bindparam("contents", expanding=True)))
    .subquery()
)
_COPIES: sa.CompoundSelect[Any] = sa.union_all(
    sa.select(
        _RANKED.c.url_digest, _RANKED.c.url, _RANKED.c.simhash, _RANKED.c.content_sha256
    ).where(_RANKED.c.n == 1),
    *(_band_select(band) for band in range(SIMHASH_BANDS)),
)


def read_candidates(
    conn: Connection, simhashes: Iterable[int], contents: Iterable[bytes] = ()
) -> list[NearCandidate]:
    """Every stored page sharing a band with any of ``simhashes``, and for each of
    ``contents`` the stored page with that content hash and the smallest URL digest; once
    each, in one statement."""
    values = list(simhashes)
    wanted = sorted(set(contents))
    if not values and not wanted:
        return []
    params: dict[str, list[Any]] = {
        f"band{band}": sorted({simhash_band(v, band) for v in values})
        for band in range(SIMHASH_BANDS)
    }
    stmt = _CANDIDATES
    if wanted:
        stmt, params["contents"] = _COPIES, wanted
    seen: set[bytes] = set()
    out = []
    for digest, url, stored, content in conn.execute(stmt, params):
        digest = bytes(digest)
        if digest not in seen:
            seen.add(digest)
            out.append(NearCandidate(digest, url, stored, bytes(content)))
    return out
