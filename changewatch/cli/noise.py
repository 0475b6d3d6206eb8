"""``changewatch noise list`` and ``changewatch noise reset``: the blocks learned as noise per
host (``host_noise``; ``ChangeWatch(learn_noise=True)``)."""

from __future__ import annotations

from typing import Any

import click

from changewatch.cli.common import Column, Options, cell, echo_json, echo_rules, iso

__all__ = ["noise"]


@click.group()
def noise() -> None:
    """The blocks learned as noise per host: list them, or forget a host's."""


@noise.command("list")
@click.option("--host", metavar="HOST", help="Only this host (host[:port], as stored).")
@click.option("--learned", "learned_only", is_flag=True, help="Only rules already learned.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def list_rules(options: Options, host: str | None, learned_only: bool, as_json: bool) -> None:
    """Every noise rule (of one host), learned first: what it is, how often it was seen and
    changed, since when it is learned."""
    with options.watch(allow_mixed_canon=True) as watch:
        rows = [_row(r) for r in watch.noise_rules(host) if r["learned_at"] or not learned_only]
    if as_json:
        echo_json(rows)
        return
    rendered = [
        (
            cell(r["host"]),
            cell(r["kind"]),
            cell(r["path"]),
            cell(r["observations"]),
            cell(r["changes"]),
            cell(r["learned_at"] or "observing"),
            cell(r["value"]),
        )
        for r in rows
    ]
    echo_rules("learned noise", _COLUMNS, rows, rendered)


#: Host, kind, path and time stay whole at any width; the rule's hex value goes first.
_COLUMNS = (
    Column("host", fold=True),
    Column("kind", keep=True),
    Column("path", fold=True),
    Column("seen", "right", keep=True),
    Column("changed", "right", keep=True),
    Column("learned at", keep=True),
    Column("value", fold=True, drop=1),
)


@noise.command("reset")
@click.option("--host", required=True, metavar="HOST", help="The host whose rules to forget.")
@click.pass_obj
def reset(options: Options, host: str) -> None:
    """Forget every noise rule of a host: its blocks count in the hashes again."""
    with options.watch(allow_mixed_canon=True) as watch:
        removed = watch.reset_noise(host)
    click.echo(f"forgot {removed} noise rule(s) of {host}")


def _row(rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "host": rule["host"],
        "fingerprint_version": rule["fingerprint_version"],
        "kind": rule["kind"],
        "value": rule["value"].hex(),
        "path": rule["path"],
        "observations": rule["observations"],
        "changes": rule["changes"],
        "first_seen": iso(rule["first_seen"]),
        "last_seen": iso(rule["last_seen"]),
        "learned_at": iso(rule["learned_at"]),
    }
