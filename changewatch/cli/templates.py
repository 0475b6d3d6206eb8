"""``changewatch templates list`` and ``changewatch templates reset``: the blocks learned as
each host's template (``host_templates``; ``ChangeWatch(learn_templates=True)``)."""

from __future__ import annotations

from typing import Any

import click

from changewatch.cli.common import Column, Options, cell, echo_json, echo_rules, iso

__all__ = ["templates"]


@click.group()
def templates() -> None:
    """The blocks learned as each host's template: list them, or forget a host's."""


@templates.command("list")
@click.option("--host", metavar="HOST", help="Only this host (host[:port], as stored).")
@click.option("--learned", "learned_only", is_flag=True, help="Only rules already learned.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def list_rules(options: Options, host: str | None, learned_only: bool, as_json: bool) -> None:
    """Every template rule (of one host), learned first: what it is, on how many of the
    host's sampled pages it stands, since when it is learned."""
    with options.watch(allow_mixed_canon=True) as watch:
        rows = [_row(r) for r in watch.template_rules(host) if r["learned_at"] or not learned_only]
    if as_json:
        echo_json(rows)
        return
    rendered = [
        (
            cell(r["host"]),
            cell(r["kind"]),
            cell(r["path"]),
            cell(f"{r['pages']}/{r['sampled']}"),
            cell(r["learned_at"] or "counting"),
            cell(r["value"]),
        )
        for r in rows
    ]
    echo_rules("learned templates", _COLUMNS, rows, rendered)


#: Host, kind, path and time stay whole at any width; the rule's hex value goes first.
_COLUMNS = (
    Column("host", fold=True),
    Column("kind", keep=True),
    Column("path", fold=True),
    Column("pages", "right", keep=True),
    Column("learned at", keep=True),
    Column("value", fold=True, drop=1),
)


@templates.command("reset")
@click.option("--host", required=True, metavar="HOST", help="The host whose template to forget.")
@click.pass_obj
def reset(options: Options, host: str) -> None:
    """Forget the template of a host (its rules and sampled pages): its blocks are classified
    without it again, and counted afresh."""
    with options.watch(allow_mixed_canon=True) as watch:
        removed = watch.reset_templates(host)
    click.echo(f"forgot {removed} template rule(s) of {host}")


def _row(rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "host": rule["host"],
        "fingerprint_version": rule["fingerprint_version"],
        "kind": rule["kind"],
        "value": rule["value"].hex(),
        "block_key": rule["block_key"].hex(),
        "path": rule["path"],
        "pages": rule["pages"],
        "sampled": rule["sampled"],
        "first_seen": iso(rule["first_seen"]),
        "last_seen": iso(rule["last_seen"]),
        "learned_at": iso(rule["learned_at"]),
    }
