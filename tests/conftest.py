"""Shared fixtures: a controllable clock, per-test databases on SQLite and Postgres, watches.

Postgres: one template database per session (``cw_tmpl_<pid>``) is migrated to head once;
every Postgres test gets its own clone (``CREATE DATABASE … TEMPLATE``), dropped afterwards.
The admin connection comes from ``CHANGEWATCH_TEST_DATABASE_URL``; with
``CHANGEWATCH_TEST_PARTITIONS=N`` the template is hash-partitioned into N partitions. Without a
reachable server the Postgres tests skip, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import shared_corpus
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from changewatch import ChangeWatch
from changewatch.store.migrate import upgrade
from changewatch.store.partition import partition_tables

DEFAULT_TEST_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
_names = itertools.count(1)


class Clock:
    """A clock for ``ChangeWatch(clock=...)``: tz-aware UTC, moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float = 1.0) -> datetime:
        """Move the clock forward and return the new time."""
        self.now += timedelta(seconds=seconds)
        return self.now


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``corpus`` are skipped when the shared corpus is absent (see
    :mod:`shared_corpus`), naming ``CHANGEWATCH_CORPUS`` and ``../shared/corpus``."""
    del config
    if shared_corpus.PRESENT:
        return
    skip = pytest.mark.skip(reason=shared_corpus.REASON)
    for item in items:
        if item.get_closest_marker("corpus") is not None:
            item.add_marker(skip)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _admin_engine(url: str) -> sa.Engine:
    return sa.create_engine(
        url, isolation_level="AUTOCOMMIT", poolclass=NullPool, connect_args={"connect_timeout": 5}
    )


def _database_url(admin_url: str, name: str) -> str:
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    """The Postgres admin URL; skips (locally) or fails (CI) when the server is unreachable."""
    url = os.environ.get("CHANGEWATCH_TEST_DATABASE_URL") or DEFAULT_TEST_DATABASE_URL
    engine = _admin_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError as exc:
        message = f"PostgreSQL at {make_url(url)!s} is unreachable: {exc.__class__.__name__}"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    finally:
        engine.dispose()
    return url


@pytest.fixture(scope="session")
def pg_template(pg_admin_url: str) -> Iterator[str]:
    """Name of a database migrated to head, used as the template of every Postgres test DB."""
    name = f"cw_tmpl_{os.getpid()}"
    admin = _admin_engine(pg_admin_url)
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        engine = sa.create_engine(_database_url(pg_admin_url, name), poolclass=NullPool)
        try:
            upgrade(engine)
            # CHANGEWATCH_TEST_PARTITIONS=N: every migrated Postgres test database is
            # hash-partitioned (as by `changewatch db upgrade --partitions N`).
            partitions = os.environ.get("CHANGEWATCH_TEST_PARTITIONS")
            if partitions:
                partition_tables(engine, int(partitions))
        finally:
            engine.dispose()
        yield name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def make_pg_database(
    pg_admin_url: str, request: pytest.FixtureRequest
) -> Iterator[Callable[..., str]]:
    """Factory: ``make(migrated=True)`` → URL of a fresh Postgres database, dropped after."""
    admin = _admin_engine(pg_admin_url)
    created: list[str] = []

    def make(*, migrated: bool = True) -> str:
        name = f"cw_test_{os.getpid()}_{next(_names)}"
        template = f' TEMPLATE "{request.getfixturevalue("pg_template")}"' if migrated else ""
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"{template}'))
        created.append(name)
        return _database_url(pg_admin_url, name)

    yield make
    try:
        with admin.connect() as conn:
            for name in created:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def dialect(request: pytest.FixtureRequest) -> str:
    """The store's SQL dialect: every test that uses it runs on SQLite and on Postgres."""
    return str(request.param)


@pytest.fixture
def make_database_url(
    dialect: str, tmp_path: Any, request: pytest.FixtureRequest
) -> Callable[..., str]:
    """Factory: ``make(migrated=True)`` → URL of a fresh, empty store on the current dialect.

    SQLite files are new paths under ``tmp_path`` (their schema is created on first use, so
    ``migrated`` changes nothing); Postgres databases are cloned from the migrated template,
    or created bare with ``migrated=False``.
    """
    if dialect == "postgres":
        factory: Callable[..., str] = request.getfixturevalue("make_pg_database")
        return factory
    counter = itertools.count(1)

    def make(*, migrated: bool = True) -> str:
        del migrated
        n = next(counter)
        return f"sqlite:///{tmp_path}/cw{'' if n == 1 else n}.db"

    return make


@pytest.fixture
def database_url(make_database_url: Callable[..., str]) -> str:
    """A fresh store URL: a SQLite file in ``tmp_path``, or a cloned, migrated Postgres DB."""
    return make_database_url()


@pytest.fixture
def clock() -> Clock:
    """A controllable UTC clock shared by the test's watches."""
    return Clock()


@pytest.fixture
def make_watch(database_url: str, clock: Clock) -> Iterator[Callable[..., ChangeWatch]]:
    """Factory for ``ChangeWatch`` on the test's store (override any argument); all closed after."""
    watches: list[ChangeWatch] = []

    def make(**kwargs: Any) -> ChangeWatch:
        kwargs.setdefault("database_url", database_url)
        kwargs.setdefault("seen_url", "memory:")
        kwargs.setdefault("clock", clock)
        watch = ChangeWatch(**kwargs)
        watches.append(watch)
        return watch

    yield make
    for watch in watches:
        watch.close()


@pytest.fixture
def watch(make_watch: Callable[..., ChangeWatch]) -> ChangeWatch:
    """A ``ChangeWatch`` on the test's store with an in-memory seen-set and the test clock."""
    return make_watch()
