"""The ``changewatch`` command: a thin layer of parse → build adapters → call one function.

Settings come from :func:`changewatch.config.load_settings` (``CHANGEWATCH_*`` variables);
``--database-url`` and ``--seen-url`` override them. People get tables (rich), machines get
``--json``. Exit status: 0 on success, 1 when changewatch reports an error (one line,
``changewatch: error: …``, then each cause on its own line; never a traceback), 2 for a usage
error. Passwords in database URLs are never printed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text
from sqlalchemy.engine import make_url

from changewatch._version import __version__
from changewatch.config import (
    DEFAULT_DATABASE_URL,
    DEFAULT_SEEN_URL,
    LOG_FORMATS,
    LOG_LEVELS,
    Settings,
    load_log_settings,
    load_settings,
)
from changewatch.demo import DemoReport, run_demo
from changewatch.errors import ChangewatchError
from changewatch.logs import configure_logging
from changewatch.metrics_cli import metrics
from changewatch.schedule import DuePage, parse_duration
from changewatch.store import create_engine, redact
from changewatch.store.migrate import database_revision, head_revision, upgrade
from changewatch.store.partition import partition_tables
from changewatch.urls import canonicalise
from changewatch.values import Decision, Version
from changewatch.watch import ChangeWatch

__all__ = ["main"]

_KIND_STYLES = {
    "new": "cyan",
    "unchanged": "dim",
    "minor": "yellow",
    "changed": "magenta",
    "gone": "red",
}
# userinfo in any URL-shaped text: scheme://user:PASSWORD@
_USERINFO_RE = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)[^@\s]+@")
# SQLAlchemy appends a link to its error docs to every message.
_BACKGROUND_RE = re.compile(r"\s*\(Background on this error at: [^)]*\)")
_MAX_CAUSE_CHARS = 300
_CRAWL_COLUMNS = (
    "page",
    "status",
    "kind",
    "distance",
    "duplicate of",
    "decided by",
    "bytes",
    "what changed",
)


@dataclasses.dataclass(frozen=True, slots=True)
class _Options:
    """The global options; settings are loaded when a command needs them."""

    database_url: str | None
    seen_url: str | None

    def settings(self) -> Settings:
        loaded = load_settings()
        return dataclasses.replace(
            loaded,
            database_url=self.database_url or loaded.database_url,
            seen_url=self.seen_url or loaded.seen_url,
        )

    def watch(self, *, allow_mixed_canon: bool = False) -> ChangeWatch:
        s = self.settings()
        return ChangeWatch(
            s.database_url,
            s.seen_url,
            minor_distance=s.minor_distance,
            max_page_bytes=s.max_page_bytes,
            url_policy=s.url_policy,
            canon_policy=s.canon_policy,
            allow_mixed_canon=allow_mixed_canon,
            store_text=s.store_text,
            flip_window=s.flip_window,
            fingerprint_policy=s.fingerprint_policy,
            seen_on_error=s.seen_on_error,
        )


class _ChangewatchGroup(click.Group):
    """The top-level group: reports a :class:`ChangewatchError` once, then exits 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ChangewatchError as exc:
            _print_error(exc, _secrets(ctx))
            ctx.exit(1)


def _secrets(ctx: click.Context) -> list[str]:
    """Database passwords that must not appear in what is printed."""
    urls = [ctx.params.get("database_url")]
    with contextlib.suppress(ChangewatchError):
        urls.append(load_settings().database_url)
    found = []
    for url in urls:
        if not url:
            continue
        try:
            password = make_url(url).password
        except Exception:  # an unparsable URL: fall back on the userinfo pattern
            match = re.search(r"://[^:/@\s]*:([^@\s]+)@", url)
            password = match.group(1) if match else None
        if password:
            found.append(str(password))
    return found


