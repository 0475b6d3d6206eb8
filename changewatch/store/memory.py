"""An in-memory SQLite store shared by every thread of the process.

SQLite gives each connection to ``:memory:`` a database of its own, and SQLAlchemy's default
pool for it gives each thread a connection of its own: a second thread saw an empty database
("no such table: page_snapshots"). Here the engine holds exactly one connection, opened with
``check_same_thread=False``, and lends it to one thread at a time (:class:`SharedMemoryPool`):
calls nested in one thread share it, as before; another thread waits until the outermost of
them is done, and past the busy timeout gets a :class:`~changewatch.errors.StoreError` saying
so. A second connection would be a second, empty database, so the engine refuses to open one
(:class:`OneConnection`).
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import pool
from sqlalchemy.engine import URL
from sqlalchemy.pool import ConnectionPoolEntry

from changewatch.errors import StoreError

__all__ = ["OneConnection", "SharedMemoryPool", "is_memory_url", "memory_engine_arguments"]


def is_memory_url(url: URL) -> bool:
    """Whether a ``sqlite:`` URL names an in-memory database (``sqlite://``,
    ``sqlite:///:memory:``, ``file::memory:`` or ``mode=memory``)."""
    database = url.database or ""
    return (
        database in ("", ":memory:")
        or ":memory:" in database
        or (url.query.get("mode") == "memory")
    )


class SharedMemoryPool(pool.SingletonThreadPool):
    """One connection for every thread, lent to one thread at a time.

    :class:`~sqlalchemy.pool.SingletonThreadPool` already hands a thread's nested checkouts
    the connection it holds; here every thread's outermost checkout takes the one shared
    connection under a lock (waiting at most ``timeout`` seconds) and its check-in releases it.
    """

    def __init__(self, creator: Any, timeout: float = 30.0, **kw: Any) -> None:
        kw.pop("pool_size", None)
        super().__init__(creator, pool_size=1, **kw)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._shared: ConnectionPoolEntry | None = None

    def recreate(self) -> SharedMemoryPool:
        return self.__class__(
            self._creator,
            timeout=self._timeout,
            recycle=self._recycle,
            echo=self.echo,
            pre_ping=self._pre_ping,
            logging_name=self._orig_logging_name,
            reset_on_return=self._reset_on_return,
            _dispatch=self.dispatch,
            dialect=self._dialect,
        )

    def _do_get(self) -> ConnectionPoolEntry:
        if not self._lock.acquire(timeout=self._timeout):
            raise StoreError(
                "the in-memory SQLite store is in use by another thread and was not free "
                f"within {self._timeout:g} s: one thread at a time uses it",
                retryable=True,
            )
        try:
            if self._shared is None:
                self._shared = self._create_connection()
                self._all_conns.add(self._shared)
        except BaseException:
            self._lock.release()
            raise
        return self._shared

    def _do_return_conn(self, record: ConnectionPoolEntry) -> None:
        super()._do_return_conn(record)
        self._lock.release()


def memory_engine_arguments(busy_timeout_s: float) -> dict[str, Any]:
    """``create_engine`` keywords for an in-memory SQLite store shared by threads."""
    return {
        "poolclass": SharedMemoryPool,
        "pool_timeout": busy_timeout_s,
        "connect_args": {"check_same_thread": False, "timeout": busy_timeout_s},
    }


class OneConnection:
    """A ``connect`` listener that refuses a second connection (a second, empty database)."""

    def __init__(self) -> None:
        self.opened = 0

    def __call__(self, _dbapi_connection: Any, _record: Any) -> None:
        self.opened += 1
        if self.opened > 1:
            raise StoreError(
                "the in-memory SQLite store lost its connection, and with it every page it "
                "held; a new connection would be a new, empty database: open the store again",
                retryable=False,
            )
