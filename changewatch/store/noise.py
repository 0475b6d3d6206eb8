"""The learned noise of each host (``host_noise``, migration 0009): counts added, rules read,
listed and reset — SQL over one connection.

:func:`record_noise` adds what a batch of re-fetches saw to each rule's counts in one
``INSERT … ON CONFLICT DO UPDATE`` (the addition is done by the database, so concurrent
workers never lose a count) and marks a rule learned, with the time, the first time its
counts meet the thresholds. :func:`learned_noise` is what the fingerprint is given
(``volatile_blocks``); rules of another fingerprint version are never read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from changewatch.fingerprint import NoiseRule
from changewatch.store.tables import host_noise

__all__ = ["learned_noise", "noise_rules", "record_noise", "reset_noise"]

_NOISE = host_noise.c


def record_noise(
    conn: Connection,
    host: str,
    version: int,
    rules: Sequence[NoiseRule],
    now: datetime,
    *,
    min_observations: int,
    min_share: float,
) -> None:
    """Add ``rules``' observations and changes to the host's counts; a rule whose totals reach
    ``min_observations`` with at least ``min_share`` of them changes is learned from ``now``."""
    if not rules:
        return
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    rows = [
        {
            "host": host,
            "fingerprint_version": version,
            "kind": rule.kind,
            "value": rule.value,
            "path": rule.path,
            "observations": rule.observations,
            "changes": rule.changes,
            "first_seen": now,
            "last_seen": now,
            "learned_at": now if rule.learned(min_observations, min_share) else None,
        }
        # One lock order for concurrent writers.
        for rule in sorted(rules, key=lambda r: (r.kind, r.value))
    ]
    stmt = insert(host_noise)
    observations = _NOISE.observations + stmt.excluded.observations
    changes = _NOISE.changes + stmt.excluded.changes
    learned = sa.and_(observations >= min_observations, changes >= min_share * observations)
    stmt = stmt.on_conflict_do_update(
        index_elements=[_NOISE.host, _NOISE.fingerprint_version, _NOISE.kind, _NOISE.value],
        set_={
            "observations": observations,
            "changes": changes,
            "last_seen": stmt.excluded.last_seen,
            "learned_at": sa.case(
                (_NOISE.learned_at.is_not(None), _NOISE.learned_at),
                (learned, stmt.excluded.last_seen),
                else_=None,
            ),
        },
    )
    conn.execute(stmt, rows)


def learned_noise(conn: Connection, host: str, version: int) -> frozenset[bytes]:
    """The block keys and shapes learned as noise for ``host`` under fingerprint ``version``."""
    stmt = sa.select(_NOISE.value).where(
        _NOISE.host == host,
        _NOISE.fingerprint_version == version,
        _NOISE.learned_at.is_not(None),
    )
    return frozenset(bytes(value) for value in conn.execute(stmt).scalars())


def noise_rules(
    conn: Connection, host: str | None = None, *, learned_only: bool = False
) -> list[dict[str, Any]]:
    """Every rule (of one host), learned first, most changed first, as dicts."""
    stmt = sa.select(host_noise).order_by(
        _NOISE.host,
        _NOISE.learned_at.is_(None),
        _NOISE.changes.desc(),
        _NOISE.kind,
        _NOISE.value,
    )
    if host is not None:
        stmt = stmt.where(_NOISE.host == host)
    if learned_only:
        stmt = stmt.where(_NOISE.learned_at.is_not(None))
    out = []
    for row in conn.execute(stmt).mappings():
        rule = dict(row)
        rule["value"] = bytes(rule["value"])
        out.append(rule)
    return out


def reset_noise(conn: Connection, host: str) -> int:
    """Forget every rule of ``host`` (all fingerprint versions); the number of rows removed."""
    return conn.execute(sa.delete(host_noise).where(_NOISE.host == host)).rowcount
