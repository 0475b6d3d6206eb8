"""``alembic upgrade head`` from the command line is serialised like ``changewatch db
upgrade``: several at once on a new store all succeed, and the schema is complete."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from changewatch.store.migrate import HEAD_REVISION, current_revision

ROOT = Path(__file__).resolve().parents[3]
UPGRADERS = 6


def test_concurrent_alembic_command_lines_on_a_new_store_all_succeed(
    make_database_url: Callable[..., str],
) -> None:
    url = make_database_url(migrated=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGEWATCH_")}
    command = [sys.executable, "-m", "alembic", "-c", str(ROOT / "alembic.ini")]
    runs = [
        subprocess.Popen(
            [*command, "-x", f"url={url}", "upgrade", "head"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(UPGRADERS)
    ]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0] * UPGRADERS, outputs
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            assert current_revision(conn) == HEAD_REVISION
            names = set(sa.inspect(conn).get_table_names())
    finally:
        engine.dispose()
    assert {"page_snapshots", "page_versions", "host_noise"} <= names
