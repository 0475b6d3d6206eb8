"""Near-duplicate search over stored SimHashes: the pigeonhole bands of DESIGN.md (Storage).

A 64-bit SimHash is split into 4 bands of 16 bits, each indexed by an expression index
(migration 0002). Two SimHashes within Hamming distance 3 differ in at most 3 bands, so they
agree exactly on at least one (Manku, Jain, Das Sarma, "Detecting near-duplicates for web
crawling", WWW 2007). A search therefore reads the rows that share any band with the query —
four indexed equality lookups combined with ``UNION ALL``, one statement — and keeps those
whose exact Hamming distance is within the bound.

Past distance 3 the pigeonhole guarantee is gone (four differing bits can hit all four
bands), so a search that cannot promise every match is refused: ``max_distance`` above
:data:`MAX_NEAR_DISTANCE` raises ``ValueError`` rather than silently missing pages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from changewatch.fingerprint import hamming
from changewatch.store.tables import (
    SIMHASH_BANDS,
    page_snapshots,
    simhash_band,
    simhash_band_expr,
)

__all__ = [
    "DEFAULT_NEAR_LIMIT",
    "MAX_NEAR_DISTANCE",
    "NearCandidate",
    "NearDuplicate",
    "check_near_distance",
    "check_simhash",
    "nearest",
    "read_candidates",
]

#: The largest distance the 4-band index finds every match for: bands − 1.
MAX_NEAR_DISTANCE = SIMHASH_BANDS - 1

#: Results returned by a near-duplicate search unless asked otherwise.
DEFAULT_NEAR_LIMIT = 100

_SNAP = page_snapshots.c


class NearDuplicate(NamedTuple):
    """A stored page near a SimHash: its URL digest, URL (``None`` if not kept), distance."""

    url_digest: bytes
    url: str | None
    distance: int


class NearCandidate(NamedTuple):
    """A stored page sharing at least one band with a queried SimHash."""

    url_digest: bytes
    url: str | None
    simhash: int
    content_sha256: bytes = b""


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


def check_near_distance(max_distance: int) -> None:
    """Refuse a distance the band index cannot answer completely (see the module docstring).

    >>> check_near_distance(3)
    >>> check_near_distance(4)
    Traceback (most recent call last):
    ...
    ValueError: max_distance must be between 0 and 3 (4 bands of 16 bits find every match only up to distance 3), got 4
    """  # noqa: E501
    if isinstance(max_distance, bool) or not isinstance(max_distance, int):
        raise TypeError(f"max_distance must be an int, not {type(max_distance).__name__}")
    if not 0 <= max_distance <= MAX_NEAR_DISTANCE:
        raise ValueError(
            f"max_distance must be between 0 and {MAX_NEAR_DISTANCE} ({SIMHASH_BANDS} bands of "
            f"{64 // SIMHASH_BANDS} bits find every match only up to distance "
            f"{MAX_NEAR_DISTANCE}), got {max_distance}"
        )


def check_simhash(value: int) -> None:
    """Refuse anything but an unsigned 64-bit integer."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"simhash must be an int, not {type(value).__name__}")
    if not 0 <= value < 1 << 64:
        raise ValueError(f"simhash must be an unsigned 64-bit integer, got {value}")


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


def nearest(
    simhash: int,
    candidates: Sequence[NearCandidate],
    max_distance: int,
    exclude_digest: bytes | None = None,
    limit: int = DEFAULT_NEAR_LIMIT,
) -> list[NearDuplicate]:
    """The candidates within ``max_distance`` of ``simhash``, nearest first (then by digest).

    >>> nearest(0b1010, [NearCandidate(b"b", "u", 0b1000), NearCandidate(b"a", None, 0)], 2)
    [NearDuplicate(url_digest=b'b', url='u', distance=1), NearDuplicate(url_digest=b'a', url=None, distance=2)]
    """  # noqa: E501
    found = [
        NearDuplicate(c.url_digest, c.url, d)
        for c in candidates
        if c.url_digest != exclude_digest and (d := hamming(simhash, c.simhash)) <= max_distance
    ]
    found.sort(key=lambda n: (n.distance, n.url_digest))
    return found[:limit]
