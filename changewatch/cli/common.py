"""What every ``changewatch`` command shares: the global options, output helpers, and the
one place errors are printed (passwords hidden)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from changewatch.config import Settings, load_settings, terminal_columns
from changewatch.errors import ChangewatchError
from changewatch.redact import redact_url, scrub, url_secret
from changewatch.schedule import parse_duration
from changewatch.seen import check_seen_url
from changewatch.values import Decision, Version
from changewatch.watch import ChangeWatch

__all__ = [
    "Column",
    "Options",
    "cell",
    "clean",
    "console",
    "decision_json",
    "duration_option",
    "echo_json",
    "echo_rules",
    "fields_table",
    "fitted_table",
    "iso",
    "kind_text",
    "positive_duration_option",
    "print_error",
    "secrets",
    "version_json",
    "versions_table",
    "warn_unusable_seen_set",
]

KIND_STYLES = {
    "new": "cyan",
    "unchanged": "dim",
    "minor": "yellow",
    "changed": "magenta",
    "gone": "red",
}
# SQLAlchemy appends a link to its error docs to every message.
_BACKGROUND_RE = re.compile(r"\s*\(Background on this error at: [^)]*\)")
_MAX_CAUSE_CHARS = 300


@dataclasses.dataclass(frozen=True, slots=True)
class Options:
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
        # A seen-set URL that cannot work is an error of every command, also of those that
        # never open the seen-set (it is opened lazily): no I/O, only its form is checked.
        check_seen_url(s.seen_url)
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
            learn_noise=s.learn_noise,
            learn_templates=s.learn_templates,
        )


def warn_unusable_seen_set(watch: ChangeWatch, seen_url: str, secrets: Sequence[str]) -> None:
    """For a command that does not need the seen-set: if it is a shared one (Redis) that
    cannot be used, say so on stderr — a warning, the command's own work is done. Local
    ``file:`` / ``memory:`` seen-sets are not opened (that would write the file)."""
    if seen_url.startswith(("file:", "memory:")):
        return
    hidden = [*secrets, *filter(None, [url_secret(seen_url)])]
    try:
        watch.seen.stats()
    except ChangewatchError as exc:
        click.echo(
            f"changewatch: warning: the seen-set ({clean(redact_url(seen_url), hidden)}) cannot "
            f"be used: {clean(str(exc), hidden)}",
            err=True,
        )


def secrets(ctx: click.Context) -> list[str]:
    """Database passwords that must not appear in what is printed."""
    urls = [ctx.params.get("database_url")]
    with contextlib.suppress(ChangewatchError):
        urls.append(load_settings().database_url)
    found = []
    for url in urls:
        password = url_secret(url) if url else None
        if password:
            found.append(password)
    return found


def clean(text: str, secrets: Sequence[str]) -> str:
    """One line, without SQLAlchemy's doc link and with every password hidden."""
    text = _BACKGROUND_RE.sub("", text)
    return scrub(" ".join(text.split()), secrets)


def print_error(exc: ChangewatchError, secrets: Sequence[str]) -> None:
    message = clean(str(exc), secrets)
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
        message = clean(str(cause), secrets)
        if len(message) > _MAX_CAUSE_CHARS:
            message = message[:_MAX_CAUSE_CHARS] + "…"
        if message not in shown:
            click.echo(
                f"  caused by: {name}: {message}" if message else f"  caused by: {name}", err=True
            )
            shown.add(message)
        cause = cause.__cause__


# -- output helpers ---------------------------------------------------------------------------


#: The width of tables piped to another program, unless ``COLUMNS`` says otherwise.
PIPED_WIDTH = 140


def console() -> Console:
    """stdout for tables: the terminal's width (or ``COLUMNS``); 140 columns when piped."""
    width = None if sys.stdout.isatty() else (terminal_columns() or PIPED_WIDTH)
    return Console(highlight=False, width=width)


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """A column of :func:`fitted_table`.

    ``keep``: never shortened or wrapped (a kind, a timestamp); ``fold``: wrapped onto more
    lines when narrow, never cut (a URL, a path); ``drop``: may be left out when the table is
    too wide, the highest first (0: never). Any other column wraps at its words.
    """

    header: str
    justify: Literal["left", "right"] = "left"
    keep: bool = False
    fold: bool = False
    drop: int = 0


#: The narrowest a folded column gets, and the cells each column costs beside its text
#: (one space of padding each side and a separator).
_MIN_FOLD_WIDTH, _COLUMN_OVERHEAD = 16, 3


