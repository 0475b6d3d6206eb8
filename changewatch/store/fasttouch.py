"""The unchanged re-fetch of one page on the driver's own cursor: the hot path of a crawl.

``should_parse`` of a page with the stored bytes is one autocommitted ``UPDATE … RETURNING``
(:data:`~changewatch.store.writes.FAST_TOUCH`). Run through SQLAlchemy it costs more on the
client than the round trip itself: an execution context per call, and on Postgres psycopg
re-parsing the statement's placeholders every time (it caches that only for statements of
under 4,096 characters; the change-rate arithmetic makes this one 5,000). So the statement
is compiled once per engine into the driver's own SQL with numbered placeholders — ``$1 …``
for psycopg's ``RawCursor``, which needs no placeholder conversion and is prepared on the
server (``prepare=True``), ``?1 …`` for sqlite3 — one per argument and per distinct constant
(15 parameters for the statement's 84 placeholders), with the constants and the bind
processors (UTC timestamps, SQLite's datetime text) resolved up front.

It runs on connections of the touch's own, each autocommitted for good (no pool checkout,
no reset-on-return rollback, no autocommit toggling per call): taken from a list of idle
ones and put back after the statement, so there are as many as touches have run at once,
at most the engine's pool size (past that a touch borrows a pooled connection for the one
statement). They are made by the engine's pool, so its ``connect`` listeners have run
(SQLite's WAL and ``synchronous`` pragmas, its busy timeout), then detached from it; they
are closed with the store, and after a fork the child leaves its parent's alone and makes
its own. SQLite keeps one cursor on each, the statement cached by the driver. A SQLite
database in memory (one connection that every thread shares) always borrows the pooled one.

Driver errors are raised as SQLAlchemy's ``DBAPIError`` (so
:func:`~changewatch.store.errors.translate_errors` treats them as any other: a locked
SQLite database is a retryable ``StoreError``). A connection the dialect finds disconnected
is closed, with every idle one and the pool's (a server restart or an administrator's kill
ends them all), so the next touch connects afresh. An engine with
``before_cursor_execute``/``after_cursor_execute`` listeners (SQL logging, tracing) or
``echo`` keeps the SQLAlchemy path, so they still see every statement.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from changewatch.store.memory import is_memory_url
from changewatch.store.tables import to_unsigned64
from changewatch.store.writes import FAST_TOUCH
from changewatch.values import RawHit

__all__ = ["FastTouch"]

# The binds the caller gives; every other bind of FAST_TOUCH is a constant of the statement.
_ARGUMENTS = ("digest", "raw", "fpv", "now", "etag", "lm")
_NAMED = re.compile(r"%\((\w+)\)s")
_QMARK = re.compile(r"\?")


class FastTouch:
    """FAST_TOUCH compiled once for one engine, run on the driver's cursor."""

    def __init__(self, engine: Engine) -> None:
        dialect = engine.dialect
        self._engine = engine
        self._postgres = dialect.name == "postgresql"
        compiled = FAST_TOUCH.compile(dialect=dialect)
        self.sql, self._template, self._processors, self._arg_slots = _numbered(
            compiled, dialect, postgres=self._postgres
        )
        self._error = engine.dialect.loaded_dbapi.Error
        self._raw_cursor: Any = None
        if self._postgres:
            import psycopg  # the engine's driver, loaded with it already

            # RawCursor ($n placeholders, no conversion) is psycopg 3.2's; before it, none.
            self._raw_cursor = getattr(psycopg, "RawCursor", None)
        self._available = self._raw_cursor is not None or not self._postgres
        # Connections of the touch's own (see the module docstring): all, and the idle ones.
        self._own_connections = self._postgres or not is_memory_url(engine.url)
        size = getattr(engine.pool, "size", None)  # QueuePool's; other pools: one
        self._max_owned = max(1, size()) if callable(size) else 1
        self._owned: list[Any] = []  # pool fairies, detached
        self._idle: list[tuple[Any, Any]] = []
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def usable(self) -> bool:
        """Whether the driver path may run: no statement listeners and no ``echo`` on the
        engine (checked on every call: listeners can be added at any time), and a psycopg
        with ``RawCursor``."""
        engine, dispatch = self._engine, self._engine.dispatch
        if engine.echo or dispatch.before_cursor_execute or dispatch.after_cursor_execute:
            return False
        return self._available

    def params(
        self,
        digest: bytes,
        raw: bytes,
        fpv: int,
        now: datetime,
        etag: str | None,
        lm: str | None,
    ) -> list[Any]:
        """The statement's positional parameters, processed as SQLAlchemy would."""
        out = list(self._template)
        slots, processors = self._arg_slots, self._processors
        for i, value in enumerate((digest, raw, fpv, now, etag, lm)):
            process = processors[i]
            out[slots[i]] = value if process is None or value is None else process(value)
        return out

    def run(self, params: list[Any]) -> RawHit | None:
        """Run the touch autocommitted on a connection of its own (or a pooled one); the
        stored ``(content_sha256, simhash, version_count)`` if the row matched, else
        ``None``."""
        rows = self._run(self.sql, params)
        return self._hit(rows[0] if rows else None)

    def read(self, sql: str, params: list[Any]) -> list[Any]:
        """Every row of one read statement in the driver's own SQL (``$1 …`` on Postgres,
        ``?1 …`` on SQLite) and parameters, run autocommitted on a connection of the touch's
        own as the touch is (prepared on Postgres): no pool checkout, execution context or
        result metadata per call — most of a small query's client time (near-duplicate
        search: :func:`~changewatch.store.near.read_nearest`)."""
        return self._run(sql, params)

    def _run(self, sql: str, params: list[Any]) -> list[Any]:
        if os.getpid() != self._pid:  # a forked child: the parent's connections are its own
            self._pid, self._idle, self._owned = os.getpid(), [], []
        try:
            fairy, cursor = self._idle.pop()
        except IndexError:
            opened = self._open()
            if opened is None:
                return self._run_pooled(sql, params)
            fairy, cursor = opened
        own = fairy, cursor
        try:
            rows = self._execute_own(cursor, sql, params)
        except self._error as exc:
            gone = self._engine.dialect.is_disconnect(exc, fairy.dbapi_connection, None)
            if gone:
                self._disconnected(fairy)
            else:
                self._idle.append(own)
            raise self._wrap(exc, sql, params, gone) from exc
        self._idle.append(own)
        return rows

    def close(self) -> None:
        """Close the touch's own connections (the store's pool is the engine's to close)."""
        owned, self._owned, self._idle = self._owned, [], []
        if self._pid != os.getpid():
            return  # a forked child's inherited connections are its parent's to close
        for fairy in owned:
            with contextlib.suppress(self._error):  # already broken: nothing to release
                fairy.close()

    def _open(self) -> tuple[Any, Any] | None:
        """A new connection of the touch's own, or ``None`` (use a pooled one) for an
        in-memory SQLite database or past the pool's size."""
        with self._lock:
            if not self._own_connections or len(self._owned) >= self._max_owned:
                return None
            fairy = self._engine.raw_connection()
            self._owned.append(fairy)
        try:
            driver: Any = fairy.driver_connection
            fairy.detach()  # closing it now closes the driver connection
            if self._postgres:
                driver.autocommit = True
                cursor = self._raw_cursor(driver)
            else:
                driver.isolation_level = None  # sqlite3: autocommit
                cursor = driver.cursor()
        except BaseException:
            self._discard(fairy)
            raise
        return fairy, cursor

    def _disconnected(self, fairy: Any) -> None:
        """The server dropped a connection: so it did, likely, every other one (a restart,
        an administrator's kill). Drop them all, as SQLAlchemy's pool does on a disconnect,
        so the next touch connects afresh instead of failing again on the next dead one."""
        self._discard(fairy)
        while self._idle:
            try:
                self._discard(self._idle.pop()[0])
            except IndexError:  # another thread took the last one
                break
        self._engine.dispose()  # the pool's idle connections too (checked-out ones stay)

    def _discard(self, fairy: Any) -> None:
        with self._lock:
            if fairy not in self._owned:
                return  # closed by close() already
            self._owned.remove(fairy)
        with contextlib.suppress(self._error):  # broken already: nothing to release
            fairy.close()

    def _execute_own(self, cursor: Any, sql: str, params: list[Any]) -> list[Any]:
        if self._postgres:
            return cursor.execute(sql, params, prepare=True).fetchall()  # type: ignore[no-any-return]
        return cursor.execute(sql, params).fetchall()  # type: ignore[no-any-return]  # to the end: the commit

    def _run_pooled(self, sql: str, params: list[Any]) -> list[Any]:
        fairy = self._engine.raw_connection()
        try:
            rows = self._execute(fairy.driver_connection, sql, params)
        except self._error as exc:
            gone = self._engine.dialect.is_disconnect(exc, fairy.dbapi_connection, None)
            if gone:
                fairy.invalidate(exc)
            raise self._wrap(exc, sql, params, gone) from exc
        finally:
            fairy.close()
        return rows

    def _wrap(
        self, exc: Exception, sql: str, params: list[Any], gone: bool
    ) -> sa.exc.StatementError:
        """A driver error as SQLAlchemy's ``DBAPIError``, for ``translate_errors``."""
        return sa.exc.DBAPIError.instance(
            sql,
            params,
            exc,
            self._error,
            connection_invalidated=gone,
            dialect=self._engine.dialect,
        )

    @staticmethod
    def _hit(row: Any) -> RawHit | None:
        if row is None:
            return None
        return RawHit(bytes(row[0]), to_unsigned64(row[1]), row[2])

    def _execute(self, driver: Any, sql: str, params: list[Any]) -> list[Any]:
        if self._postgres:
            autocommit = driver.autocommit
            driver.autocommit = True
            try:
                with self._raw_cursor(driver) as cursor:
                    return cursor.execute(sql, params, prepare=True).fetchall()  # type: ignore[no-any-return]
            finally:
                driver.autocommit = autocommit
        level = driver.isolation_level
        driver.isolation_level = None  # sqlite3: autocommit
        try:
            return driver.execute(sql, params).fetchall()  # type: ignore[no-any-return]
        finally:
            driver.isolation_level = level