def _clean(text: str, secrets: Sequence[str]) -> str:
    """One line, without SQLAlchemy's doc link and with every password hidden."""
    text = _BACKGROUND_RE.sub("", text)
    text = " ".join(text.split())
    text = _USERINFO_RE.sub(r"\1***@", text)
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _print_error(exc: ChangewatchError, secrets: Sequence[str]) -> None:
    message = _clean(str(exc), secrets)
    click.echo(f"changewatch: error: {message}", err=True)
    shown = {message}
    cause = exc.__cause__
    while cause is not None:
        kind = type(cause)
        name = (
            kind.__qualname__
            if kind.__module__ == "builtins"
            else (f"{kind.__module__}.{kind.__qualname__}")
        )
        message = _clean(str(cause), secrets)
        if len(message) > _MAX_CAUSE_CHARS:
            message = message[:_MAX_CAUSE_CHARS] + "…"
        if message not in shown:
            click.echo(
                f"  caused by: {name}: {message}" if message else f"  caused by: {name}", err=True
            )
            shown.add(message)
        cause = cause.__cause__


# -- output helpers ---------------------------------------------------------------------------


def _console() -> Console:
    """stdout for tables; wide enough not to fold columns when piped."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 140)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _kind(kind: str) -> Text:
    return Text(kind, style=_KIND_STYLES.get(kind, ""))


def _cell(value: object) -> Text:
    """A table cell as plain text: URLs and paths are never read as rich markup."""
    return Text("—" if value is None else str(value))


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _decision_json(d: Decision) -> dict[str, Any]:
    return {
        "url": d.url,
        "kind": d.kind,
        "parse": bool(d),
        "distance": d.distance,
        "duplicate_of": d.duplicate_of,
        "path": d.path,
        "version": d.version,
        "reverted_to": d.reverted_to,
        "url_digest": d.url_digest.hex(),
        "content_sha256": d.content_sha256.hex(),
        "simhash": f"{d.simhash:016x}",
    }


def _version_json(v: Version) -> dict[str, Any]:
    return {
        "version": v.version,
        "kind": v.kind,
        "distance": v.distance,
        "first_seen": _iso(v.first_seen),
        "last_seen": _iso(v.last_seen),
        "content_sha256": v.content_sha256.hex(),
        "raw_sha256": v.raw_sha256.hex(),
        "simhash": f"{v.simhash:016x}",
        "text_length": v.text_length,
        "reverted_to": v.reverted_to,
    }


def _versions_table(versions: Sequence[Version], title: str) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left")
    for column in ("version", "kind", "distance", "first seen", "last seen", "content"):
        table.add_column(column, justify="right" if column in ("version", "distance") else "left")
    for v in versions:
        table.add_row(
            _cell(v.version),
            _kind(v.kind),
            _cell(v.distance),
            _cell(v.first_seen.isoformat(timespec="seconds")),
            _cell(v.last_seen.isoformat(timespec="seconds")),
            _cell(v.content_sha256.hex()[:12]),
        )
    return table


def _fields_table(rows: Mapping[str, object], title: str) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    for name, value in rows.items():
        table.add_row(name, _kind(str(value)) if name == "kind" else _cell(value))
    return table


# -- commands ---------------------------------------------------------------------------------


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
    ctx.obj = _Options(database_url, seen_url)
    logs = load_log_settings()
    configure_logging(log_format or logs.format, (log_level or logs.level).upper())


@main.group()
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
@click.pass_obj
def db_upgrade(options: _Options, revision: str, partitions: int | None) -> None:
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
    if before == after:
        click.echo(f"database {redact(url)}: already at revision {after}")
    else:
        click.echo(f"database {redact(url)}: upgraded from {before or 'empty'} to {after}")
    if partitioned:
        click.echo(f"page_snapshots and page_versions: {partitions} hash partitions each")


@db.command("current")
@click.pass_obj
def db_current(options: _Options) -> None:
    """Show the database's schema revision and the one this changewatch needs."""
    url = options.settings().database_url
    engine = create_engine(url)
    try:
        current = database_revision(engine)
    finally:
        engine.dispose()
    head = head_revision()
    state = "up to date" if current == head else "behind: run `changewatch db upgrade`"
    click.echo(
        f"database: {redact(url)}\ncurrent:  {current or 'empty'}\nhead:     {head} ({state})"
    )


