"""Alembic glue: where the migrations live, upgrading, and checking a schema is current.

Opening a store only checks that the schema is current, which needs neither Alembic nor the
migration scripts: :data:`HEAD_REVISION` names the newest one (a test checks it against the
scripts) and the database's revision is one ``SELECT``. Alembic is imported when a migration
actually runs — about 0.15 s less to start every command.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SAWarning, SQLAlchemyError

from changewatch.errors import ConfigError, SchemaOutOfDateError
from changewatch.redact import redact_url
from changewatch.store.errors import translate_errors
from changewatch.store.tables import metadata, simhash_band_index_names
from changewatch.store.views import HISTORY_VIEW, VIEW_NAMES

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = [
    "HEAD_REVISION",
    "alembic_config",
    "current_revision",
    "database_revision",
    "ensure_current",
    "exclusive_upgrade",
    "head_revision",
    "migrations_path",
    "skip_band_index_reflection_warnings",
    "upgrade",
]


#: The newest migration in ``migrations/versions`` (tests/integration/test_migrations.py
#: checks it is Alembic's head): bump it with every new migration.
HEAD_REVISION = "0014"


def migrations_path() -> Path:
    """The Alembic script directory: packaged in a wheel, or ``migrations/`` of a checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_migrations", package.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("changewatch's migrations directory is missing from this install")


