"""The snapshot store adapter: SQLAlchemy schema, migrations and every SQL statement.

``open_store(url)`` builds a :class:`SnapshotStore` on SQLite (the embedded default, whose
schema is created on first use) or Postgres (whose schema must be current: run
``changewatch db upgrade``). The orchestration talks to it through
:class:`~changewatch.store.port.StorePort`; driver errors are translated in
:mod:`changewatch.store.errors` only. One module per concern of SQL: ``tables`` (the schema),
``writes`` (the decision transaction), ``fasttouch`` (its one-statement fast path),
``near``, ``history``, ``schedule``, ``texts``, ``prune``, ``rates``, ``views``,
``partition``, ``reconcile``, ``migrate``, ``memory`` (an in-memory SQLite database shared
by threads).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from changewatch.errors import ConfigError
from changewatch.store.errors import WriteConflict, redact, translate_errors
from changewatch.store.memory import OneConnection, is_memory_url, memory_engine_arguments
from changewatch.store.migrate import ensure_current
from changewatch.store.port import StorePort, TransactionPort
from changewatch.store.store import SnapshotStore
from changewatch.store.writes import StoreTransaction

__all__ = [
    "SnapshotStore",
    "StorePort",
    "StoreTransaction",
    "TransactionPort",
    "WriteConflict",
    "create_engine",
    "open_store",
    "redact",
]

#: Seconds a SQLite writer waits for another writer's lock before failing.
DEFAULT_SQLITE_BUSY_TIMEOUT_S = 30.0


def create_engine(
    database_url: str, *, busy_timeout_s: float = DEFAULT_SQLITE_BUSY_TIMEOUT_S
) -> sa.Engine:
    """An engine for a ``sqlite:`` or ``postgresql+psycopg:`` URL, tuned for the store.

    SQLite waits ``busy_timeout_s`` for another writer's lock; an in-memory SQLite database
    is one connection that every thread shares, one at a time (:mod:`changewatch.store.
    memory`), waiting as long for it.
    """
    try:
        url = make_url(database_url)
    except ArgumentError as exc:
        raise ConfigError(f"database URL {redact(database_url)!r} is malformed") from exc
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    backend = url.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"database URL {redact(database_url)!r}: only sqlite and postgresql are supported"
        )
    kwargs: dict[str, Any] = {}
    in_memory = backend == "sqlite" and is_memory_url(url)
    if in_memory:
        kwargs = memory_engine_arguments(busy_timeout_s)
    elif backend == "sqlite":
        kwargs["connect_args"] = {"timeout": busy_timeout_s}
    else:
        kwargs["pool_size"] = 4
        kwargs["max_overflow"] = 8
    try:
        engine = sa.create_engine(url, **kwargs)
    except (ArgumentError, NoSuchModuleError) as exc:
        raise ConfigError(f"database URL {redact(database_url)!r}: {exc}") from exc
    if backend == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    if in_memory:
        event.listen(engine, "connect", OneConnection())
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """WAL lets readers run beside one writer; foreign keys are off by default in SQLite."""
    cursor = dbapi_connection.cursor()
    if cursor.execute("PRAGMA database_list").fetchone()[2]:  # a file, not :memory:
        _set_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _set_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode=WAL``, waiting out other processes' locks.

    Switching the journal mode needs the database's exclusive lock, and SQLite answers
    "database is locked" at once, without its busy handler, while another connection holds
    a write lock (deadlock avoidance) — as when another process is creating a new store's
    schema. So the switch is tried again until the connection's busy timeout has passed.
    """
    timeout_s = cursor.execute("PRAGMA busy_timeout").fetchone()[0] / 1000
    deadline = time.monotonic() + timeout_s
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def open_store(
    database_url: str,
    *,
    auto_upgrade: bool | None = None,
    busy_timeout_s: float = DEFAULT_SQLITE_BUSY_TIMEOUT_S,
) -> SnapshotStore:
    """Open the store, creating (SQLite) or checking (Postgres) its schema.

    ``auto_upgrade`` defaults to true on SQLite and false on Postgres, where a schema that
    is behind raises :class:`~changewatch.errors.SchemaOutOfDateError`. ``busy_timeout_s``:
    see :func:`create_engine`.
    """
    engine = create_engine(database_url, busy_timeout_s=busy_timeout_s)
    if auto_upgrade is None:
        auto_upgrade = engine.dialect.name == "sqlite"
    try:
        with translate_errors(database_url):
            ensure_current(engine, auto_upgrade=auto_upgrade)
    except BaseException:
        engine.dispose()
        raise
    return SnapshotStore(engine, database_url)
