"""Store queries for conditional GET and recrawl scheduling: validators, 304s, ``due``.

``due`` reads a bounded number of rows through an index instead of scoring every page.
Ordering by the probability of a change, ``1 − e^(−r·Δt)``, is ordering by the expected
changes ``r·(now − last_seen)``: a line of a different slope per page, which no B-tree can
keep sorted for every ``now``. But among pages of (nearly) the same rate it *is* the order of
``last_seen``. So every write also stores the rate's band (:func:`changewatch.schedule.rate_band`:
rates within a factor √2 share one), indexed as ``(rate_band, last_seen)`` and
``(host, rate_band, last_seen)``. ``due(limit)`` takes, for each band, the ``limit`` pages
fetched longest ago (an index range scan each), then, over those candidates only,
``ORDER BY`` the expected changes at ``now``, ``LIMIT limit``; a first, small sample gives a
lower bound on the answer's expected changes, which cuts each band's range to the pages that
can reach it (see :func:`due`). At most ``bands × limit`` rows are read, whatever the table
size; in practice a few times ``limit``.

What that guarantees: the probabilities, expected changes and order of the pages returned are
exact, and any page left out has at most √2 times the expected changes of the last page
returned — in a band whose ``limit`` oldest pages were all read, each of those has a rate at
least 1/√2 of the left-out page's and has waited at least as long. (A full scan is exact;
:func:`due_full_scan` is kept as the reference, and benchmarks/due.py measures both.)
"""

from __future__ import annotations

import functools
import heapq
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import bindparam
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from changewatch.schedule import (
    MAX_RATE_BAND,
    MIN_RATE_BAND,
    RATE_BANDS_PER_DOUBLING,
    DuePage,
    rank_due,
)
from changewatch.store.rates import AddDays, DaysBetween, schedule_values
from changewatch.store.tables import UTCDateTime, page_snapshots
from changewatch.values import RawHit

__all__ = [
    "DEFAULT_DUE_SAMPLE_DIVISOR",
    "due",
    "due_full_scan",
    "touch_not_modified",
    "validators_of",
]

_SNAP = page_snapshots.c
_NOW = bindparam("now", type_=UTCDateTime())

# A 304 Not Modified: count the fetch and move last_seen like an unchanged fetch, keep the
# raw hash (no body arrived), refresh the validators the 304 carried, re-estimate the rate.
_NOT_MODIFIED = (
    sa.update(page_snapshots)
    .where(_SNAP.url_digest == bindparam("digest"))
    .values(
        last_seen=_NOW,
        fetch_count=_SNAP.fetch_count + 1,
        etag=sa.func.coalesce(bindparam("etag", type_=sa.Text), _SNAP.etag),
        last_modified=sa.func.coalesce(bindparam("lm", type_=sa.Text), _SNAP.last_modified),
        **schedule_values(_NOW, changed=False),
    )
    .returning(_SNAP.content_sha256, _SNAP.simhash, _SNAP.version_count)
)

_CANDIDATE_COLUMNS = (
    _SNAP.url,
    _SNAP.url_digest,
    _SNAP.host,
    _SNAP.last_seen,
    _SNAP.change_rate,
    _SNAP.rate_band,
)
_MAX_LOOKBACK_DAYS = 1e5
#: The first statement of ``due`` reads ⌈limit / this⌉ pages per rate band.
DEFAULT_DUE_SAMPLE_DIVISOR = 8


def touch_not_modified(
    conn: Connection,
    now: datetime,
    digest: bytes,
    etag: str | None,
    last_modified: str | None,
) -> RawHit | None:
    """Record a 304 for a stored page in one statement (the caller autocommits); ``None``
    if not stored."""
    params = {"digest": digest, "now": now, "etag": etag, "lm": last_modified}
    row = conn.execute(_NOT_MODIFIED, params).first()
    return None if row is None else RawHit(bytes(row[0]), row[1], row[2])


