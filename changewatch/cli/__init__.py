"""The ``changewatch`` command: a thin layer of parse → build adapters → call one function.

Settings come from :func:`changewatch.config.load_settings` (``CHANGEWATCH_*`` variables);
``--database-url`` and ``--seen-url`` override them. People get tables (rich), machines get
``--json``. Exit status: 0 on success, 1 when changewatch reports an error (one line,
``changewatch: error: …``, then each cause on its own line; never a traceback), 2 for a usage
error. Passwords in database URLs are never printed.

One module per command family: :mod:`~changewatch.cli.db` (schema), :mod:`~changewatch.cli.
pages` (check, conditional, history, diff), :mod:`~changewatch.cli.store` (stats, prune,
due), :mod:`~changewatch.cli.demo`, :mod:`~changewatch.cli.reconcile`,
:mod:`~changewatch.cli.metrics`, :mod:`~changewatch.cli.noise` (learned noise),
:mod:`~changewatch.cli.templates` (learned templates);
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
from changewatch.cli.templates import templates
from changewatch.config import (
    DEFAULT_DATABASE_URL,
    DEFAULT_SEEN_URL,
    LOG_FORMATS,
    LOG_LEVELS,
    load_log_settings,
    misspelt_variables,
)
from changewatch.errors import ChangewatchError
from changewatch.logs import configure_logging

__all__ = ["hoist_global_options", "main"]


#: The global options that take a value; they are also understood after the subcommand.
_GLOBAL_OPTIONS = ("--database-url", "--seen-url", "--log-format", "--log-level")


def _option_names(command: click.Command) -> set[str]:
    """Every option name of ``command`` and, for a group, of its subcommands."""
    names = {n for p in command.params for n in (*p.opts, *p.secondary_opts)}
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            names |= _option_names(sub)
    return names


def hoist_global_options(group: click.Group, args: list[str]) -> list[str]:
    """``args`` with the global options found after the subcommand moved before it, so that
    ``changewatch stats --log-format json`` means ``changewatch --log-format json stats``.

    An option the subcommand has itself stays where it is; nothing after ``--`` moves.
    """
    position = 0
    while position < len(args) and args[position].startswith("-"):
        takes_value = args[position] in _GLOBAL_OPTIONS
        position += 2 if takes_value else 1
    if position >= len(args) or args[position] not in group.commands:
        return args
    own = _option_names(group.commands[args[position]])
    head, rest, moved = args[: position + 1], args[position + 1 :], []
    kept: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            kept.extend(rest[i:])
            break
        name = arg.partition("=")[0]
        if name in _GLOBAL_OPTIONS and name not in own:
            width = 1 if "=" in arg else 2
            moved.extend(rest[i : i + width])
            i += width
            continue
        kept.append(arg)
        i += 1
    return moved + head + kept


class _ChangewatchGroup(click.Group):
    """The top-level group: reports a :class:`ChangewatchError` once, then exits 1."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(self, args))

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
    help="Seen-set: memory:, file:PATH, redis://HOST:PORT/DB, rediss://… (TLS) or "
    "redis+cluster://…, each with ?kind=… options (docs/seen-sets.md) "
    f"[env CHANGEWATCH_SEEN_URL; default {DEFAULT_SEEN_URL}]",
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
    """Tell a crawler whether a fetched page changed since it was last stored.

    Global options may also follow the command: changewatch stats --log-format json.
    """
    for name, match in misspelt_variables():
        hint = f"; did you mean {match}?" if match else ""
        click.echo(f"changewatch: warning: {name} is not a changewatch variable{hint}", err=True)
    ctx.obj = Options(database_url, seen_url)
    logs = load_log_settings()
    configure_logging(log_format or logs.format, (log_level or logs.level).upper())


for _command in (
    db,
    check,
    conditional,
    history,
    diff,
    stats,
    prune,
    due,
    demo,
    metrics,
    noise,
    templates,
):
    main.add_command(_command)
main.add_command(reconcile_command)
