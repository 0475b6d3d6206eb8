"""Store queries for conditional GET and recrawl scheduling: validators, 304s, ``due``.

``due`` reads candidates through an index instead of scoring every page. Ordering by the
probability of a change, ``1 − e^(−r·Δt)``, is ordering by ``r·(now − last_seen)``: a line
of a different slope per page, which no B-tree can keep sorted for every ``now``. So every
write also stores ``due_at = last_seen + ln 2 / r``, the moment that page's probability
reaches 0.5, under an index (and one on ``(host, due_at)``). ``due(limit)`` reads the
``limit × DEFAULT_DUE_CANDIDATE_FACTOR`` rows with the earliest ``due_at`` — an index range
scan, whatever the table size — and orders those by their exact probability at ``now``.

The answer is exact in what it returns (each page's probability and expected changes at
``now``) and in the order of the pages returned; it can differ from a full scan only in
*which* pages make the cut: a page with a high rate whose ``due_at`` is later than those of
the candidates read can have a higher probability now than the last page returned (rates
differ, so the lines cross). benchmarks/due.py measures the overlap with the full-scan answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import bindparam

from changewatch.schedule import DuePage, rank_due
from changewatch.store.rates import schedule_values
from changewatch.store.store import RawHit, SnapshotStore, _translate
from changewatch.store.tables import UTCDateTime, page_snapshots

__all__ = [
    "DEFAULT_DUE_CANDIDATE_FACTOR",
    "due",
    "due_full_scan",
    "touch_not_modified",
    "validators_of",
]

#: Candidates read per page asked for, in due_at order, before ranking by probability.
DEFAULT_DUE_CANDIDATE_FACTOR = 4

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
)


def touch_not_modified(
    store: SnapshotStore,
    now: datetime,
    digest: bytes,
    etag: str | None,
    last_modified: str | None,
) -> RawHit | None:
    """Record a 304 for a stored page in one autocommitted statement; ``None`` if not stored."""
    params = {"digest": digest, "now": now, "etag": etag, "lm": last_modified}
    with _translate(store.database_url), store.engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        row = conn.execute(_NOT_MODIFIED, params).first()
    return None if row is None else RawHit(bytes(row[0]), row[1], row[2])


def validators_of(store: SnapshotStore, digest: bytes) -> tuple[str | None, str | None] | None:
    """The stored ``(etag, last_modified)`` of a page, or ``None`` if it was never stored."""
    stmt = sa.select(_SNAP.etag, _SNAP.last_modified).where(_SNAP.url_digest == digest)
    with _translate(store.database_url), store.engine.connect() as conn:
        row = conn.execute(stmt).first()
    return None if row is None else (row[0], row[1])


def due(
    store: SnapshotStore,
    now: datetime,
    limit: int,
    host: str | None = None,
    candidate_factor: int = DEFAULT_DUE_CANDIDATE_FACTOR,
) -> list[DuePage]:
    """The ``limit`` pages most likely changed since their last fetch, via the due_at index."""
    if limit <= 0:
        return []
    stmt = sa.select(*_CANDIDATE_COLUMNS).where(_SNAP.due_at.is_not(None))
    if host is not None:
        stmt = stmt.where(_SNAP.host == host)
    stmt = stmt.order_by(_SNAP.due_at).limit(limit * max(candidate_factor, 1))
    with _translate(store.database_url), store.engine.connect() as conn:
        rows = conn.execute(stmt).all()
    return rank_due(_candidates(rows), now, limit)


def due_full_scan(
    store: SnapshotStore, now: datetime, limit: int, host: str | None = None
) -> list[DuePage]:
    """``due`` computed over every row (``ORDER BY`` the expected changes): the reference.

    Orders by ``change_rate × (now − last_seen)`` in SQL, which sorts like the probability.
    For benchmarks and tests; it reads the whole table.
    """
    from changewatch.store.rates import DaysBetween

    expected = _SNAP.change_rate * DaysBetween(_SNAP.last_seen, _NOW)
    stmt = sa.select(*_CANDIDATE_COLUMNS).where(_SNAP.change_rate.is_not(None))
    if host is not None:
        stmt = stmt.where(_SNAP.host == host)
    stmt = stmt.order_by(expected.desc(), _SNAP.last_seen, _SNAP.url_digest).limit(limit)
    with _translate(store.database_url), store.engine.connect() as conn:
        rows = conn.execute(stmt, {"now": now}).all()
    return rank_due(_candidates(rows), now, limit)


def _candidates(
    rows: Sequence[Any],
) -> list[tuple[str | None, bytes, str, datetime, float]]:
    return [(r[0], bytes(r[1]), r[2], r[3], float(r[4])) for r in rows]
