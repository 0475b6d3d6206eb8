"""The snapshot store's side of sitemap reconciliation: exact lookups, host scans, run records.

Every statement the reconciliation job (:mod:`changewatch.reconcile.job`) runs is here:

* :meth:`ReconcileStore.lookup` reads, for a batch of URL digests, what the store knows of
  each page — exactly, from ``page_snapshots`` (never from a seen-set, whose Bloom false
  positives are what the job exists to catch) — with the ``last_seen`` of the version before
  the current one, from ``page_versions``, for the lastmod trust figure;
* :meth:`ReconcileStore.host_digests` streams the URL digests of one host's stored pages, for
  the *vanished* diff, without loading them all; :meth:`~ReconcileStore.pages`
  then reads the URL and ``last_seen`` of the vanished ones only;
* :meth:`ReconcileStore.start_run`, :meth:`~ReconcileStore.add_findings` and
  :meth:`~ReconcileStore.finish_run` record a run in ``reconcile_runs`` / ``reconcile_findings``;
* :meth:`ReconcileStore.site_locks` keeps two runs of the same site from overlapping: a
  Postgres session advisory lock (``pg_try_advisory_lock``), or on SQLite an ``flock`` on a
  lock file beside the database file. Both are released by the operating system or the
  server if the process dies, so a crashed run never leaves a stale lock behind.

Driver exceptions become :class:`~changewatch.errors.StoreError` (via the store's
translator), as everywhere in the store.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import sqlalchemy as sa
from sqlalchemy import bindparam
from sqlalchemy.engine import Connection, make_url

from changewatch.reconcile.index import HostIndex, IndexBuilder, RowFormatError
from changewatch.reconcile.values import Finding, StoredPage
from changewatch.store.errors import translate_errors
from changewatch.store.store import SnapshotStore
from changewatch.store.tables import (
    page_snapshots,
    page_versions,
    reconcile_findings,
    reconcile_runs,
)

__all__ = [
    "DEFAULT_LOOKUP_BATCH",
    "DEFAULT_SCAN_BATCH",
    "Finding",
    "ReconcileStore",
    "StoredPage",
    "lock_key",
]

#: Digests looked up per SELECT.
DEFAULT_LOOKUP_BATCH = 1_000
#: Rows fetched per round trip while streaming a host's pages.
DEFAULT_SCAN_BATCH = 10_000

_SNAP = page_snapshots.c
_PREV = page_versions.alias("prev")


def _lookup_columns(snap: Any, previous: Any) -> tuple[Any, ...]:
    return (
        snap.c.url_digest,
        snap.c.host,
        snap.c.last_seen,
        snap.c.last_changed,
        snap.c.version_count,
        previous.label("previous_last_seen"),
    )


def _pg_lookup() -> sa.Select[Any]:
    """Postgres: one index probe per digest, whatever the planner thinks of the table size.

    Each digest (cut from one ``bytea`` parameter) feeds a ``LATERAL … LIMIT 1`` subquery,
    which the planner cannot flatten into a hash join over the whole table (a plain
    ``= ANY(…)`` or a join with ``unnest`` was planned as a sequential scan on a 100,000-row
    store: 50-100 ms per batch against 4 ms). The previous version is only looked up for
    pages with more than one version.
    """
    # The digests travel as one bytea of n × 16 bytes, cut up server-side: one parameter to
    # send instead of an array of 1,000 escaped elements.
    blob = bindparam("blob", type_=sa.LargeBinary)
    _16 = sa.literal_column("16", sa.Integer)  # integer division, digests of 16 bytes
    wanted = (
        sa.func.generate_series(0, sa.func.length(blob, type_=sa.Integer).op("/")(_16) - 1)
        .table_valued("i")
        .render_derived()
    )
    snap = (
        sa.select(page_snapshots)
        .where(_SNAP.url_digest == sa.func.substr(blob, wanted.c.i * _16 + 1, _16))
        .limit(1)
        .lateral("snap")
    )
    prev = (
        sa.select(page_versions.c.last_seen)
        .where(
            snap.c.version_count > 1,
            page_versions.c.url_digest == snap.c.url_digest,
            page_versions.c.version_no == snap.c.version_count - 1,
        )
        .limit(1)
        .lateral("prev")
    )
    return sa.select(*_lookup_columns(snap, prev.c.last_seen)).select_from(
        wanted.join(snap, sa.true()).outerjoin(prev, sa.true())
    )


def _sqlite_lookup() -> sa.Select[Any]:
    """SQLite: ``IN (…)`` on the primary key, the previous version by a left join."""
    joined = page_snapshots.outerjoin(
        _PREV,
        sa.and_(
            _PREV.c.url_digest == _SNAP.url_digest,
            _PREV.c.version_no == _SNAP.version_count - 1,
        ),
    )
    return (
        sa.select(*_lookup_columns(page_snapshots, _PREV.c.last_seen))
        .select_from(joined)
        .where(_SNAP.url_digest.in_(bindparam("digests", expanding=True)))
    )


_PG_LOOKUP = _pg_lookup()
_PG_FINDINGS_COPY = (
    "COPY reconcile_findings (run_id, host, url, url_digest, kind, sitemap_lastmod, "
    "stored_last_seen, sitemap) FROM STDIN"
)
#: The pages of one host for :meth:`ReconcileStore.host_index`, one packed 40-byte ``bytea`` a
#: row (:data:`~changewatch.reconcile.index.ROW_BYTES`): one bytes object per row to the client
#: instead of four values. A page with one version sends ``-infinity`` as its previous
#: ``last_seen``; the previous version is probed only for pages with more than one (a
#: ``CASE`` around a subquery: a ``LATERAL`` join cost 60% more server time per row even
#: when it never ran).
_PG_HOST_ROWS = """SELECT s.url_digest
    || timestamptz_send(s.last_seen)
    || timestamptz_send(s.last_changed)
    || timestamptz_send(COALESCE(
      CASE WHEN s.version_count > 1 THEN (
        SELECT v.last_seen FROM page_versions v
        WHERE v.url_digest = s.url_digest AND v.version_no = s.version_count - 1
      ) END,
      '-infinity'::timestamptz))
  FROM page_snapshots s
  WHERE s.host = %s"""
_SQLITE_LOOKUP = _sqlite_lookup()


def lock_key(site: str) -> int:
    """The signed 64-bit advisory-lock key of a site (a blake2b-64 of its name).

    >>> lock_key("example.com") == lock_key("example.com")
    True
    >>> -(2**63) <= lock_key("example.com") < 2**63
    True
    """
    digest = hashlib.blake2b(f"changewatch.reconcile:{site}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class ReconcileStore:
    """Reconciliation queries over a :class:`~changewatch.store.SnapshotStore`."""

    def __init__(self, store: SnapshotStore) -> None:
        self._store = store
        self._engine = store.engine
        self._url = store.database_url
        self.dialect = store.dialect
        if self.dialect == "postgresql":
            # Compiled once and run as driver SQL: no per-row type processing (psycopg already
            # returns aware datetimes), and the digests go as one binary parameter (%(blob)b).
            # About half the client time per batch of 1,000.
            compiled = _PG_LOOKUP.compile(dialect=self._engine.dialect)
            sql = str(compiled)
            if "%(blob)s" not in sql:  # pragma: no cover - a driver with another paramstyle
                raise RuntimeError("unexpected parameter style in the compiled lookup")
            self._pg_sql = sql.replace("%(blob)s", "%(blob)b")
            self._pg_params = {k: v for k, v in compiled.params.items() if k != "blob"}

    # -- reading -----------------------------------------------------------------------------

    def lookup(self, digests: Sequence[bytes]) -> dict[bytes, StoredPage]:
        """The stored pages among ``digests`` (one SELECT; keep batches near 1,000)."""
        if not digests:
            return {}
        with translate_errors(self._url), self._engine.connect() as conn:
            if self.dialect == "postgresql":
                params = self._pg_params | {"blob": b"".join(digests)}
                rows: Sequence[Any] = conn.exec_driver_sql(self._pg_sql, params).all()
            else:
                rows = conn.execute(_SQLITE_LOOKUP, {"digests": list(digests)}).all()
        return {bytes(r[0]): StoredPage(bytes(r[0]), r[1], r[2], r[3], r[4], r[5]) for r in rows}

    def host_digests(self, host: str, batch: int = DEFAULT_SCAN_BATCH) -> Iterator[list[bytes]]:
        """The URL digests of ``host``'s stored pages, ``batch`` at a time, streamed from one
        query (a server-side cursor on Postgres).

        In no particular order: the caller checks each against a hash table, so sorting a
        million rows (or walking the primary key and the heap in digest order) would be
        work for nothing.
        """
        stmt = sa.select(_SNAP.url_digest).where(_SNAP.host == host)
        with translate_errors(self._url), self._engine.connect() as conn:
            result = conn.execution_options(stream_results=True, yield_per=batch).execute(stmt)
            for part in result.scalars().partitions(batch):
                yield [bytes(digest) for digest in part]

    def host_index(self, host: str, max_rows: int) -> HostIndex | None:
        """Every stored page of ``host`` as a :class:`~changewatch.reconcile.index.HostIndex`,
        streamed from one query (a server-side cursor, packed binary rows); ``None`` where
        batched :meth:`lookup` calls must do instead: on SQLite (its lookups are in-process
        already), for a host of more than ``max_rows`` pages, or if a row has another shape.
        """
        if self.dialect != "postgresql" or max_rows <= 0:
            return None
        builder = IndexBuilder()
        with translate_errors(self._url), self._engine.connect() as conn:
            raw: Any = conn.connection.driver_connection
            try:
                with raw.cursor(name="changewatch_host_index", binary=True) as cursor:
                    cursor.itersize = DEFAULT_SCAN_BATCH
                    cursor.execute(_PG_HOST_ROWS, (host,))
                    while rows := cursor.fetchmany(DEFAULT_SCAN_BATCH):
                        if len(builder) + len(rows) > max_rows:
                            return None  # too big to hold: the cursor is closed unread
                        builder.add([row[0] for row in rows])
            except (RowFormatError, TypeError):  # TypeError: a NULL row
                return None
            finally:
                raw.rollback()
        return builder.finish()

    def pages(self, digests: Sequence[bytes]) -> list[tuple[bytes, str | None, datetime]]:
        """``(url_digest, url, last_seen)`` of these stored pages, in digest order."""
        if not digests:
            return []
        stmt = (
            sa.select(_SNAP.url_digest, _SNAP.url, _SNAP.last_seen)
            .where(_SNAP.url_digest.in_(bindparam("digests", expanding=True)))
            .order_by(_SNAP.url_digest)
        )
        with translate_errors(self._url), self._engine.connect() as conn:
            rows = conn.execute(stmt, {"digests": list(digests)}).all()
        return [(bytes(r[0]), r[1], r[2]) for r in rows]

    # -- recording ---------------------------------------------------------------------------

    def start_run(
        self,
        *,
        now: datetime,
        sites: Sequence[str],
        arguments: str | None,
        runner_host: str | None,
        runner_pid: int | None,
        status: str = "running",
    ) -> int:
        """Insert a ``reconcile_runs`` row and return its id."""
        values = {
            "started_at": now,
            "finished_at": None if status == "running" else now,
            "status": status,
            "sites": "\n".join(sites),
            "arguments": arguments,
            "runner_host": runner_host,
            "runner_pid": runner_pid,
        }
        stmt = sa.insert(reconcile_runs).values(values).returning(reconcile_runs.c.id)
        with translate_errors(self._url), self._engine.begin() as conn:
            return int(conn.execute(stmt).scalar_one())

    def add_findings(self, run_id: int, findings: Sequence[Finding]) -> None:
        """Insert a batch of findings of a run in one transaction (``COPY`` on Postgres: a
        run that finds a million stale pages must not spend its time binding parameters)."""
        if not findings:
            return
        with translate_errors(self._url), self._engine.begin() as conn:
            if self.dialect == "postgresql":
                raw: Any = conn.connection.driver_connection
                with raw.cursor() as cursor, cursor.copy(_PG_FINDINGS_COPY) as copy:
                    for f in findings:
                        copy.write_row(
                            (
                                run_id,
                                f.host,
                                f.url,
                                f.url_digest,
                                f.kind,
                                f.sitemap_lastmod,
                                f.stored_last_seen,
                                f.sitemap,
                            )
                        )
                return
            rows = [
                {
                    "run_id": run_id,
                    "host": f.host,
                    "url": f.url,
                    "url_digest": f.url_digest,
                    "kind": f.kind,
                    "sitemap_lastmod": f.sitemap_lastmod,
                    "stored_last_seen": f.stored_last_seen,
                    "sitemap": f.sitemap,
                }
                for f in findings
            ]
            conn.execute(sa.insert(reconcile_findings), rows)

    def finish_run(
        self, run_id: int, *, now: datetime, status: str, totals: Mapping[str, int], errors: int
    ) -> None:
        """Close a run: its status, end time, totals and error count."""
        values: dict[str, Any] = {"finished_at": now, "status": status, "errors": errors}
        values |= {kind: int(totals.get(kind, 0)) for kind in ("missing", "stale", "vanished")}
        values["fresh"] = int(totals.get("fresh", 0))
        stmt = sa.update(reconcile_runs).where(reconcile_runs.c.id == run_id).values(values)
        with translate_errors(self._url), self._engine.begin() as conn:
            conn.execute(stmt)

    # -- locking -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def site_locks(self, sites: Sequence[str]) -> Iterator[list[str]]:
        """Try to lock every site (without waiting); yield the sites another run holds.

        An empty list means every lock is held by this run until the block ends. If any site
        is busy, no lock is kept and the busy ones are yielded.
        """
        names = sorted(set(sites))
        if self.dialect == "postgresql":
            with translate_errors(self._url), self._engine.connect() as conn:
                busy = _pg_lock(conn, names)
                try:
                    yield busy
                finally:
                    if not busy:
                        _pg_unlock(conn, names)
                    conn.rollback()
        else:
            with _file_locks(self._lock_dir(), names) as busy:
                yield busy

    def _lock_dir(self) -> tuple[Path, str] | None:
        """The directory and file name of the SQLite database, or ``None`` in memory."""
        database = make_url(self._url).database
        if not database or database == ":memory:" or database.startswith("file:"):
            return None
        path = Path(database).resolve()
        return path.parent, path.name


def _pg_lock(conn: Connection, names: Sequence[str]) -> list[str]:
    taken: list[str] = []
    busy: list[str] = []
    for name in names:
        got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": lock_key(name)})
        (taken if got.scalar_one() else busy).append(name)
    if busy:
        _pg_unlock(conn, taken)
    conn.commit()
    return busy


def _pg_unlock(conn: Connection, names: Sequence[str]) -> None:
    for name in names:
        conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": lock_key(name)})
    conn.commit()


@contextlib.contextmanager
def _file_locks(where: tuple[Path, str] | None, names: Sequence[str]) -> Iterator[list[str]]:
    """``flock`` one file per site beside the database: ``<db>.reconcile-<key>.lock``."""
    if where is None:  # an in-memory database: no other process can share it
        yield []
        return
    directory, stem = where
    held: list[IO[bytes]] = []
    busy: list[str] = []
    try:
        for name in names:
            path = directory / f"{stem}.reconcile-{lock_key(name) & 0xFFFFFFFFFFFFFFFF:016x}.lock"
            handle: IO[bytes] = open(path, "a+b")  # noqa: SIM115 - kept open while the lock is held
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                busy.append(name)
                continue
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()} {name}\n".encode())
            handle.flush()
            held.append(handle)
        if busy:
            for other in held:
                other.close()
            held.clear()
        yield busy
    finally:
        for kept in held:
            fcntl.flock(kept.fileno(), fcntl.LOCK_UN)
            kept.close()