@main.command()
@click.argument("url")
@click.option(
    "--file",
    "-f",
    "body",
    type=click.File("rb"),
    help="The fetched page body; - reads standard input (none with --status 304).",
)
@click.option("--content-type", metavar="CT", help="The HTTP Content-Type (for its charset).")
@click.option(
    "--status",
    type=int,
    default=200,
    show_default=True,
    help="The HTTP status of the fetch: 2xx, or 304 (Not Modified, no body).",
)
@click.option(
    "--header",
    "-H",
    "header_lines",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="A response header (repeatable): ETag and Last-Modified are kept for the next "
    "conditional GET; Content-Type gives the charset.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def check(
    options: _Options,
    url: str,
    body: IO[bytes] | None,
    content_type: str | None,
    status: int,
    header_lines: tuple[str, ...],
    as_json: bool,
) -> None:
    """Decide whether the page at URL, with the body in --file, needs parsing; record it."""
    headers = _parse_headers(header_lines)
    if body is None and status != 304:
        raise click.UsageError("--file is required (only a --status 304 answer has no body)")
    if content_type is None:
        content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    canonicalise(url, options.settings().canon_policy)  # a bad URL fails before any store opens
    html = None if body is None else body.read()
    with options.watch() as watch:
        decision = watch.should_parse(
            url, html, headers=headers, status=status, content_type=content_type
        )
    data = _decision_json(decision)
    if as_json:
        _echo_json(data)
    else:
        _console().print(_fields_table(data, "decision"))


def _parse_headers(lines: Sequence[str]) -> dict[str, str]:
    """``NAME: VALUE`` lines as a mapping (a later repeat wins); a malformed one is refused.

    >>> _parse_headers(['ETag: "v1"', "last-modified:Tue, 01 Dec 2026 10:00:00 GMT"])
    {'ETag': '"v1"', 'last-modified': 'Tue, 01 Dec 2026 10:00:00 GMT'}
    """
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        name = name.strip()
        if not colon or not name or any(c.isspace() for c in name):
            raise click.BadParameter(f"{line!r} is not 'NAME: VALUE'", param_hint="--header")
        headers[name] = value.strip()
    return headers


@main.command()
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead.")
@click.pass_obj
def conditional(options: _Options, url: str, as_json: bool) -> None:
    """Print the If-None-Match / If-Modified-Since headers for the next fetch of URL.

    One 'Name: value' line each (for curl -H), from the validators stored with its last
    fetch; nothing for a page never stored or stored without validators.
    """
    canonicalise(url, options.settings().canon_policy)
    with options.watch() as watch:
        headers = watch.conditional_headers(url)
    if as_json:
        _echo_json(headers)
    else:
        for name, value in headers.items():
            click.echo(f"{name}: {value}")


@main.command()
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
@click.pass_obj
def history(options: _Options, url: str, as_json: bool) -> None:
    """List the stored versions of URL, oldest first.

    A URL never stored is not an error: exit status 0, an empty list with --json, and a
    line saying so otherwise.
    """
    canonical = canonicalise(url, options.settings().canon_policy)
    with options.watch() as watch:
        versions = watch.history(url)
    if as_json:
        _echo_json([_version_json(v) for v in versions])
    elif not versions:
        click.echo(f"no history for {canonical}: it was never stored")
    else:
        _console().print(_versions_table(versions, f"history of {canonical}"))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def stats(options: _Options, as_json: bool) -> None:
    """Show the store's counters: pages, fetches, versions per kind."""
    with options.watch(allow_mixed_canon=True) as watch:  # stats reports a mismatch
        counters = watch.stats()
    data = {k: _iso(v) if isinstance(v, datetime) else v for k, v in counters.items()}
    if as_json:
        _echo_json(data)
    else:
        _console().print(_fields_table(data, "changewatch store"))


