"""Every SQL statement of the snapshot store, on SQLite and Postgres.

On Postgres the lookup locks the snapshot rows it reads (``FOR UPDATE``, in digest order), so
known pages cannot change under a batch. Writes are also conditional: a batch reads the
snapshots it needs, decides in Python, then writes with conditions that only hold if nobody
else wrote those pages in between —
``INSERT … ON CONFLICT DO NOTHING`` for new pages, ``UPDATE … WHERE version_count = :seen``
for known ones. If any condition fails the whole transaction rolls back and
:class:`WriteConflict` tells the caller to decide again on fresh data. The invariants
(every call counted once in ``fetch_count``; one ``page_versions`` row per new, changed or
minor decision) therefore hold under any number of concurrent workers.

Driver exceptions are translated here, in :func:`_translate`, and nowhere else.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import bindparam, func
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from changewatch.errors import StoreError
from changewatch.fingerprint import Fingerprint
from changewatch.model import Snapshot, Version
from changewatch.schedule import DEFAULT_PRIOR_RATE_PER_DAY, due_in_days, rate_band
from changewatch.store.history import recent_contents
from changewatch.store.near import (
    DEFAULT_NEAR_LIMIT,
    NearCandidate,
    NearDuplicate,
    check_near_distance,
    check_simhash,
    nearest,
    read_candidates,
)
from changewatch.store.prune import DEFAULT_PRUNE_BATCH, PruneReport, prune_versions
from changewatch.store.rates import schedule_values
from changewatch.store.tables import UTCDateTime, page_snapshots, page_versions

__all__ = [
    "Change",
    "NewPage",
    "RawHit",
    "SnapshotStore",
    "StoreTransaction",
    "Touch",
    "WriteConflict",
]

_SNAP = page_snapshots.c
_VER = page_versions.c
# SQLSTATEs that mean "another transaction got there first": retry on fresh data.
_CONFLICT_SQLSTATES = {"40001", "40P01"}


class WriteConflict(Exception):  # noqa: N818 - internal control flow, never escapes the package
    """A conditional write found the page changed by another worker; decide again."""


@dataclass(frozen=True, slots=True)
class NewPage:
    """Insert a first snapshot and its version 1."""

    url_digest: bytes
    host: str
    url: str | None
    canon_version: int
    fp: Fingerprint
    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True, slots=True)
class RawHit:
    """A page whose stored raw hash matched: counted and moved by the fast-path statement."""

    content_sha256: bytes
    simhash: int
    version_count: int


@dataclass(frozen=True, slots=True)
class Touch:
    """An unchanged fetch: count it, move ``last_seen``, remember the latest raw hash.

    With ``fp`` (a row fingerprinted under older rules whose page is unchanged) the row is
    re-keyed to the new fingerprint and its version; no ``page_versions`` row is added.
    """

    url_digest: bytes
    expected_versions: int
    raw_sha256: bytes
    etag: str | None = None
    last_modified: str | None = None
    fp: Fingerprint | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """A changed or minor fetch: replace the snapshot's fingerprint and append a version."""

    url_digest: bytes
    expected_versions: int
    fp: Fingerprint
    kind: str
    distance: int
    previous_last_seen: datetime
    etag: str | None = None
    last_modified: str | None = None
    reverted_to: int | None = None
    host: str | None = None