_VALIDATORS = sa.select(_SNAP.etag, _SNAP.last_modified).where(
    _SNAP.url_digest == bindparam("digest")
)


def validators_of(conn: Connection, digest: bytes) -> tuple[str | None, str | None] | None:
    """The stored ``(etag, last_modified)`` of a page, or ``None`` if it was never stored."""
    row = conn.execute(_VALIDATORS, {"digest": digest}).first()
    return None if row is None else (row[0], row[1])


def _band_filter(band: ColumnElement[Any], bounded: bool) -> list[ColumnElement[bool]]:
    """``rate_band = band``, and with ``bounded`` only pages that can reach ``:min_expected``:
    ``r·(now − last_seen) ≥ E`` needs ``last_seen ≤ now − E / r_max(band)``."""
    conditions: list[ColumnElement[bool]] = [_SNAP.rate_band == band]
    if bounded:
        top_rate = sa.case(
            (band >= MAX_RATE_BAND, sa.literal(1e300)),  # the top band is open-ended
            else_=sa.func.power(2.0, (band + 1) / float(RATE_BANDS_PER_DOUBLING)),
        )
        days = bindparam("min_expected", type_=sa.Float) / top_rate
        # Past ~270 years no page qualifies; the cap keeps the date arithmetic in range.
        days = sa.case((days > _MAX_LOOKBACK_DAYS, _MAX_LOOKBACK_DAYS), else_=days)
        cutoff = AddDays(_NOW, -days)
        conditions.append(_SNAP.last_seen <= cutoff)
    return conditions


def _union_candidates(host: bool, bounded: bool) -> sa.Subquery:
    """Per rate band, the ``:band_limit`` pages fetched longest ago: one UNION branch per band
    (SQLite, which has no LATERAL)."""
    branches = []
    for band in range(MIN_RATE_BAND, MAX_RATE_BAND + 1):
        branch = sa.select(*_CANDIDATE_COLUMNS).where(
            *_band_filter(sa.literal_column(str(band), sa.Integer), bounded)
        )
        if host:
            branch = branch.where(_SNAP.host == bindparam("host"))
        # Each branch in its own subquery: SQLite allows no ORDER BY/LIMIT inside a UNION.
        inner = branch.order_by(_SNAP.last_seen).limit(bindparam("band_limit")).subquery()
        branches.append(sa.select(inner))
    return sa.union_all(*branches).subquery("candidates")


def _lateral_candidates(host: bool, bounded: bool) -> sa.Subquery:
    """The same as one LATERAL subquery run per band (Postgres): planned once, not 81 times."""
    bands = (
        sa.func.generate_series(
            sa.literal_column(str(MIN_RATE_BAND)), sa.literal_column(str(MAX_RATE_BAND))
        )
        .table_valued("band")
        .render_derived(name="bands")
    )
    branch = sa.select(*_CANDIDATE_COLUMNS).where(*_band_filter(bands.c.band, bounded))
    if host:
        branch = branch.where(_SNAP.host == bindparam("host"))
    per_band = branch.order_by(_SNAP.last_seen).limit(bindparam("band_limit")).lateral("per_band")
    return (
        sa.select(*per_band.c).select_from(bands).join(per_band, sa.true()).subquery("candidates")
    )


def _due_statement(candidates: sa.Subquery) -> sa.Select[Any]:
    """The top ``:limit`` candidates by expected changes at ``:now``."""
    expected = candidates.c.change_rate * DaysBetween(candidates.c.last_seen, _NOW)
    return (
        sa.select(*(candidates.c[c.name] for c in _CANDIDATE_COLUMNS))
        .order_by(expected.desc(), candidates.c.last_seen, candidates.c.url_digest)
        .limit(bindparam("limit"))
    )


def _build(lateral: bool, host: bool, bounded: bool) -> sa.Subquery:
    return _lateral_candidates(host, bounded) if lateral else _union_candidates(host, bounded)


