"""The template blocks of each host (``host_templates``, ``host_template_pages``, migration
0012): pages counted, rules read, listed and reset — SQL over one connection.

:func:`record_templates` takes, for some of a host's pages, the values each shows now
(:func:`~changewatch.fingerprint.templates.template_values`). A page not yet sampled joins
the host's sample while it holds fewer than ``max_sample`` pages, and adds one to each of its
values; a sampled page whose values changed takes one from those it lost and adds one to
those it gained. The page's row is written first, conditionally on what was read (``INSERT
… ON CONFLICT DO NOTHING``, ``UPDATE … WHERE template_values = <read>``), and only the
writer whose row write took adds to the counts, in the same transaction — so ``pages`` is
always the number of sampled pages whose row holds the value, however many workers race.
Counts change in one ``INSERT … ON CONFLICT DO UPDATE`` in value order (one lock order for
concurrent writers); a value no sampled page holds any more is deleted — but a learned slot
only once another learned slot holds its key. A value is learned,
with the time, the first time it stands on ``min_pages`` pages and ``min_share`` of the
sample; it stays learned (until reset), so a share that drops as the sample grows never
moves a block back and forth.

Bounds per host: ``max_sample`` page rows (concurrent first writers can each add one page
past it) and at most ``max_sample`` × the values per page of template rows held by a page,
plus at most one learned slot per block key that no page holds any more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from changewatch.fingerprint.templates import TemplateValue, template_set
from changewatch.store.tables import host_template_pages, host_templates

__all__ = [
    "DEFAULT_TEMPLATE_SAMPLE_PAGES",
    "learned_templates",
    "record_templates",
    "reset_templates",
    "template_rules",
]

#: Pages of a host that template blocks are counted on (the first ones observed).
DEFAULT_TEMPLATE_SAMPLE_PAGES = 100

_T = host_templates.c
_P = host_template_pages.c
_NO_KEY = bytes(8)


def _split(blob: bytes) -> set[bytes]:
    return {blob[i : i + 8] for i in range(0, len(blob), 8)}


def record_templates(
    conn: Connection,
    host: str,
    version: int,
    pages: Sequence[tuple[bytes, Sequence[TemplateValue]]],
    now: datetime,
    *,
    min_pages: int,
    min_share: float,
    max_sample: int = DEFAULT_TEMPLATE_SAMPLE_PAGES,
) -> bool:
    """Count what ``pages`` (each ``(url_digest, values)``, values sorted) show now; whether
    any count changed."""
    latest = {digest: tuple(values) for digest, values in pages}
    if not latest:
        return False
    host_rows = sa.and_(_P.host == host, _P.fingerprint_version == version)
    stored = {
        bytes(digest): bytes(blob)
        for digest, blob in conn.execute(
            sa.select(_P.url_digest, _P.template_values).where(
                host_rows, _P.url_digest.in_(sorted(latest))
            )
        )
    }
    size = conn.execute(sa.select(sa.func.count()).where(host_rows)).scalar_one()
    blobs = {digest: b"".join(v.value for v in values) for digest, values in latest.items()}
    # Phase 1, the new pages in one statement; phase 2, the changed ones: one lock order.
    fresh = [d for d in sorted(latest) if d not in stored][: max(max_sample - size, 0)]
    taken = _insert_pages(conn, host, version, fresh, blobs, latest, now)
    size += len(taken)
    deltas: Counter[bytes] = Counter()
    seen: dict[bytes, TemplateValue] = {}
    for digest in sorted(latest):
        values, blob, old = latest[digest], blobs[digest], stored.get(digest)
        if old is None and digest not in taken:
            continue  # the sample is full, or another worker wrote this page first
        if old is not None and (
            old == blob
            or not _update_page(conn, host, version, digest, old, blob, len(values), now)
        ):
            continue  # unchanged, or another worker changed this page's row first
        before = _split(old) if old else set()
        for value in values:
            seen.setdefault(value.value, value)
            if value.value not in before:
                deltas[value.value] += 1
        for lost in before - {v.value for v in values}:
            deltas[lost] -= 1
    if not deltas:
        return False
    _apply(conn, host, version, deltas, seen, now, min_pages, max(min_share * size, 0))
    return True


def _insert_pages(
    conn: Connection,
    host: str,
    version: int,
    digests: list[bytes],
    blobs: dict[bytes, bytes],
    latest: dict[bytes, tuple[TemplateValue, ...]],
    now: datetime,
) -> set[bytes]:
    """Insert the rows of ``digests`` (sorted) where absent; the digests whose row this
    statement wrote (RETURNING: SQLAlchemy's rowcount is -1 for an INSERT on psycopg)."""
    if not digests:
        return set()
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    rows = [
        {
            "host": host,
            "fingerprint_version": version,
            "url_digest": digest,
            "template_values": blobs[digest],
            "value_count": len(latest[digest]),
            "first_seen": now,
            "last_seen": now,
        }
        for digest in digests
    ]
    stmt = insert(host_template_pages).values(rows).on_conflict_do_nothing()
    return {bytes(d) for d in conn.execute(stmt.returning(_P.url_digest)).scalars()}


def _update_page(
    conn: Connection,
    host: str,
    version: int,
    digest: bytes,
    old: bytes,
    blob: bytes,
    count: int,
    now: datetime,
) -> bool:
    """Move the page's row from ``old`` to ``blob`` if it still holds ``old``; whether it did."""
    update = (
        sa.update(host_template_pages)
        .where(
            _P.host == host,
            _P.fingerprint_version == version,
            _P.url_digest == digest,
            _P.template_values == old,
        )
        .values(template_values=blob, value_count=count, last_seen=now)
    )
    return bool(conn.execute(update).rowcount)


def _apply(
    conn: Connection,
    host: str,
    version: int,
    deltas: Counter[bytes],
    seen: dict[bytes, TemplateValue],
    now: datetime,
    min_pages: int,
    min_count: float,
) -> None:
    """Add ``deltas`` to the values' page counts, learn those that reach the thresholds,
    delete those no page holds any more."""
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    rows = []
    for value in sorted(deltas):
        shown = seen.get(value)  # None: a value only lost (its row exists unless reset)
        delta = deltas[value]
        rows.append(
            {
                "host": host,
                "fingerprint_version": version,
                "value": value,
                "kind": shown.kind if shown else "text",
                "block_key": shown.key if shown else _NO_KEY,
                "path": shown.path if shown else "",
                "pages": delta,
                "first_seen": now,
                "last_seen": now,
                "learned_at": now if delta >= min_pages and delta >= min_count else None,
            }
        )
    stmt = insert(host_templates)
    pages = _T.pages + stmt.excluded.pages
    learned = sa.and_(pages >= min_pages, pages >= min_count)
    stmt = stmt.on_conflict_do_update(
        index_elements=[_T.host, _T.fingerprint_version, _T.value],
        set_={
            "pages": pages,
            "last_seen": stmt.excluded.last_seen,
            "learned_at": sa.case(
                (_T.learned_at.is_not(None), _T.learned_at),
                (learned, stmt.excluded.last_seen),
                else_=None,
            ),
        },
    )
    conn.execute(stmt, rows)
    lost = sorted(value for value, delta in deltas.items() if delta < 0)
    keys = sorted({v.key for v in seen.values() if v.kind == "slot"})
    if lost or keys:
        other = host_templates.alias("other")
        # A learned slot is its key's last hold on being template: kept at 0 pages until
        # another learned slot holds the key (a promo changed twice before the new text
        # stood on half of the pages must not make its place content again).
        successor = sa.exists().where(
            other.c.host == _T.host,
            other.c.fingerprint_version == _T.fingerprint_version,
            other.c.kind == "slot",
            other.c.block_key == _T.block_key,
            other.c.value != _T.value,
            other.c.learned_at.is_not(None),
        )
        conn.execute(
            sa.delete(host_templates).where(
                _T.host == host,
                _T.fingerprint_version == version,
                _T.pages <= 0,
                sa.or_(
                    sa.and_(
                        _T.value.in_(lost),
                        sa.or_(_T.kind != "slot", _T.learned_at.is_(None), successor),
                    ),
                    sa.and_(_T.kind == "slot", _T.block_key.in_(keys), successor),
                ),
            )
        )


def learned_templates(conn: Connection, host: str, version: int) -> frozenset[bytes]:
    """The ``template_blocks`` learned for ``host`` under fingerprint ``version``: text
    hashes of text rules, block keys of slot rules."""
    stmt = sa.select(_T.kind, _T.value, _T.block_key).where(
        _T.host == host, _T.fingerprint_version == version, _T.learned_at.is_not(None)
    )
    return template_set((kind, bytes(value), bytes(key)) for kind, value, key in conn.execute(stmt))


def template_rules(
    conn: Connection, host: str | None = None, *, learned_only: bool = False
) -> list[dict[str, Any]]:
    """Every template rule (of one host), learned first, on most pages first, as dicts, each
    with ``sampled``: the host's sampled pages under that fingerprint version."""
    sampled = (
        sa.select(sa.func.count())
        .where(_P.host == _T.host, _P.fingerprint_version == _T.fingerprint_version)
        .scalar_subquery()
    )
    stmt = sa.select(host_templates, sampled.label("sampled")).order_by(
        _T.host, _T.learned_at.is_(None), _T.pages.desc(), _T.kind, _T.value
    )
    if host is not None:
        stmt = stmt.where(_T.host == host)
    if learned_only:
        stmt = stmt.where(_T.learned_at.is_not(None))
    out = []
    for row in conn.execute(stmt).mappings():
        rule = dict(row)
        rule["value"] = bytes(rule["value"])
        rule["block_key"] = bytes(rule["block_key"])
        out.append(rule)
    return out


def reset_templates(conn: Connection, host: str) -> int:
    """Forget every template rule and sampled page of ``host`` (all fingerprint versions);
    the number of rules removed."""
    conn.execute(sa.delete(host_template_pages).where(_P.host == host))
    return conn.execute(sa.delete(host_templates).where(_T.host == host)).rowcount
