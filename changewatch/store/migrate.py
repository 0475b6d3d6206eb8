"""Alembic glue: where the migrations live, upgrading, and checking a schema is current."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import Connection, Engine

from changewatch.errors import ConfigError, SchemaOutOfDateError
from changewatch.store.store import _translate

__all__ = [
    "alembic_config",
    "current_revision",
    "database_revision",
    "ensure_current",
    "head_revision",
    "migrations_path",
    "upgrade",
]


def migrations_path() -> Path:
    """The Alembic script directory: packaged in a wheel, or ``migrations/`` of a checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_migrations", package.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("changewatch's migrations directory is missing from this install")


def alembic_config(database_url: str | None = None, connection: Connection | None = None) -> Config:
    """An Alembic ``Config`` for our migrations, on a URL or an open connection."""
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
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(connection: Connection) -> str | None:
    """The revision a database is at, or ``None`` for an empty one."""
    return MigrationContext.configure(connection).get_current_revision()


def database_revision(engine: Engine) -> str | None:
    """``current_revision`` on a fresh connection; driver errors become ``StoreError``."""
    with _translate(_url_of(engine)), engine.connect() as conn:
        return current_revision(conn)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the migrations up to ``revision`` on ``engine``.

    Driver errors become ``StoreError``; a revision Alembic does not know, ``ConfigError``.
    """
    with _translate(_url_of(engine)), engine.begin() as conn:
        try:
            command.upgrade(alembic_config(connection=conn), revision)
        except CommandError as exc:
            raise ConfigError(f"cannot upgrade to revision {revision!r}: {exc}") from exc


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
