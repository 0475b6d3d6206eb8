"""History queries beyond the decision path: flip-flop candidates and recent changes.

:func:`recent_contents` is what a batch reads to mark a change that returns to an earlier
version (``page_versions.reverted_to``); :func:`changes_for_host` reads the ``page_changes``
view for one host over a time window (what ``benchmarks/history.py`` times).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import bindparam
from sqlalchemy.engine import Connection

from changewatch.store.tables import page_snapshots, page_versions
from changewatch.values import DEFAULT_FLIP_WINDOW

__all__ = [
    "CHANGES_FOR_HOST",
    "DEFAULT_FLIP_WINDOW",
    "changes_for_host",
    "recent_contents",
]


_SNAP = page_snapshots.c
_VER = page_versions.c

# The versions with numbers above version_count - window, for the pages of a batch: the
# snapshot join bounds the index range scan on (url_digest, version_no) per page.
_RECENT = (
    sa.select(_VER.url_digest, _VER.version_no, _VER.content_sha256)
    .join(page_snapshots, _SNAP.url_digest == _VER.url_digest)
    .where(
        _VER.url_digest.in_(bindparam("digests", expanding=True)),
        _VER.version_no > _SNAP.version_count - bindparam("window"),
        _VER.fingerprint_version == bindparam("fpv"),
    )
    .order_by(_VER.url_digest, _VER.version_no.desc())
)

#: One host's changes since a time, newest first (bind ``host`` and ``since``).
CHANGES_FOR_HOST = sa.text(
    "SELECT * FROM page_changes WHERE host = :host AND changed_at >= :since "
    "ORDER BY changed_at DESC"
)


def recent_contents(
    conn: Connection, digests: Sequence[bytes], window: int, fingerprint_version: int
) -> dict[bytes, list[tuple[int, bytes]]]:
    """``{digest: [(version_no, content_sha256), …]}``, newest version first, for the last
    ``window`` versions of each page (pruned versions are simply absent)."""
    if not digests or window <= 0:
        return {}
    params = {"digests": sorted(set(digests)), "window": window, "fpv": fingerprint_version}
    found: dict[bytes, list[tuple[int, bytes]]] = {}
    for row in conn.execute(_RECENT, params):
        found.setdefault(bytes(row.url_digest), []).append(
            (int(row.version_no), bytes(row.content_sha256))
        )
    return found


def changes_for_host(conn: Connection, host: str, since: datetime) -> list[Any]:
    """Rows of ``page_changes`` for ``host`` from ``since`` (a UTC datetime), newest first.

    ``since`` is bound as text on SQLite, where the view's timestamps are stored as text.
    """
    value: Any = since
    if conn.dialect.name == "sqlite":
        value = since.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    return list(conn.execute(CHANGES_FOR_HOST, {"host": host, "since": value}).all())