# The unchanged-bytes fast path of a single page as one statement: count the fetch only where
# the stored raw hash (and fingerprint version) still equal the page's, and return the row.
_NOW = bindparam("now", type_=UTCDateTime())
_B_NOW = bindparam("b_now", type_=UTCDateTime())
_FAST_TOUCH = (
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


def redact(database_url: str) -> str:
    """The database URL with its password hidden, for messages and logs."""
    try:
        return make_url(database_url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL: show only its scheme
        return database_url.partition(":")[0] + ":…"


@contextlib.contextmanager
def _translate(database_url: str) -> Iterator[None]:
    """Turn driver and SQLAlchemy errors into :class:`StoreError` (or a retryable conflict)."""
    try:
        yield
    except DBAPIError as exc:
        sqlstate = getattr(exc.orig, "sqlstate", None)
        if sqlstate in _CONFLICT_SQLSTATES:
            raise WriteConflict(str(sqlstate)) from exc
        detail = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        raise StoreError(f"database {redact(database_url)} failed: {detail}") from exc
    except SQLAlchemyError as exc:
        raise StoreError(f"database {redact(database_url)} failed: {exc}") from exc


class StoreTransaction:
    """One transaction on the store: read snapshots, then write one batch of decisions."""

    def __init__(self, conn: Connection, dialect: str, database_url: str) -> None:
        self._conn = conn
        self._dialect = dialect
        self._database_url = database_url

    @property
    def connection(self) -> Connection:
        """The transaction's connection, for statements kept in other store modules."""
        return self._conn

    def lookup(self, digests: Sequence[bytes]) -> dict[bytes, Snapshot]:
        """The stored snapshots of these pages, keyed by URL digest."""
        if not digests:
            return {}
        stmt = sa.select(
            _SNAP.url_digest,
            _SNAP.url,
            _SNAP.raw_sha256,
            _SNAP.content_sha256,
            _SNAP.simhash,
            _SNAP.fingerprint_version,
            _SNAP.version_count,
            _SNAP.last_seen,
            _SNAP.host,
        ).where(_SNAP.url_digest.in_(sa.bindparam("digests", expanding=True)))
        if self._dialect == "postgresql":
            # Lock the rows read, in one global order: concurrent batches then queue instead
            # of deadlocking or invalidating each other's decisions until they give up.
            stmt = stmt.order_by(_SNAP.url_digest).with_for_update()
        with _translate(self._database_url):
            rows = self._conn.execute(stmt, {"digests": list(set(digests))}).all()
        return {
            bytes(r.url_digest): Snapshot(
                url_digest=bytes(r.url_digest),
                url=r.url,
                raw_sha256=bytes(r.raw_sha256),
                content_sha256=bytes(r.content_sha256),
                simhash=r.simhash,
                fingerprint_version=r.fingerprint_version,
                version_count=r.version_count,
                last_seen=r.last_seen,
                host=r.host,
            )
            for r in rows
        }

    def near_candidates(
        self, simhashes: Sequence[int], contents: Sequence[bytes] = ()
    ) -> list[NearCandidate]:
        """Stored pages sharing a SimHash band with any of ``simhashes``, plus the page with
        the smallest URL digest for each content hash in ``contents`` (one statement)."""
        with _translate(self._database_url):
            return read_candidates(self._conn, simhashes, contents)

    def recent_contents(
        self, digests: Sequence[bytes], window: int, fingerprint_version: int
    ) -> dict[bytes, list[tuple[int, bytes]]]:
        """The content hashes of each page's last ``window`` versions, newest first.

        One statement over the ``(url_digest, version_no)`` index; only versions made by
        ``fingerprint_version`` rules (others' hashes are not comparable). Used for flip-flop
        detection (:func:`changewatch.store.history.recent_contents`).
        """
        with _translate(self._database_url):
            return recent_contents(self._conn, digests, window, fingerprint_version)

    def write(
        self,
        now: datetime,
        new: Sequence[NewPage] = (),
        touches: Sequence[Touch] = (),
        changes: Sequence[Change] = (),
    ) -> None:
        """Apply one batch of decisions; :class:`WriteConflict` if any page moved meanwhile."""
        with _translate(self._database_url):
            if new:
                self._insert_new(now, new)
            if touches:
                self._touch(now, touches)
            if changes:
                self._change(now, changes)

    def _insert_new(self, now: datetime, pages: Sequence[NewPage]) -> None:
        # Digest order, like the locks taken by lookup(), so racing inserts cannot deadlock.
        pages = sorted(pages, key=lambda p: p.url_digest)
        insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        stmt = (
            insert(page_snapshots)
            .on_conflict_do_nothing(index_elements=[_SNAP.url_digest])
            .returning(_SNAP.url_digest)
        )
        rows = [
            {
                "url_digest": p.url_digest,
                "host": p.host,
                "url": p.url,
                "canon_version": p.canon_version,
                "fingerprint_version": p.fp.version,
                "raw_sha256": p.fp.raw_sha256,
                "content_sha256": p.fp.content_sha256,
                "simhash": p.fp.simhash,
                "text_length": p.fp.text_length,
                "first_seen": now,
                "last_seen": now,
                "last_changed": now,
                "version_count": 1,
                "fetch_count": 1,
                "etag": p.etag,
                "last_modified": p.last_modified,
                "change_count": 0,
                "change_rate": DEFAULT_PRIOR_RATE_PER_DAY,
                "due_at": now + timedelta(days=due_in_days(DEFAULT_PRIOR_RATE_PER_DAY)),
                "rate_band": rate_band(DEFAULT_PRIOR_RATE_PER_DAY),
            }
            for p in pages
        ]
        inserted = self._conn.execute(stmt, rows).scalars().all()
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
            **(extra or {}),
        )
    )


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
    }
    if fp is not None:
        params |= {
            "b_content": fp.content_sha256,
            "b_simhash": fp.simhash,
            "b_length": fp.text_length,
            "b_fpv": fp.version,
        }
    return params


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