def _sample_statement(candidates: sa.Subquery) -> sa.Select[Any]:
    """Each sampled page's band and expected changes at ``:now`` (nothing else is needed)."""
    expected = candidates.c.change_rate * DaysBetween(candidates.c.last_seen, _NOW)
    return sa.select(candidates.c.rate_band, expected)


# Built on first use and kept (building all of them cost 0.16 s at import).
@functools.cache
def _sample(pg: bool, by_host: bool) -> sa.Select[Any]:
    """The sample statement of phase 1 (Postgres or not, one host or all)."""
    return _sample_statement(_build(pg, by_host, False))


@functools.cache
def _due(pg: bool, by_host: bool, bounded: bool) -> sa.Select[Any]:
    """The bounded top of phase 2, or the unbounded top."""
    return _due_statement(_build(pg, by_host, bounded))


def due(conn: Connection, now: datetime, limit: int, host: str | None = None) -> list[DuePage]:
    """The ``limit`` pages most likely changed since their last fetch, via the band index.

    Two statements. The first reads a sample — per band the ``⌈limit / 8⌉`` pages fetched
    longest ago, as (band, expected changes) pairs; if no band had more, that was every page
    and the second statement reads them all. Otherwise the
    ``limit``-th largest expected-change count ``E`` in the sample is a lower bound of the
    answer's, so the second statement reads, per band, only pages that can reach ``E``
    (``last_seen ≤ now − E / r_max(band)``, an index range), at most ``limit`` each.
    """
    if limit <= 0:
        return []
    pg, by_host = conn.dialect.name == "postgresql", host is not None
    params: dict[str, Any] = {"now": now, "limit": limit}
    if by_host:
        params["host"] = host
    sample_size = max(1, -(-limit // DEFAULT_DUE_SAMPLE_DIVISOR))
    if pg:
        # These short statements are costed as if every band held `limit` rows, which
        # would have Postgres JIT-compile them: more time than they take to run.
        conn.exec_driver_sql("SET LOCAL jit = off")
    sample = conn.execute(_sample(pg, by_host), params | {"band_limit": sample_size}).all()
    per_band = Counter(r[0] for r in sample)
    expected = heapq.nlargest(limit, (max(float(r[1]), 0.0) for r in sample))
    if all(n < sample_size for n in per_band.values()):
        bounded = False  # the sample held every page: read them all again, in full
        floor = 0.0
    else:
        floor = expected[-1] if len(expected) == limit else 0.0
        bounded = floor > 0
    params |= {"band_limit": limit, "min_expected": floor} if bounded else {"band_limit": limit}
    rows = conn.execute(_due(pg, by_host, bounded), params).all()
    return rank_due(_candidates(rows), now, limit)


def due_full_scan(
    conn: Connection, now: datetime, limit: int, host: str | None = None
) -> list[DuePage]:
    """``due`` computed over every row (``ORDER BY`` the expected changes): the reference.

    Orders by ``change_rate × (now − last_seen)`` in SQL, which sorts like the probability.
    For benchmarks and tests; it reads the whole table.
    """
    expected = _SNAP.change_rate * DaysBetween(_SNAP.last_seen, _NOW)
    stmt = sa.select(*_CANDIDATE_COLUMNS).where(_SNAP.change_rate.is_not(None))
    if host is not None:
        stmt = stmt.where(_SNAP.host == host)
    stmt = stmt.order_by(expected.desc(), _SNAP.last_seen, _SNAP.url_digest).limit(limit)
    rows = conn.execute(stmt, {"now": now}).all()
    return rank_due(_candidates(rows), now, limit)


def _candidates(
    rows: Sequence[Any],
) -> list[tuple[str | None, bytes, str, datetime, float]]:
    return [(r[0], bytes(r[1]), r[2], r[3], float(r[4])) for r in rows]
