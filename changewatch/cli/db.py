"""``changewatch db``: the schema's revision and its migrations."""

from __future__ import annotations

import click

from changewatch.cli.common import Options, echo_json
from changewatch.store import create_engine, redact
from changewatch.store.migrate import database_revision, head_revision, upgrade
from changewatch.store.partition import partition_tables

__all__ = ["db"]


@click.group()
def db() -> None:
    """Manage the database schema (Alembic migrations)."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@click.option(
    "--partitions",
    type=int,
    metavar="N",
    help="PostgreSQL, empty database only: hash-partition page_snapshots and page_versions "
    "by url_digest into N partitions each.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead.")
@click.pass_obj
def db_upgrade(options: Options, revision: str, partitions: int | None, as_json: bool) -> None:
    """Migrate the database schema to REVISION (idempotent)."""
    url = options.settings().database_url
    engine = create_engine(url)
    try:
        before = database_revision(engine)
        upgrade(engine, revision)
        after = database_revision(engine)
        partitioned = partitions is not None and partition_tables(engine, partitions)
    finally:
        engine.dispose()
    if as_json:
        echo_json(
            {
                "database": redact(url),
                "before": before,
                "after": after,
                "upgraded": before != after,
                "partitions": partitions if partitioned else None,
            }
        )
        return
    if before == after:
        click.echo(f"database {redact(url)}: already at revision {after}")
    else:
        click.echo(f"database {redact(url)}: upgraded from {before or 'empty'} to {after}")
    if partitioned:
        click.echo(f"page_snapshots and page_versions: {partitions} hash partitions each")


@db.command("current")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead.")
@click.pass_obj
def db_current(options: Options, as_json: bool) -> None:
    """Show the database's schema revision and the one this changewatch needs."""
    url = options.settings().database_url
    engine = create_engine(url)
    try:
        current = database_revision(engine)
    finally:
        engine.dispose()
    head = head_revision()
    if as_json:
        echo_json(
            {
                "database": redact(url),
                "current": current,
                "head": head,
                "up_to_date": current == head,
            }
        )
        return
    state = "up to date" if current == head else "behind: run `changewatch db upgrade`"
    click.echo(
        f"database: {redact(url)}\ncurrent:  {current or 'empty'}\nhead:     {head} ({state})"
    )