class SnapshotStore:
    """The snapshot store over one SQLAlchemy engine (SQLite or Postgres)."""

    def __init__(self, engine: Engine, database_url: str) -> None:
        self.engine = engine
        self.database_url = database_url
        self.dialect = engine.dialect.name

    @contextlib.contextmanager
    def transaction(self) -> Iterator[StoreTransaction]:
        """A transaction that commits on success and rolls back on any exception."""
        with _translate(self.database_url), self.engine.begin() as conn:
            yield StoreTransaction(conn, self.dialect, self.database_url)

    def touch_unchanged(
        self,
        now: datetime,
        digest: bytes,
        raw_sha256: bytes,
        fingerprint_version: int,
        etag: str | None = None,
        last_modified: str | None = None,
    ) -> RawHit | None:
        """The fast path for one page, in one autocommitted statement (one round trip).

        Counts the fetch only if the stored raw hash and fingerprint version still equal the
        page's, and returns what the decision needs; ``None``, having written nothing, if not.
        """
        params = {
            "digest": digest,
            "raw": raw_sha256,
            "fpv": fingerprint_version,
            "now": now,
            "etag": etag,
            "lm": last_modified,
        }
        with _translate(self.database_url), self.engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            row = conn.execute(_FAST_TOUCH, params).first()
        return None if row is None else RawHit(bytes(row[0]), row[1], row[2])

    def simhash_of(self, digest: bytes) -> int | None:
        """The stored SimHash of one page, or ``None`` if it was never stored."""
        stmt = sa.select(_SNAP.simhash).where(_SNAP.url_digest == digest)
        with _translate(self.database_url), self.engine.connect() as conn:
            value: int | None = conn.execute(stmt).scalar()
        return value

    def near_duplicates(
        self,
        simhash: int,
        max_distance: int,
        exclude_digest: bytes | None = None,
        limit: int = DEFAULT_NEAR_LIMIT,
    ) -> list[NearDuplicate]:
        """Stored pages within ``max_distance`` (0..3) of ``simhash``, nearest first.

        One statement on a fresh connection. ``ValueError`` past distance 3, where the band
        index no longer finds every match (see :mod:`changewatch.store.near`).
        """
        check_simhash(simhash)
        check_near_distance(max_distance)
        with _translate(self.database_url), self.engine.connect() as conn:
            candidates = read_candidates(conn, [simhash])
        return nearest(simhash, candidates, max_distance, exclude_digest, limit)

    def history(self, digest: bytes) -> list[Version]:
        """Every version of a page, oldest first; the current one ends at the last fetch."""
        stmt = (
            sa.select(
                page_versions, _SNAP.last_seen.label("snapshot_last_seen"), _SNAP.version_count
            )
            .join(page_snapshots, _SNAP.url_digest == _VER.url_digest)
            .where(_VER.url_digest == digest)
            .order_by(_VER.version_no)
        )
        with _translate(self.database_url), self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        return [
            Version(
                version=r.version_no,
                kind=r.kind,
                distance=r.distance,
                content_sha256=bytes(r.content_sha256),
                raw_sha256=bytes(r.raw_sha256),
                simhash=r.simhash,
                text_length=r.text_length,
                first_seen=r.first_seen,
                last_seen=r.snapshot_last_seen if r.version_no == r.version_count else r.last_seen,
                reverted_to=r.reverted_to,
            )
            for r in rows
        ]

    def canon_versions(self, limit: int | None = None) -> dict[int, int]:
        """Rows per ``canon_version``: over the whole table, or the first ``limit`` rows read.

        The sampled form reads at most ``limit`` rows (no index on canon_version is needed),
        so opening a large store stays cheap; ``stats`` uses the exact one.
        """
        rows: Any = sa.select(_SNAP.canon_version)
        if limit is not None:
            rows = rows.limit(limit)
        sub = rows.subquery()
        stmt = sa.select(sub.c.canon_version, func.count()).group_by(sub.c.canon_version)
        with _translate(self.database_url), self.engine.connect() as conn:
            return {int(v): int(n) for v, n in conn.execute(stmt).all()}

    def stats(self) -> dict[str, Any]:
        """Counts across the store, for ``changewatch stats``."""
        with _translate(self.database_url), self.engine.connect() as conn:
            snap = conn.execute(
                sa.select(
                    func.count().label("pages"),
                    func.count(func.distinct(_SNAP.host)).label("hosts"),
                    func.coalesce(func.sum(_SNAP.fetch_count), 0).label("fetches"),
                    func.min(_SNAP.first_seen).label("first_seen"),
                    func.max(_SNAP.last_seen).label("last_seen"),
                )
            ).one()
            kinds: dict[str, int] = dict(
                conn.execute(sa.select(_VER.kind, func.count()).group_by(_VER.kind)).all()
            )
        fetches = int(snap.fetches)
        versions = sum(kinds.values())
        return {
            "pages": snap.pages,
            "hosts": snap.hosts,
            "fetches": fetches,
            "versions": versions,
            "new": kinds.get("new", 0),
            "changed": kinds.get("changed", 0),
            "minor": kinds.get("minor", 0),
            "unchanged": fetches - versions,
            "first_seen": snap.first_seen,
            "last_seen": snap.last_seen,
        }

    def prune(
        self,
        keep_versions: int,
        older_than: timedelta,
        now: datetime,
        *,
        dry_run: bool = False,
        batch_size: int = DEFAULT_PRUNE_BATCH,
    ) -> PruneReport:
        """Delete old version rows, never a page's current or latest ``keep_versions``.

        See :mod:`changewatch.store.prune` (bounded batches; ``version_count`` is kept).
        """
        with _translate(self.database_url):
            return prune_versions(
                self.engine, keep_versions, older_than, now, dry_run=dry_run, batch_size=batch_size
            )

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()
