"""The snapshot store over one SQLAlchemy engine (SQLite or Postgres): every query of the
orchestration, as methods (:class:`~changewatch.store.port.StorePort`).

Each method runs its statements (kept in the module of their concern: :mod:`~changewatch.
store.writes`, :mod:`~changewatch.store.near`, :mod:`~changewatch.store.schedule`,
:mod:`~changewatch.store.texts`, :mod:`~changewatch.store.prune`) on a connection of its
own, inside :func:`~changewatch.store.errors.translate_errors`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import func
from sqlalchemy.engine import Engine

from changewatch.decide import (
    DEFAULT_NEAR_LIMIT,
    check_near_distance,
    check_near_limit,
    check_simhash,
)
from changewatch.fingerprint import NoiseRule
from changewatch.fingerprint.templates import TemplateValue
from changewatch.schedule import DuePage
from changewatch.store import noise as noise_sql
from changewatch.store import schedule as schedule_sql
from changewatch.store import templates as templates_sql
from changewatch.store.errors import translate_errors
from changewatch.store.fasttouch import FastTouch
from changewatch.store.near import pg_nearest_numbered, read_nearest
from changewatch.store.prune import DEFAULT_PRUNE_BATCH, prune_versions
from changewatch.store.tables import page_snapshots, page_versions
from changewatch.store.texts import read_texts
from changewatch.store.writes import FAST_TOUCH, StoreTransaction
from changewatch.values import NearDuplicate, PruneReport, RawHit, Version

__all__ = ["SnapshotStore"]

_SNAP = page_snapshots.c
_VER = page_versions.c

#: A write that matches no row: it opens the transaction and takes SQLite's write lock.
_SQLITE_TAKE_WRITE_LOCK = "UPDATE page_snapshots SET fetch_count = fetch_count WHERE 0"


class SnapshotStore:
    """The snapshot store over one SQLAlchemy engine (SQLite or Postgres)."""

    def __init__(self, engine: Engine, database_url: str) -> None:
        self.engine = engine
        self.database_url = database_url
        self.dialect = engine.dialect.name
        self._fast_touch = FastTouch(engine)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[StoreTransaction]:
        """A transaction that commits on success and rolls back on any exception.

        On SQLite it takes the database's one write lock before its first read (a write
        that changes nothing: the driver opens the transaction before it, and SQLite locks
        for writing as the statement starts), so a batch's lookup and writes see one state:
        SQLite runs one writer at a time anyway, and a batch that read first and locked
        later lost its race whenever another batch committed in between (4 workers on
        overlapping pages lost 10 in a row under load). Waiting is bounded by the busy
        timeout. Postgres locks the rows it reads instead (``tx.lookup``).
        """
        with translate_errors(self.database_url), self.engine.begin() as conn:
            if self.dialect == "sqlite":
                conn.exec_driver_sql(_SQLITE_TAKE_WRITE_LOCK)
            yield StoreTransaction(conn, self.dialect, self.database_url)

    @contextlib.contextmanager
    def _autocommit(self) -> Iterator[sa.Connection]:
        """One connection whose single statement commits by itself (one round trip)."""
        with translate_errors(self.database_url), self.engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sa.Connection]:
        with translate_errors(self.database_url), self.engine.connect() as conn:
            yield conn

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
        fast = self._fast_touch
        if fast.usable():  # on the driver's cursor (changewatch.store.fasttouch)
            params = fast.params(digest, raw_sha256, fingerprint_version, now, etag, last_modified)
            with translate_errors(self.database_url):
                return fast.run(params)
        named = {
            "digest": digest,
            "raw": raw_sha256,
            "fpv": fingerprint_version,
            "now": now,
            "etag": etag,
            "lm": last_modified,
        }
        with self._autocommit() as conn:
            row = conn.execute(FAST_TOUCH, named).first()
        return None if row is None else RawHit(bytes(row[0]), row[1], row[2])

    def touch_not_modified(
        self, now: datetime, digest: bytes, etag: str | None, last_modified: str | None
    ) -> RawHit | None:
        """Record an HTTP 304 for a stored page (one statement); ``None`` if never stored."""
        with self._autocommit() as conn:
            return schedule_sql.touch_not_modified(conn, now, digest, etag, last_modified)

    def validators(self, digest: bytes) -> tuple[str | None, str | None] | None:
        """The stored ``(etag, last_modified)`` of a page, ``None`` if it was never stored."""
        with self._reading() as conn:
            return schedule_sql.validators_of(conn, digest)

    def due(
        self, now: datetime, limit: int, host: str | None = None, *, full_scan: bool = False
    ) -> list[DuePage]:
        """The ``limit`` pages most likely changed by ``now`` (:mod:`changewatch.store.schedule`);
        ``full_scan`` orders every row instead (the exact reference, for tests)."""
        with self._reading() as conn:
            if full_scan:
                return schedule_sql.due_full_scan(conn, now, limit, host)
            return schedule_sql.due(conn, now, limit, host)

    def texts(self, contents: Sequence[bytes]) -> dict[bytes, str]:
        """The stored normalised texts of these content hashes (missing ones left out)."""
        with self._reading() as conn:
            return read_texts(conn, contents)

    def simhash_of(self, digest: bytes) -> int | None:
        """The stored SimHash of one page, or ``None`` if it was never stored."""
        stmt = sa.select(_SNAP.simhash).where(_SNAP.url_digest == digest)
        with self._reading() as conn:
            value: int | None = conn.execute(stmt).scalar()
        return value

    def near_duplicates(
        self,
        simhash: int,
        max_distance: int,
        exclude_digest: bytes | None = None,
        limit: int = DEFAULT_NEAR_LIMIT,
    ) -> list[NearDuplicate]:
        """The first ``limit`` stored pages within ``max_distance`` (0..3) of ``simhash``,
        nearest first, ties by URL digest (:func:`~changewatch.store.near.read_nearest`).

        One statement on Postgres, however large the clusters of near-copies. ``ValueError``
        past distance 3, where the band index no longer finds every match (see
        :mod:`changewatch.store.near`), and for a negative ``limit``.
        """
        check_simhash(simhash)
        check_near_distance(max_distance)
        check_near_limit(limit)
        wanted = limit + (exclude_digest is not None)  # the page itself may be among them
        if self.dialect == "postgresql" and wanted and self._fast_touch.usable():
            # One statement on the driver's own cursor, as the touch (a pool checkout, an
            # execution context and result metadata cost 0.2 ms a call, more than the
            # client's whole share of the rest).
            with translate_errors(self.database_url):
                rows = self._fast_touch.read(*pg_nearest_numbered(simhash, max_distance, wanted))
            found = [NearDuplicate(d, u, distance) for d, u, distance in rows]
        else:
            # Autocommitted on Postgres (no BEGIN/ROLLBACK round trips); several statements
            # on SQLite, in one read transaction.
            reading = self._autocommit if self.dialect == "postgresql" else self._reading
            with reading() as conn:
                found = read_nearest(conn, simhash, max_distance, wanted)
        return [n for n in found if n.url_digest != exclude_digest][:limit]

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
        with self._reading() as conn:
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
        with self._reading() as conn:
            return {int(v): int(n) for v, n in conn.execute(stmt).all()}

    def stats(self) -> dict[str, Any]:
        """Counts across the store, for ``changewatch stats``."""
        with self._reading() as conn:
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
        with translate_errors(self.database_url):
            return prune_versions(
                self.engine, keep_versions, older_than, now, dry_run=dry_run, batch_size=batch_size
            )

    def learned_noise(self, host: str, version: int) -> frozenset[bytes]:
        """The block keys and shapes learned as noise for ``host`` (:mod:`~changewatch.store.
        noise`)."""
        with self._reading() as conn:
            return noise_sql.learned_noise(conn, host, version)

    def record_noise(
        self,
        host: str,
        version: int,
        rules: Sequence[NoiseRule],
        now: datetime,
        *,
        min_observations: int,
        min_share: float,
    ) -> None:
        """Add ``rules``' counts to the host's, in one transaction."""
        with translate_errors(self.database_url), self.engine.begin() as conn:
            noise_sql.record_noise(
                conn,
                host,
                version,
                rules,
                now,
                min_observations=min_observations,
                min_share=min_share,
            )

    def noise_rules(
        self, host: str | None = None, *, learned_only: bool = False
    ) -> list[dict[str, Any]]:
        """The rows of ``host_noise`` (of one host), learned first."""
        with self._reading() as conn:
            return noise_sql.noise_rules(conn, host, learned_only=learned_only)

    def reset_noise(self, host: str) -> int:
        """Forget every noise rule of ``host``; the number forgotten."""
        with translate_errors(self.database_url), self.engine.begin() as conn:
            return noise_sql.reset_noise(conn, host)

    def learned_templates(self, host: str, version: int) -> frozenset[bytes]:
        """The template blocks learned for ``host`` (:mod:`~changewatch.store.templates`)."""
        with self._reading() as conn:
            return templates_sql.learned_templates(conn, host, version)

    def record_templates(
        self,
        host: str,
        version: int,
        pages: Sequence[tuple[bytes, Sequence[TemplateValue]]],
        now: datetime,
        *,
        min_pages: int,
        min_share: float,
    ) -> bool:
        """Count what ``pages`` show of the host's template, in one transaction (on SQLite
        holding the write lock from its first read, as :meth:`transaction` does)."""
        with translate_errors(self.database_url), self.engine.begin() as conn:
            if self.dialect == "sqlite":
                conn.exec_driver_sql(_SQLITE_TAKE_WRITE_LOCK)
            return templates_sql.record_templates(
                conn, host, version, pages, now, min_pages=min_pages, min_share=min_share
            )

    def template_rules(
        self, host: str | None = None, *, learned_only: bool = False
    ) -> list[dict[str, Any]]:
        """The rows of ``host_templates`` (of one host), learned first."""
        with self._reading() as conn:
            return templates_sql.template_rules(conn, host, learned_only=learned_only)

    def reset_templates(self, host: str) -> int:
        """Forget every template rule and sampled page of ``host``; the rules forgotten."""
        with translate_errors(self.database_url), self.engine.begin() as conn:
            return templates_sql.reset_templates(conn, host)

    def close(self) -> None:
        """Close every connection: the fast touch's own and the pooled ones."""
        try:
            self._fast_touch.close()
        finally:
            self.engine.dispose()
