"""Alembic environment for changewatch.

The database comes, in order, from a connection passed in ``config.attributes["connection"]``
(how ``changewatch db upgrade`` and the tests call it), the ``sqlalchemy.url`` option,
``alembic -x url=...``, or changewatch's configuration (``CHANGEWATCH_DATABASE_URL``).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from changewatch.store import create_engine
from changewatch.store.migrate import exclusive_upgrade, skip_band_index_reflection_warnings
from changewatch.store.tables import metadata

config = context.config


def _database_url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if url:
        return url
    from changewatch.config import load_settings

    return load_settings().database_url


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    # The SimHash band expression indexes (0002) cannot be reflected on SQLite: the two
    # warnings that comparison gives for them, and only them, are expected (see the helper).
    with skip_band_index_reflection_warnings(), context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    """Emit the SQL to stdout (``alembic upgrade head --sql``)."""
    context.configure(
        url=_database_url(),
        target_metadata=metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run against a passed-in connection or a fresh engine; on a fresh engine (``alembic
    upgrade head`` from the command line) as ``changewatch db upgrade`` runs: one upgrader at
    a time, the whole run one transaction (SQLite ``BEGIN EXCLUSIVE``, a Postgres advisory
    lock)."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(_database_url())
    try:
        with exclusive_upgrade(engine) as conn:
            _run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
