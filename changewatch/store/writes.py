"""The snapshot store's transaction: read snapshots, write one batch of decisions.

On Postgres the lookup locks the snapshot rows it reads (``FOR UPDATE``, in digest order), so
known pages cannot change under a batch. Writes are also conditional: a batch reads the
snapshots it needs, decides (:mod:`changewatch.decide`), then writes with conditions that
only hold if nobody else wrote those pages in between — ``INSERT … ON CONFLICT DO NOTHING``
for new pages, ``UPDATE … WHERE version_count = :seen`` for known ones. If any condition
fails the whole transaction rolls back and :class:`~changewatch.store.errors.WriteConflict`
tells the caller to decide again on fresh data. The invariants (every call counted once in
``fetch_count``; one ``page_versions`` row per new, changed or minor decision) therefore hold
under any number of concurrent workers.

Statements that take a list of keys are sent in chunks of :data:`MAX_KEYS_PER_STATEMENT`, so
a batch of any size stays within the drivers' parameter limits (65,535 for psycopg).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import bindparam, func
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from changewatch.fingerprint import Fingerprint
from changewatch.fingerprint.simhash64 import MAX_NEAR_DISTANCE
from changewatch.schedule import DEFAULT_PRIOR_RATE_PER_DAY, due_in_days, rate_band
from changewatch.store.errors import WriteConflict, translate_errors
from changewatch.store.history import recent_contents
from changewatch.store.near import read_copies
from changewatch.store.rates import schedule_values
from changewatch.store.tables import (
    SIMHASH_BANDS,
    UTCDateTime,
    page_chrome_changes,
    page_snapshots,
    page_versions,
)
from changewatch.store.texts import write_texts
from changewatch.store.types import to_signed64
from changewatch.values import Change, NearCandidate, NewPage, PageText, Snapshot, Touch

__all__ = ["FAST_TOUCH", "MAX_KEYS_PER_STATEMENT", "StoreTransaction", "chunks"]

#: Keys (digests) bound in one statement at most.
MAX_KEYS_PER_STATEMENT = 10_000

_SNAP = page_snapshots.c
_VER = page_versions.c
T = TypeVar("T")

_LOOKUP = sa.select(
    _SNAP.url_digest,
    _SNAP.url,
    _SNAP.raw_sha256,
    _SNAP.content_sha256,
    _SNAP.simhash,
    _SNAP.fingerprint_version,
    _SNAP.version_count,
    _SNAP.last_seen,
    _SNAP.host,
    _SNAP.chrome_sha256,
    _SNAP.links_sha256,
).where(_SNAP.url_digest.in_(sa.bindparam("digests", expanding=True)))
_PG_LOOKUP = _LOOKUP.order_by(_SNAP.url_digest).with_for_update()


def chunks(items: Sequence[T], size: int = MAX_KEYS_PER_STATEMENT) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``.

    >>> [list(c) for c in chunks([1, 2, 3, 4, 5], 2)]
    [[1, 2], [3, 4], [5]]
    """
    for start in range(0, len(items), size):
        yield items[start : start + size]


# The unchanged-bytes fast path of a single page as one statement: count the fetch only where
# the stored raw hash (and fingerprint version) still equal the page's, and return the row.
_NOW = bindparam("now", type_=UTCDateTime())
_B_NOW = bindparam("b_now", type_=UTCDateTime())
FAST_TOUCH = (
    sa.update(page_snapshots)
    .where(
        _SNAP.url_digest == bindparam("digest"),
        _SNAP.raw_sha256 == bindparam("raw"),
        _SNAP.fingerprint_version == bindparam("fpv"),
    )
    .values(
        last_seen=_NOW,
        fetch_count=_SNAP.fetch_count + 1,
        etag=func.coalesce(bindparam("etag", type_=sa.Text), _SNAP.etag),
        last_modified=func.coalesce(bindparam("lm", type_=sa.Text), _SNAP.last_modified),
        **schedule_values(_NOW, changed=False),
    )
    .returning(_SNAP.content_sha256, _SNAP.simhash, _SNAP.version_count)
)