def _numbered(
    compiled: Any, dialect: Any, *, postgres: bool
) -> tuple[str, list[Any], list[Callable[[Any], Any] | None], list[int]]:
    """The compiled statement in the driver's numbered placeholders: its SQL, the parameter
    template (constants in place, processed), each argument's bind processor and parameter.

    One driver parameter per argument and per distinct constant (84 placeholders, but 6
    arguments and 9 constants), so each is converted and bound once per call. Constants are
    told apart by type and repr (0.0 from -0.0, 1 from 1.0), so what is bound, and the type
    psycopg sends for it, is what each of its places had.
    """
    # Every placeholder of the SQL, in order: the bind it stands for.
    names = _NAMED.findall(str(compiled)) if postgres else list(compiled.positiontup or ())
    slots: dict[tuple[Any, ...], int] = {}
    processors: list[Callable[[Any], Any] | None] = [None] * len(_ARGUMENTS)
    arg_slots = [0] * len(_ARGUMENTS)
    template: list[Any] = []
    order: list[int] = []  # the parameter of each placeholder
    for name in names:
        bind = compiled.binds[name]
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if name in _ARGUMENTS:
            key: tuple[Any, ...] = ("argument", name)
            value = None
        else:
            value = bind.effective_value
            value = process(value) if process is not None else value
            key = ("constant", type(value), repr(value))
        if key not in slots:
            slots[key] = len(template)
            template.append(value)
            if name in _ARGUMENTS:
                processors[_ARGUMENTS.index(name)] = process
                arg_slots[_ARGUMENTS.index(name)] = slots[key]
        order.append(slots[key])
    marks = iter(order)
    prefix, placeholder = ("$", _NAMED) if postgres else ("?", _QMARK)
    sql = placeholder.sub(lambda _m: f"{prefix}{next(marks) + 1}", str(compiled))
    if next(marks, None) is not None or set(_ARGUMENTS) - set(names):
        raise RuntimeError("FAST_TOUCH: placeholders and binds do not match")  # a bug
    return sql, template, processors, arg_slots
