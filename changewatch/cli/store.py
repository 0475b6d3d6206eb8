"""The commands about the whole store: ``stats``, ``prune`` and ``due``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import click
from rich import box
from rich.table import Table
from rich.text import Text

from changewatch.cli.common import (
    Column,
    Options,
    cell,
    console,
    duration_option,
    echo_json,
    fields_table,
    fitted_table,
    iso,
)
from changewatch.errors import ChangewatchError
from changewatch.redact import redact_url
from changewatch.schedule import DuePage

__all__ = ["due", "prune", "stats"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--seen",
    "with_seen",
    is_flag=True,
    help="Also open the seen-set (--seen-url) and show its figures and each generation.",
)
@click.pass_obj
def stats(options: Options, as_json: bool, with_seen: bool) -> None:
    """Show the store's counters: pages, fetches, versions per kind (--seen: the seen-set)."""
    seen: dict[str, Any] | None = None
    seen_error: ChangewatchError | None = None
    seen_url = options.settings().seen_url
    with options.watch(allow_mixed_canon=True) as watch:  # stats reports a mismatch
        counters = watch.stats()
        # A shared seen-set is always asked for its figures, so that one which cannot work (a
        # server that does not answer, a bad option) is reported, not ignored; a local file
        # one only with --seen (opening it would write the file; its URL's form is checked).
        if with_seen or not seen_url.startswith(("file:", "memory:")):
            try:
                seen = dict(watch.seen.stats())
            except ChangewatchError as exc:
                seen_error = exc
    data = {k: iso(v) if isinstance(v, datetime) else v for k, v in counters.items()}
    data.pop("seen", None)
    if as_json:
        echo_json({**data, "seen": seen} if with_seen else data)
    else:
        console().print(fields_table(data, "changewatch store"))
        if seen is not None and with_seen:
            for title, figures in _seen_parts(seen):
                _print_seen(figures, title)
    if seen_error is not None:
        raise ChangewatchError(
            f"the seen-set ({redact_url(seen_url)}) cannot be used"
        ) from seen_error