@main.command()
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Work in DIR (empty or absent) and keep it, instead of a temporary directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def demo(keep: Path | None, as_json: bool) -> None:
    """Crawl a bundled site twice on 127.0.0.1, changing it in between; show every decision.

    Runs offline on the embedded default, in its own working directory (a SQLite cw.db and
    one file seen-set per crawl); --database-url and --seen-url do not apply.
    """
    console = _console()

    def progress(line: str) -> None:
        if not as_json:
            console.print(Text(line, style="dim"))

    if keep is None:
        with tempfile.TemporaryDirectory(prefix="changewatch-demo-") as tmp:
            report = run_demo(Path(tmp) / "demo", progress=progress)
    else:
        report = run_demo(keep, progress=progress)
    if as_json:
        _echo_json(_report_json(report, kept=keep is not None))
    else:
        for renderable in _report_tables(report, kept=keep is not None):
            console.print(renderable)


def _report_json(report: DemoReport, *, kept: bool) -> dict[str, Any]:
    return {
        "workdir": str(report.workdir),
        "kept": kept,
        "database_url": report.database_url,
        "site_url": report.site_url,
        "kinds": sorted(report.kinds()),
        "crawls": [
            {
                "number": crawl.number,
                "title": crawl.title,
                "counts": crawl.counts(),
                "pages": [dataclasses.asdict(p) for p in crawl.pages],
            }
            for crawl in report.crawls
        ],
        "histories": [
            {"path": h.path, "url": h.url, "versions": [_version_json(v) for v in h.versions]}
            for h in report.histories
        ],
    }


def _report_tables(report: DemoReport, *, kept: bool) -> Iterator[Table | Text]:
    yield Text(f"demo site served at {report.site_url}")
    for crawl in report.crawls:
        table = Table(
            title=f"Crawl {crawl.number}: {crawl.title}", box=box.SIMPLE_HEAVY, title_justify="left"
        )
        for column in _CRAWL_COLUMNS:
            right = column in ("status", "distance", "bytes")
            table.add_column(column, justify="right" if right else "left", no_wrap=column == "page")
        for p in crawl.pages:
            table.add_row(
                _cell(p.path),
                _cell(p.status),
                _kind(p.kind),
                _cell(p.distance),
                _cell(p.duplicate_of),
                _cell(p.decided_by),
                _cell(p.size or None),
                _cell(p.change),
            )
        yield table
        counts = ", ".join(f"{n} {kind}" for kind, n in crawl.counts().items())
        yield Text(f"crawl {crawl.number}: {len(crawl.pages)} pages: {counts}\n")
    for page in report.histories:
        yield _versions_table(page.versions, f"History of {page.path}")
    where = f"kept in {report.workdir}" if kept else "in a temporary directory, now removed"
    yield Text(f"store {report.database_url.rpartition('/')[2]} and seen-sets were {where}")


# -- retention (issue 3) --------------------------------------------------------------------


def _duration(_ctx: click.Context, _param: click.Parameter, value: str) -> timedelta:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


