"""The store's one translation of driver errors: SQLAlchemy and psycopg in, ours out.

Every statement runs inside :func:`translate_errors`; nothing above the store catches a
SQLAlchemy or psycopg exception. A serialisation failure or deadlock becomes
:class:`WriteConflict` (the batch is decided again on fresh data); everything else becomes
:class:`~changewatch.errors.StoreError`, naming the database with its password hidden.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError

from changewatch.errors import StoreError
from changewatch.redact import redact_url

__all__ = ["WriteConflict", "redact", "translate_errors"]

# SQLSTATEs that mean "another transaction got there first": retry on fresh data.
_CONFLICT_SQLSTATES = {"40001", "40P01"}
# SQLSTATE classes a later attempt may get past (PostgreSQL Appendix A): connection
# exception, transaction rollback, insufficient resources, operator intervention (shutdown,
# cancel), system error; and lock_not_available.
_TRANSIENT_CLASSES = {"08", "40", "53", "57", "58"}
_TRANSIENT_SQLSTATES = {"55P03"}


class WriteConflict(Exception):  # noqa: N818 - internal control flow, never escapes the package
    """A conditional write found the page changed by another worker; decide again."""


def redact(database_url: str) -> str:
    """The database URL with its password hidden, for messages and logs."""
    return redact_url(database_url)


@contextlib.contextmanager
def translate_errors(database_url: str) -> Iterator[None]:
    """Turn driver and SQLAlchemy errors into :class:`StoreError` (or a retryable conflict)."""
    try:
        yield
    except DBAPIError as exc:
        sqlstate = getattr(exc.orig, "sqlstate", None)
        if sqlstate in _CONFLICT_SQLSTATES:
            raise WriteConflict(str(sqlstate)) from exc
        detail = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        raise StoreError(
            f"database {redact(database_url)} failed: {detail}", retryable=_transient(exc)
        ) from exc
    except SQLAlchemyError as exc:
        raise StoreError(f"database {redact(database_url)} failed: {exc}") from exc


def _transient(exc: DBAPIError) -> bool:
    """Whether a later attempt of the same statements may succeed."""
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate:
        return sqlstate[:2] in _TRANSIENT_CLASSES or sqlstate in _TRANSIENT_SQLSTATES
    if exc.orig is not None and type(exc.orig).__module__.startswith("sqlite3"):
        # SQLite reports a busy or locked database as OperationalError, and so too a missing
        # table or a malformed file: only the first two pass.
        text = str(exc.orig).lower()
        return "locked" in text or "busy" in text
    # psycopg without a SQLSTATE: transient when the client could not reach or lost the
    # server; not for its own refusals ("number of parameters must be between 0 and 65535").
    if not isinstance(exc, OperationalError | InterfaceError):
        return False
    return bool(exc.connection_invalidated) or "connection" in str(exc.orig).lower()