def _seen_parts(seen: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The seen-set, then each route of a routed one, with a title each."""
    parts = [("seen-set", seen)]
    for name, route in (seen.get("routes") or {}).items():
        parts.append((f"seen-set route {name}", route))
    return parts


def _print_seen(figures: dict[str, Any], title: str) -> None:
    rows = {k: v for k, v in figures.items() if k not in ("generations", "routes")}
    console().print(fields_table(rows, title))
    generations = figures.get("generations")
    if generations:
        console().print(generations_table(generations, f"{title}: generations"))


def generations_table(rows: list[dict[str, Any]], title: str) -> Table:
    """Each live generation of a seen-set: age, entries, fill, estimated false-positive rate."""
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left")
    for column in ("generation", "age", "expires in", "entries", "filters", "fill", "est. FP rate"):
        table.add_column(column, justify="right")
    for row in rows:
        fill = row.get("fill")
        table.add_row(
            cell(row["generation"]),
            cell(_seconds(row.get("age_s"))),
            cell(_seconds(row.get("expires_in_s"))),
            cell(row["entries"]),
            cell(row.get("filters", "—")),
            cell("—" if fill is None else f"{fill:.4f}"),
            cell(f"{row['estimated_error_rate']:.3g}"),
        )
    return table


def _seconds(value: float | None) -> str:
    """``3d 4h``, ``2h 5m``, ``45s`` — a generation's age, for people."""
    if value is None:
        return "—"
    seconds = round(value)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    shown = [f"{n}{unit}" for n, unit in parts if n][:2]
    return " ".join(shown) or "0s"


@click.command()
@click.option(
    "--keep-versions",
    type=click.IntRange(min=1),
    required=True,
    metavar="N",
    help="Keep each page's latest N versions (the current one is always kept).",
)
@click.option(
    "--older-than",
    required=True,
    metavar="DURATION",
    callback=duration_option,
    help="Only remove versions last seen (chrome changes seen, reconcile runs started) "
    "longer ago than this: 30d, 12h, 1w2d…",
)
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def prune(
    options: Options, keep_versions: int, older_than: timedelta, dry_run: bool, as_json: bool
) -> None:
    """Remove old version rows, never a page's current or latest N; safe while crawling.

    Also removes the chrome changes and reconcile runs from before the cutoff (never a
    host's latest complete or accepted run) and the SimHashes no stored page holds."""
    with options.watch(allow_mixed_canon=True) as watch:
        report = watch.prune(keep_versions, older_than, dry_run=dry_run)
    if as_json:
        echo_json(
            {
                "dry_run": report.dry_run,
                "cutoff": iso(report.cutoff),
                "keep_versions": report.keep_versions,
                "removed": report.removed,
                "removed_by_host": report.removed_by_host,
                "batches": report.batches,
                "texts_removed": report.texts_removed,
                "chrome_changes_removed": report.chrome_changes_removed,
                "reconcile_runs_removed": report.reconcile_runs_removed,
                "reconcile_findings_removed": report.reconcile_findings_removed,
                "simhashes_removed": report.simhashes_removed,
            }
        )
        return
    verb = "would remove" if dry_run else "removed"
    out = console()
    # The cutoff on a line of its own: a title too wide is wrapped by words, never cut.
    out.print(
        Text(
            f"prune: versions last seen before {report.cutoff.isoformat(timespec='seconds')}, "
            f"keeping the latest {keep_versions} per page",
            style="italic",
        )
    )
    rows = [[cell(host), cell(n)] for host, n in report.removed_by_host.items()]
    rows.append([Text("total", style="bold"), cell(report.removed)])
    columns = (Column("host", fold=True), Column(verb, "right", keep=True))
    out.print(fitted_table(None, columns, rows, out.width))
    if report.texts_removed:
        click.echo(f"{report.texts_removed} stored texts no version refers to were removed")
    if report.chrome_changes_removed:
        n = report.chrome_changes_removed
        click.echo(
            f"{n} chrome or outlink change{'' if n == 1 else 's'} seen before the cutoff "
            f"{'would be' if dry_run else 'was' if n == 1 else 'were'} removed"
        )
    if report.reconcile_runs_removed:
        n = report.reconcile_runs_removed
        click.echo(
            f"{n} reconcile run{'' if n == 1 else 's'} started before the cutoff, with "
            f"{report.reconcile_findings_removed} findings, "
            f"{'would be' if dry_run else 'was' if n == 1 else 'were'} removed"
        )
    if report.simhashes_removed:
        n = report.simhashes_removed
        click.echo(
            f"{n} SimHash{'' if n == 1 else 'es'} no stored page holds "
            f"{'would be' if dry_run else 'was' if n == 1 else 'were'} removed"
        )


@click.command()
@click.option(
    "--limit", "-n", type=click.IntRange(min=0), default=100, show_default=True, help="Pages."
)
@click.option("--host", metavar="H", help="Only pages of this host[:port].")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
@click.pass_obj
def due(options: Options, limit: int, host: str | None, as_json: bool) -> None:
    """List the pages most likely to have changed since their last fetch: fetch these next.

    Each with its estimated change rate (changes per day), the probability it changed since
    it was last seen, and the changes expected in that time (docs/scheduling.md).
    """
    with options.watch() as watch:
        pages = watch.due(limit, host=host)
    if as_json:
        echo_json([_due_json(p) for p in pages])
        return
    if not pages:
        click.echo("no pages stored" + (f" for host {host}" if host else ""))
        return
    rows = [
        [
            cell(p.url or p.url_digest.hex()),
            cell(p.last_seen.isoformat(timespec="seconds")),
            cell(f"{p.rate_per_day:.3g}"),
            cell(f"{p.probability:.3f}"),
            cell(f"{p.expected_changes:.2f}"),
        ]
        for p in pages
    ]
    out = console()
    out.print(
        fitted_table("due for a fetch, most likely changed first", _DUE_COLUMNS, rows, out.width)
    )


#: The URL wraps and the time stays whole; at 80 columns the expected changes go first.
_DUE_COLUMNS = (
    Column("url", fold=True),
    Column("last seen", keep=True),
    Column("rate/day", "right", drop=2),
    Column("P(changed)", "right", keep=True),
    Column("expected changes", "right", drop=3),
)


def _due_json(p: DuePage) -> dict[str, Any]:
    return {
        "url": p.url,
        "url_digest": p.url_digest.hex(),
        "host": p.host,
        "last_seen": iso(p.last_seen),
        "rate_per_day": p.rate_per_day,
        "probability": p.probability,
        "expected_changes": p.expected_changes,
    }