def alembic_config(database_url: str | None = None, connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` for our migrations, on a URL or an open connection."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_path()))
    if database_url is not None:
        # configparser interpolates "%": escape it so passwords with % survive.
        config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest migration this code ships."""
    return HEAD_REVISION


def current_revision(connection: Connection) -> str | None:
    """The revision a database is at, or ``None`` for an empty one."""
    if not sa.inspect(connection).has_table("alembic_version"):
        return None
    versions = connection.execute(sa.text("SELECT version_num FROM alembic_version")).all()
    if len(versions) > 1:
        raise ConfigError(f"the database has {len(versions)} Alembic heads; expected one")
    return str(versions[0][0]) if versions else None


def database_revision(engine: Engine) -> str | None:
    """``current_revision`` on a fresh connection; driver errors become ``StoreError``."""
    with translate_errors(_url_of(engine)), engine.connect() as conn:
        return current_revision(conn)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the migrations up to ``revision`` on ``engine``, in one transaction, one upgrader
    at a time.

    SQLite: under ``BEGIN EXCLUSIVE`` (the driver would otherwise commit each DDL statement
    by itself), so a process killed mid-way leaves the schema as it was, and other processes
    wait (the busy timeout) and then find it current; a store an older release left
    half-created is cleared first (:func:`_clear_half_created`). Postgres: the transaction
    first takes an advisory lock, so concurrent upgraders run one after another.
    Driver errors become ``StoreError``; a revision Alembic does not know, ``ConfigError``.
    """
    from alembic import command
    from alembic.util import CommandError

    url = _url_of(engine)
    with translate_errors(url), exclusive_upgrade(engine) as conn:
        try:
            command.upgrade(alembic_config(connection=conn), revision)
        except CommandError as exc:
            raise ConfigError(f"cannot upgrade to revision {revision!r}: {exc}") from exc


#: Key of the Postgres advisory lock that serialises upgraders (any fixed 64-bit number).
UPGRADE_LOCK_KEY = 0x6368616E67657761  # "changewa"


@contextlib.contextmanager
def exclusive_upgrade(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that no other upgrader can run beside (and, on a
    SQLite store without a revision, a half-created schema cleared); committed on success,
    rolled back on any exception. :func:`upgrade` and Alembic's own command line
    (``alembic upgrade head``, ``migrations/env.py``) both run the migrations in it."""
    with _exclusive(engine) as conn:
        if engine.dialect.name == "sqlite" and current_revision(conn) is None:
            _clear_half_created(conn, _url_of(engine))
        yield conn


@contextlib.contextmanager
def _exclusive(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that no other upgrader can run beside; committed on
    success, rolled back on any exception."""
    if engine.dialect.name != "sqlite":
        with engine.begin() as conn:
            if engine.dialect.name == "postgresql":
                conn.execute(
                    sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": UPGRADE_LOCK_KEY}
                )
            yield conn
        return
    with engine.connect() as conn:
        # The driver's own transaction handling off: the explicit BEGIN EXCLUSIVE covers DDL.
        raw = conn.execution_options(isolation_level="AUTOCOMMIT")
        raw.exec_driver_sql("BEGIN EXCLUSIVE")
        try:
            yield raw
        except BaseException:
            # SQLite may have rolled back already (a full disk, say): keep the first error.
            with contextlib.suppress(SQLAlchemyError):
                raw.exec_driver_sql("ROLLBACK")
            raise
        raw.exec_driver_sql("COMMIT")


def _clear_half_created(conn: Connection, url: str) -> None:
    """Drop the changewatch objects of a SQLite database that has no revision, if none holds
    a row.

    Releases before the atomic first open committed each DDL statement of the schema's
    creation by itself: a process killed mid-way left some tables and no revision, which
    every later open refused (on Postgres the upgrade was always one transaction). Such a
    store never held data, so it is created again. Tables of ours that hold rows without a
    revision were not made by these migrations: refused.
    """
    names = {*metadata.tables, *VIEW_NAMES, HISTORY_VIEW, "alembic_version"}
    inspector = sa.inspect(conn)
    tables = sorted(set(inspector.get_table_names()) & names)
    views = sorted(set(inspector.get_view_names()) & names)
    if not tables and not views:
        return
    quote = conn.dialect.identifier_preparer.quote
    filled = [
        t for t in tables if conn.execute(sa.text(f"SELECT 1 FROM {quote(t)} LIMIT 1")).first()
    ]
    if filled:
        raise ConfigError(
            f"database {redact_url(url)} has changewatch tables with rows ({', '.join(filled)}) "
            "but no schema revision (alembic_version): it was not made by changewatch's "
            "migrations. Stamp it with `alembic stamp` if its schema is known, or use another "
            "database"
        )
    for view in views:
        conn.execute(sa.text(f"DROP VIEW {quote(view)}"))
    # Referencing tables first (metadata knows the order); any other name after them.
    ordered = [t.name for t in reversed(metadata.sorted_tables) if t.name in tables]
    for table in [*ordered, *(t for t in tables if t not in ordered)]:
        conn.execute(sa.text(f"DROP TABLE {quote(table)}"))


def _url_of(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def ensure_current(engine: Engine, *, auto_upgrade: bool) -> None:
    """Upgrade (``auto_upgrade``) or refuse a database whose schema is not at head."""
    expected = head_revision()
    with engine.connect() as conn:
        current = current_revision(conn)
    if current == expected:
        return
    if auto_upgrade:
        upgrade(engine)
        return
    raise SchemaOutOfDateError(current, expected)


@contextlib.contextmanager
def skip_band_index_reflection_warnings() -> Iterator[None]:
    """Silence exactly the two warnings a schema comparison gives for the SimHash band indexes.

    SQLAlchemy cannot reflect expression indexes on SQLite ("Skipped unsupported reflection of
    expression-based index …", an ``SAWarning``), and Alembic's autogenerate then skips the
    matching metadata index ("autogenerate skipping metadata-specified expression-based
    index …"). Both are expected for our band indexes and only for them: any other index
    still warns. On Postgres the expression indexes are reflected and compared, so drift
    there is still detected. Used by ``migrations/env.py`` (so ``alembic check`` passes under
    ``-W error``) and by the migration test's direct ``compare_metadata`` call.
    """
    names = "|".join(re.escape(name) for name in simhash_band_index_names())
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message=rf"Skipped unsupported reflection of expression-based index ({names})$",
            category=SAWarning,
        )
        warnings.filterwarnings(
            "ignore",
            message=rf"autogenerate skipping metadata-specified expression-based index '({names})'",
            category=UserWarning,
        )
        yield
