"""The ``changewatch`` command: a thin layer of parse → build adapters → call one function.

Settings come from :func:`changewatch.config.load_settings` (``CHANGEWATCH_*`` variables);
``--database-url`` and ``--seen-url`` override them. People get tables (rich), machines get
``--json``. Exit status: 0 on success, 1 when changewatch reports an error (one line,
``changewatch: error: …``, then each cause on its own line; never a traceback), 2 for a usage
error. Passwords in database URLs are never printed.

One module per command family: :mod:`~changewatch.cli.db` (schema), :mod:`~changewatch.cli.
pages` (check, conditional, history, diff), :mod:`~changewatch.cli.store` (stats, prune,
due), :mod:`~changewatch.cli.demo`, :mod:`~changewatch.cli.reconcile`,
:mod:`~changewatch.cli.metrics`, :mod:`~changewatch.cli.noise` (learned noise);
:mod:`~changewatch.cli.common` holds what they share.
"""

from __future__ import annotations

from typing import Any

import click

from changewatch._version import __version__
from changewatch.cli.common import Options, print_error, secrets
from changewatch.cli.db import db
from changewatch.cli.demo import demo
from changewatch.cli.metrics import metrics
from changewatch.cli.noise import noise
from changewatch.cli.pages import check, conditional, diff, history
from changewatch.cli.reconcile import reconcile_command
from changewatch.cli.store import due, prune, stats
from changewatch.config import (
    DEFAULT_DATABASE_URL,
    DEFAULT_SEEN_URL,
    LOG_FORMATS,
    LOG_LEVELS,
    load_log_settings,
)
from changewatch.errors import ChangewatchError
from changewatch.logs import configure_logging

__all__ = ["main"]


class _ChangewatchGroup(click.Group):
    """The top-level group: reports a :class:`ChangewatchError` once, then exits 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ChangewatchError as exc:
            print_error(exc, secrets(ctx))
            ctx.exit(1)


@click.group(cls=_ChangewatchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="changewatch")
@click.option(
    "--database-url",
    metavar="URL",
    help="Snapshot store: sqlite:///PATH or postgresql+psycopg://… "
    f"[env CHANGEWATCH_DATABASE_URL; default {DEFAULT_DATABASE_URL}]",
)
@click.option(
    "--seen-url",
    metavar="URL",
    help=f"Seen-set: memory: or file:PATH [env CHANGEWATCH_SEEN_URL; default {DEFAULT_SEEN_URL}]",
)
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    help="Log lines as key=value or JSON [env CHANGEWATCH_LOG_FORMAT; default kv]",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    help="DEBUG logs one line per decision [env CHANGEWATCH_LOG_LEVEL; default WARNING]",
)
@click.pass_context
def main(
    ctx: click.Context,
    database_url: str | None,
    seen_url: str | None,
    log_format: str | None,
    log_level: str | None,
) -> None:
    """Tell a crawler whether a fetched page changed since it was last stored."""
    ctx.obj = Options(database_url, seen_url)
    logs = load_log_settings()
    configure_logging(log_format or logs.format, (log_level or logs.level).upper())


for _command in (db, check, conditional, history, diff, stats, prune, due, demo, metrics, noise):
    main.add_command(_command)
main.add_command(reconcile_command)