def _least_width(column: Column, natural: int) -> int:
    if column.keep:
        return natural
    if column.fold:
        return min(natural, _MIN_FOLD_WIDTH)
    return min(natural, max(len(word) for word in column.header.split()))


def fitted_table(
    title: str | None,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Text]],
    width: int,
    **options: Any,
) -> Table:
    """A table that fits ``width`` without cutting what matters.

    Columns marked ``drop`` are left out, highest first, until the columns left fit at
    their narrowest; ``keep`` columns are never shortened, ``fold`` columns wrap; nothing is
    ever cut with an ellipsis.
    """
    naturals = [
        max([len(c.header), *(rows[r][i].cell_len for r in range(len(rows)))])
        for i, c in enumerate(columns)
    ]
    shown = list(range(len(columns)))

    def least() -> int:
        return 1 + sum(_least_width(columns[i], naturals[i]) + _COLUMN_OVERHEAD for i in shown)

    while least() > width:
        droppable = [i for i in shown if columns[i].drop]
        if not droppable:
            break
        shown.remove(max(droppable, key=lambda i: (columns[i].drop, i)))
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left", **options)
    for i in shown:
        c = columns[i]
        table.add_column(
            c.header,
            justify=c.justify,
            no_wrap=c.keep,
            overflow="fold",
            min_width=_least_width(c, naturals[i]),
        )
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    return table


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def echo_rules(
    title: str,
    columns: Sequence[Column],
    rows: list[dict[str, Any]],
    cells: Sequence[Sequence[Text]],
) -> None:
    """A table of learned rules (``noise list``, ``templates list``) fitted to the terminal,
    and a line counting them (``rows``: the rules as JSON-ready dicts, ``cells`` their cells)."""
    out = console()
    out.print(fitted_table(title, columns, cells, out.width))
    click.echo(f"{sum(1 for r in rows if r['learned_at'])} learned, {len(rows)} rules")


def kind_text(kind: str) -> Text:
    return Text(kind, style=KIND_STYLES.get(kind, ""))


def cell(value: object) -> Text:
    """A table cell as plain text: URLs and paths are never read as rich markup."""
    return Text("—" if value is None else str(value))


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def decision_json(d: Decision) -> dict[str, Any]:
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


def version_json(v: Version) -> dict[str, Any]:
    return {
        "version": v.version,
        "kind": v.kind,
        "distance": v.distance,
        "first_seen": iso(v.first_seen),
        "last_seen": iso(v.last_seen),
        "content_sha256": v.content_sha256.hex(),
        "raw_sha256": v.raw_sha256.hex(),
        "simhash": f"{v.simhash:016x}",
        "text_length": v.text_length,
        "reverted_to": v.reverted_to,
    }


_VERSION_COLUMNS = (
    Column("version", "right", keep=True),
    Column("kind", keep=True),
    Column("distance", "right", drop=2),
    Column("first seen", keep=True),
    Column("last seen", keep=True),
    Column("content", drop=1),
)


def versions_table(versions: Sequence[Version], title: str, width: int) -> Table:
    """A page's versions: kind and times in full at any width (content, distance dropped)."""
    rows = [
        [
            cell(v.version),
            kind_text(v.kind),
            cell(v.distance),
            cell(v.first_seen.isoformat(timespec="seconds")),
            cell(v.last_seen.isoformat(timespec="seconds")),
            cell(v.content_sha256.hex()[:12]),
        ]
        for v in versions
    ]
    return fitted_table(title, _VERSION_COLUMNS, rows, width)


def fields_table(rows: Mapping[str, object], title: str) -> Table:
    """Name and value per line; a long value (a URL, a hash) wraps, never cut."""
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left", show_header=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for name, value in rows.items():
        table.add_row(name, kind_text(str(value)) if name == "kind" else cell(value))
    return table


def duration_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Any:
    """A click callback: the option's value as a :class:`~datetime.timedelta`
    (:func:`changewatch.schedule.parse_duration`), or a usage error naming the option."""
    return _duration(value, positive=False)


def positive_duration_option(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> Any:
    """:func:`duration_option` for an interval, which must be longer than zero."""
    return _duration(value, positive=True)


def _duration(value: str | None, *, positive: bool) -> timedelta | None:
    if value is None:
        return None
    try:
        return parse_duration(value, positive=positive)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
