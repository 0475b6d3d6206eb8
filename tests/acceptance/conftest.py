"""Acceptance fixtures: the installed ``changewatch`` console script, run in a subprocess.

Every run gets a clean environment: no inherited ``CHANGEWATCH_*`` variables, and by default
a SQLite store and a file seen-set in the test's temporary directory, which is also the
working directory. Postgres tests get a scratch database of their own, created with an
autocommit connection from ``CHANGEWATCH_TEST_DATABASE_URL`` and dropped afterwards; they
skip without a reachable server, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from ._cli import RUN_TIMEOUT_S, Run, clean_env, script

DEFAULT_TEST_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@pytest.fixture
def run(tmp_path: Path) -> Run:
    """Run ``changewatch ARGS`` in ``tmp_path`` with a clean environment; never raises."""
    exe = script()

    def run_(
        *args: str, stdin: bytes | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [exe, *args],
            cwd=tmp_path,
            env=clean_env(tmp_path, **env),
            input=stdin,
            capture_output=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        return subprocess.CompletedProcess(
            proc.args,
            proc.returncode,
            proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"),
        )

    return run_


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """The admin URL of the test Postgres server; skips (fails under CI) when unreachable."""
    url = os.environ.get("CHANGEWATCH_TEST_DATABASE_URL") or DEFAULT_TEST_DATABASE_URL
    engine = sa.create_engine(url, poolclass=NullPool, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.OperationalError as exc:
        if _in_ci():
            pytest.fail(f"Postgres at {make_url(url)!r} is unreachable under CI=true: {exc}")
        pytest.skip(f"Postgres at {make_url(url)!r} is unreachable")
    finally:
        engine.dispose()
    return url


@pytest.fixture
def pg_scratch_url(pg_server_url: str) -> Iterator[str]:
    """A URL to a new, empty (unmigrated) Postgres database, dropped after the test."""
    name = f"cw_accept_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(pg_server_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