@main.command()
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
    callback=_duration,
    help="Only remove versions last seen longer ago than this: 30d, 12h, 1w2d…",
)
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def prune(
    options: _Options, keep_versions: int, older_than: timedelta, dry_run: bool, as_json: bool
) -> None:
    """Remove old version rows, never a page's current or latest N; safe while crawling."""
    with options.watch(allow_mixed_canon=True) as watch:
        report = watch.prune(keep_versions, older_than, dry_run=dry_run)
    if as_json:
        _echo_json(
            {
                "dry_run": report.dry_run,
                "cutoff": _iso(report.cutoff),
                "keep_versions": report.keep_versions,
                "removed": report.removed,
                "removed_by_host": report.removed_by_host,
                "batches": report.batches,
                "texts_removed": report.texts_removed,
            }
        )
        return
    verb = "would remove" if dry_run else "removed"
    table = Table(
        title=f"prune: versions last seen before {report.cutoff.isoformat(timespec='seconds')}, "
        f"keeping the latest {keep_versions} per page",
        box=box.SIMPLE_HEAVY,
        title_justify="left",
    )
    table.add_column("host")
    table.add_column(verb, justify="right")
    for host, n in report.removed_by_host.items():
        table.add_row(_cell(host), _cell(n))
    table.add_row(Text("total", style="bold"), _cell(report.removed))
    _console().print(table)
    if report.texts_removed:
        click.echo(f"{report.texts_removed} stored texts no version refers to were removed")


# -- recrawl scheduling and text diffs (issue 3) ----------------------------------------------


@main.command()
@click.option(
    "--limit", "-n", type=click.IntRange(min=0), default=100, show_default=True, help="Pages."
)
@click.option("--host", metavar="H", help="Only pages of this host[:port].")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
@click.pass_obj
def due(options: _Options, limit: int, host: str | None, as_json: bool) -> None:
    """List the pages most likely to have changed since their last fetch: fetch these next.

    Each with its estimated change rate (changes per day), the probability it changed since
    it was last seen, and the changes expected in that time (docs/scheduling.md).
    """
    with options.watch() as watch:
        pages = watch.due(limit, host=host)
    if as_json:
        _echo_json([_due_json(p) for p in pages])
        return
    if not pages:
        click.echo("no pages stored" + (f" for host {host}" if host else ""))
        return
    table = Table(title="due for a fetch, most likely changed first", box=box.SIMPLE_HEAVY)
    for column in ("url", "last seen", "rate/day", "P(changed)", "expected changes"):
        table.add_column(column, justify="left" if column in ("url", "last seen") else "right")
    for p in pages:
        table.add_row(
            _cell(p.url or p.url_digest.hex()),
            _cell(p.last_seen.isoformat(timespec="seconds")),
            _cell(f"{p.rate_per_day:.3g}"),
            _cell(f"{p.probability:.3f}"),
            _cell(f"{p.expected_changes:.2f}"),
        )
    _console().print(table)


def _due_json(p: DuePage) -> dict[str, Any]:
    return {
        "url": p.url,
        "url_digest": p.url_digest.hex(),
        "host": p.host,
        "last_seen": _iso(p.last_seen),
        "rate_per_day": p.rate_per_day,
        "probability": p.probability,
        "expected_changes": p.expected_changes,
    }


@main.command()
@click.argument("url")
@click.option("--from", "from_version", type=click.IntRange(min=0), help="Older version (0: none).")
@click.option("--to", "to_version", type=click.IntRange(min=1), help="Newer version.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of the diff.")
@click.pass_obj
def diff(
    options: _Options,
    url: str,
    from_version: int | None,
    to_version: int | None,
    as_json: bool,
) -> None:
    """Show what changed in the text of URL between two versions (default: previous → current).

    Needs the texts: they are kept only with CHANGEWATCH_STORE_TEXT=1 when a version is seen.
    """
    canonicalise(url, options.settings().canon_policy)  # a bad URL fails before any store opens
    with options.watch() as watch:
        result = watch.diff(url, from_version, to_version)
    if as_json:
        _echo_json(
            {
                "url": result.url,
                "from_version": result.from_version,
                "to_version": result.to_version,
                "diff": result.lines,
            }
        )
    elif not result.lines:
        click.echo(
            f"versions {result.from_version} and {result.to_version} of {result.url} "
            "have the same text"
        )
    else:
        for line in result.lines:
            click.echo(line)


main.add_command(metrics)
# The sitemap reconciliation job lives in its own module (docs/reconcile.md).
from changewatch.cli_reconcile import reconcile_command  # noqa: E402

main.add_command(reconcile_command)