class StoreTransaction:
    """One transaction on the store: read snapshots, then write one batch of decisions."""

    def __init__(self, conn: Connection, dialect: str, database_url: str) -> None:
        self._conn = conn
        self._dialect = dialect
        self._database_url = database_url
        self._lookup = _PG_LOOKUP if dialect == "postgresql" else _LOOKUP

    def lookup(self, digests: Sequence[bytes]) -> dict[bytes, Snapshot]:
        """The stored snapshots of these pages, keyed by URL digest (in chunks, digest order:
        on Postgres the rows are locked in one global order, so concurrent batches queue
        instead of deadlocking or invalidating each other's decisions until they give up)."""
        found: dict[bytes, Snapshot] = {}
        with translate_errors(self._database_url):
            for part in chunks(sorted(set(digests))):
                for r in self._conn.execute(self._lookup, {"digests": list(part)}):
                    found[bytes(r.url_digest)] = Snapshot(
                        url_digest=bytes(r.url_digest),
                        url=r.url,
                        raw_sha256=bytes(r.raw_sha256),
                        content_sha256=bytes(r.content_sha256),
                        simhash=r.simhash,
                        fingerprint_version=r.fingerprint_version,
                        version_count=r.version_count,
                        last_seen=r.last_seen,
                        host=r.host,
                        chrome_sha256=None if r.chrome_sha256 is None else bytes(r.chrome_sha256),
                        links_sha256=None if r.links_sha256 is None else bytes(r.links_sha256),
                    )
        return found

    def copy_candidates(
        self,
        pages: Sequence[tuple[bytes, int | None]],
        per_content: int = 1,
        radius: int = MAX_NEAR_DISTANCE,
    ) -> list[NearCandidate]:
        """The exact and near copies of new pages, each ``(content hash, SimHash or None)``:
        each content's ``per_content`` holders with the smallest URL digests, and for the
        pages whose content has fewer holders than that, the ``per_content`` such holders
        of each stored SimHash within ``radius`` (bounded reads, however many pages share a
        content or a SimHash: :func:`~changewatch.store.near.read_copies`)."""
        found: dict[bytes, NearCandidate] = {}
        with translate_errors(self._database_url):
            for part in chunks(pages, MAX_KEYS_PER_STATEMENT // SIMHASH_BANDS):
                for c in read_copies(self._conn, part, per_content, radius):
                    found.setdefault(c.url_digest, c)
        return list(found.values())

    def recent_contents(
        self, digests: Sequence[bytes], window: int, fingerprint_version: int
    ) -> dict[bytes, list[tuple[int, bytes]]]:
        """The content hashes of each page's last ``window`` versions, newest first.

        One statement over the ``(url_digest, version_no)`` index; only versions made by
        ``fingerprint_version`` rules (others' hashes are not comparable). Used for flip-flop
        detection (:func:`changewatch.store.history.recent_contents`).
        """
        found: dict[bytes, list[tuple[int, bytes]]] = {}
        with translate_errors(self._database_url):
            for part in chunks(sorted(set(digests))):
                found |= recent_contents(self._conn, part, window, fingerprint_version)
        return found

    def write(
        self,
        now: datetime,
        new: Sequence[NewPage] = (),
        touches: Sequence[Touch] = (),
        changes: Sequence[Change] = (),
        texts: Sequence[PageText] = (),
    ) -> None:
        """Apply one batch of decisions, and keep the ``texts`` not stored yet;
        :class:`WriteConflict` if any page moved meanwhile."""
        with translate_errors(self._database_url):
            if new:
                self._insert_new(now, new)
            if touches:
                self._touch(now, touches)
            if changes:
                self._change(now, changes)
            chrome = _chrome_rows(now, touches, changes)
            if chrome:
                self._conn.execute(sa.insert(page_chrome_changes), chrome)
            if texts:
                write_texts(self._conn, now, texts)

    def _insert_new(self, now: datetime, pages: Sequence[NewPage]) -> None:
        # Digest order, like the locks taken by lookup(), so racing inserts cannot deadlock.
        pages = sorted(pages, key=lambda p: p.url_digest)
        if self._dialect == "postgresql":
            inserted = self._conn.execute(_PG_INSERT_NEW, _pg_new_params(now, pages)).all()
        else:
            inserted = self._conn.execute(_SQLITE_INSERT_NEW, _new_rows(now, pages)).all()
        if len(inserted) != len(pages):
            raise WriteConflict("a new page was inserted by another worker")
        self._conn.execute(
            sa.insert(page_versions),
            [
                _version_row(p.url_digest, 1, "new", None, p.fp, now) | {"host": p.host}
                for p in pages
            ],
        )

    def _touch(self, now: datetime, touches: Sequence[Touch]) -> None:
        plain = [t for t in touches if t.fp is None]
        if plain:
            self._expect_rows(_TOUCH, [_params(now, t, t.raw_sha256) for t in plain])
        # Unchanged pages on rows made by older rules: re-keyed in place, no history row.
        rekeys = [t for t in touches if t.fp is not None]
        if rekeys:
            self._expect_rows(_REKEY, [_params(now, t, t.raw_sha256, t.fp) for t in rekeys])

    def _change(self, now: datetime, changes: Sequence[Change]) -> None:
        self._expect_rows(_CHANGE, [_params(now, c, c.fp.raw_sha256, c.fp) for c in changes])
        # The superseded version was last seen at the snapshot's previous last_seen.
        self._conn.execute(
            sa.update(page_versions)
            .where(
                _VER.url_digest == bindparam("b_digest"), _VER.version_no == bindparam("b_version")
            )
            .values(last_seen=bindparam("b_prev")),
            [
                {
                    "b_digest": c.url_digest,
                    "b_version": c.expected_versions,
                    "b_prev": c.previous_last_seen,
                }
                for c in changes
            ],
        )
        self._conn.execute(
            sa.insert(page_versions),
            [
                _version_row(c.url_digest, c.expected_versions + 1, c.kind, c.distance, c.fp, now)
                | {"reverted_to": c.reverted_to, "host": c.host}
                for c in changes
            ],
        )

    def _expect_rows(self, stmt: Any, params: list[dict[str, Any]]) -> None:
        result = self._conn.execute(stmt, params)
        if result.rowcount != len(params):
            raise WriteConflict("a page was changed by another worker")


# A new page's row: what it was fetched with, one version, one fetch, the prior rate.
_NEW_CONSTANTS = {
    "version_count": 1,
    "fetch_count": 1,
    "change_count": 0,
    "change_rate": DEFAULT_PRIOR_RATE_PER_DAY,
    "rate_band": rate_band(DEFAULT_PRIOR_RATE_PER_DAY),
}
_PRIOR_DUE = timedelta(days=due_in_days(DEFAULT_PRIOR_RATE_PER_DAY))
_SQLITE_INSERT_NEW = (
    sqlite.insert(page_snapshots)
    .on_conflict_do_nothing(index_elements=[_SNAP.url_digest])
    .returning(_SNAP.url_digest)
)
# On Postgres the batch's rows go in as one array per column, unnested in the server: the
# statement's text never changes and psycopg adapts each list in C. A multi-row VALUES (what
# SQLAlchemy sends for an INSERT … RETURNING of many rows) is a statement of 24 placeholders
# a row that psycopg parses again for every batch: 0.13 ms of client CPU a row against 0.016
# here (2,000 rows, measured side by side), and 4× the wall time.
_PG_COLUMNS = (
    ("url_digest", "bytea"),
    ("host", "varchar"),
    ("url", "text"),
    ("canon_version", "smallint"),
    ("fingerprint_version", "smallint"),
    ("raw_sha256", "bytea"),
    ("content_sha256", "bytea"),
    ("simhash", "bigint"),
    ("text_length", "integer"),
    ("etag", "text"),
    ("last_modified", "text"),
    ("chrome_sha256", "bytea"),
    ("links_sha256", "bytea"),
)
_PG_INSERT_NEW = sa.text(
    "INSERT INTO page_snapshots ("
    + ", ".join(name for name, _ in _PG_COLUMNS)
    + ", first_seen, last_seen, last_changed, due_at, "
    + ", ".join(_NEW_CONSTANTS)
    + ") SELECT u.*, :now, :now, :now, :due, "
    + ", ".join(f":{name}" for name in _NEW_CONSTANTS)
    + " FROM unnest("
    + ", ".join(f"CAST(:{name} AS {kind}[])" for name, kind in _PG_COLUMNS)
    + ") AS u("
    + ", ".join(name for name, _ in _PG_COLUMNS)
    + ") ON CONFLICT (url_digest) DO NOTHING RETURNING url_digest"
)


def _new_columns(page: NewPage) -> tuple[Any, ...]:
    """A new page's own values, in :data:`_PG_COLUMNS` order (SimHash as stored: signed)."""
    fp = page.fp
    return (
        page.url_digest,
        page.host,
        page.url,
        page.canon_version,
        fp.version,
        fp.raw_sha256,
        fp.content_sha256,
        to_signed64(fp.simhash),
        fp.text_length,
        page.etag,
        page.last_modified,
        None if fp.binary else fp.chrome_sha256,
        None if fp.binary else fp.links_sha256,
    )


def _pg_new_params(now: datetime, pages: Sequence[NewPage]) -> dict[str, Any]:
    """The arrays (one per column) and constants of :data:`_PG_INSERT_NEW`."""
    columns = zip(*(_new_columns(p) for p in pages), strict=True)
    arrays = {name: list(values) for (name, _), values in zip(_PG_COLUMNS, columns, strict=True)}
    return arrays | _NEW_CONSTANTS | {"now": now, "due": now + _PRIOR_DUE}


def _new_rows(now: datetime, pages: Sequence[NewPage]) -> list[dict[str, Any]]:
    """The rows of :data:`_SQLITE_INSERT_NEW` (the SimHash type converts the SimHash)."""
    rows = []
    for page in pages:
        row = dict(zip((name for name, _ in _PG_COLUMNS), _new_columns(page), strict=True))
        row["simhash"] = page.fp.simhash
        rows.append(
            row
            | _NEW_CONSTANTS
            | {"first_seen": now, "last_seen": now, "last_changed": now, "due_at": now + _PRIOR_DUE}
        )
    return rows


def _snapshot_update(extra: dict[str, Any] | None = None, *, changed: bool = False) -> sa.Update:
    """A conditional UPDATE of one snapshot: only where ``version_count`` is still what was
    read. Counts the fetch, moves ``last_seen``, keeps the latest raw hash and HTTP
    validators, re-estimates the change rate (``changed``: this fetch saw a change) and sets
    the ``extra`` columns."""
    return (
        sa.update(page_snapshots)
        .where(
            _SNAP.url_digest == bindparam("b_digest"),
            _SNAP.version_count == bindparam("b_expected"),
        )
        .values(
            last_seen=_B_NOW,
            fetch_count=_SNAP.fetch_count + 1,
            raw_sha256=bindparam("b_raw"),
            etag=func.coalesce(bindparam("b_etag", type_=sa.Text), _SNAP.etag),
            last_modified=func.coalesce(bindparam("b_lm", type_=sa.Text), _SNAP.last_modified),
            **schedule_values(_B_NOW, changed=changed),
            **_CHROME_VALUES,
            **(extra or {}),
        )
    )


# The chrome and outlinks hashes are kept when the decision knows them (NULL binds leave
# the stored ones), and the time of the fetch that saw either change.
_CHROME_VALUES = {
    "chrome_sha256": func.coalesce(
        bindparam("b_chrome", type_=sa.LargeBinary), page_snapshots.c.chrome_sha256
    ),
    "links_sha256": func.coalesce(
        bindparam("b_links", type_=sa.LargeBinary), page_snapshots.c.links_sha256
    ),
    "chrome_changed_at": func.coalesce(
        bindparam("b_chrome_at", type_=UTCDateTime()), page_snapshots.c.chrome_changed_at
    ),
    "links_changed_at": func.coalesce(
        bindparam("b_links_at", type_=UTCDateTime()), page_snapshots.c.links_changed_at
    ),
}


_NEW_FINGERPRINT = {
    "content_sha256": bindparam("b_content"),
    "simhash": bindparam("b_simhash", type_=page_snapshots.c.simhash.type),
    "text_length": bindparam("b_length"),
    "fingerprint_version": bindparam("b_fpv"),
}
_TOUCH = _snapshot_update()
_REKEY = _snapshot_update(_NEW_FINGERPRINT)
_CHANGE = _snapshot_update(
    {
        "last_changed": bindparam("b_now"),
        "version_count": _SNAP.version_count + 1,
        **_NEW_FINGERPRINT,
    },
    changed=True,
)


def _params(
    now: datetime, op: Touch | Change, raw: bytes, fp: Fingerprint | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "b_digest": op.url_digest,
        "b_expected": op.expected_versions,
        "b_now": now,
        "b_raw": raw,
        "b_etag": op.etag,
        "b_lm": op.last_modified,
        "b_chrome": None if op.chrome is None else op.chrome.chrome_sha256,
        "b_links": None if op.chrome is None else op.chrome.links_sha256,
        "b_chrome_at": now if op.chrome is not None and op.chrome.chrome_changed else None,
        "b_links_at": now if op.chrome is not None and op.chrome.links_changed else None,
    }
    if fp is not None:
        params |= {
            "b_content": fp.content_sha256,
            "b_simhash": fp.simhash,
            "b_length": fp.text_length,
            "b_fpv": fp.version,
        }
    return params


def _chrome_rows(
    now: datetime, touches: Sequence[Touch], changes: Sequence[Change]
) -> list[dict[str, Any]]:
    """A ``page_chrome_changes`` row for each fetch that saw the chrome or outlinks change."""
    rows = []
    for op, content_changed in [(t, False) for t in touches] + [(c, True) for c in changes]:
        state = op.chrome
        if state is not None and (state.chrome_changed or state.links_changed):
            rows.append(
                {
                    "url_digest": op.url_digest,
                    "seen_at": now,
                    "content_changed": content_changed,
                    "chrome_changed": state.chrome_changed,
                    "links_changed": state.links_changed,
                    "chrome_sha256": state.chrome_sha256,
                    "links_sha256": state.links_sha256,
                }
            )
    return rows


def _version_row(
    digest: bytes, number: int, kind: str, distance: int | None, fp: Fingerprint, now: datetime
) -> dict[str, Any]:
    return {
        "url_digest": digest,
        "version_no": number,
        "kind": kind,
        "distance": distance,
        "raw_sha256": fp.raw_sha256,
        "content_sha256": fp.content_sha256,
        "simhash": fp.simhash,
        "fingerprint_version": fp.version,
        "text_length": fp.text_length,
        "first_seen": now,
        "last_seen": now,
    }
