"""``changewatch reconcile``: the sitemap reconciliation job on the command line.

Parse the options, open the store, lock the sites, walk their sitemaps, reconcile, print,
exit. docs/reconcile.md documents the outputs and the exit statuses:

* 0 — the run finished (sitemaps that failed are listed as errors, and their hosts get no
  vanished count), or it was skipped because another run of the same site holds the lock,
  or an ``--every`` loop was stopped by SIGINT/SIGTERM;
* 1 — an error: for some site argument no sitemap could be read at all, the store failed,
  the settings are invalid, or a single run was interrupted;
* 2 — a usage error (unknown option, bad ``--every`` duration, an argument that is no URL).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import IO, Any

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from changewatch.cli.common import Column, Options, fitted_table, positive_duration_option
from changewatch.cli.common import console as common_console
from changewatch.config import Settings
from changewatch.errors import ChangewatchError, InvalidURLError
from changewatch.reconcile.guard import DEFAULT_MAX_VANISHED_SHARE, ShrinkGuard
from changewatch.reconcile.index import DEFAULT_MAX_ROWS
from changewatch.reconcile.job import run_reconcile
from changewatch.reconcile.plan import site_host
from changewatch.reconcile.sources import (
    DEFAULT_HOST_TIME_LIMIT_S,
    DEFAULT_RUN_TIME_LIMIT_S,
    WalkSource,
)
from changewatch.reconcile.values import HostResult, ReconcileResult
from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.model import Limits
from changewatch.store import SnapshotStore
from changewatch.store.reconcile import ReconcileStore

__all__ = ["reconcile_command"]

_DEFAULTS = Limits()


class _Stop:
    """Set by SIGINT/SIGTERM; a run polls it between batches, the loop sleeps on it."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def __call__(self) -> bool:
        return self.event.is_set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        def handler(signum: int, _frame: FrameType | None) -> None:
            click.echo(f"changewatch: {signal.Signals(signum).name}: stopping", err=True)
            self.event.set()

        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)


class _RecrawlFile:
    """Lines written to a temporary file beside ``path``, renamed over it on success."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        self._tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self._handle: IO[str] | None = None

    def __enter__(self) -> _RecrawlFile:
        try:
            self._handle = open(self._tmp, "w", encoding="utf-8")
        except OSError as exc:
            raise click.FileError(str(self.path), hint=exc.strerror) from exc
        return self

    def write(self, urls: Sequence[str]) -> None:
        assert self._handle is not None
        self._handle.writelines(f"{url}\n" for url in urls)
        self.count += len(urls)

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        assert self._handle is not None
        if kind is None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            os.replace(self._tmp, self.path)
        else:
            self._handle.close()
            self._tmp.unlink(missing_ok=True)


@click.command("reconcile")
@click.argument("sites", nargs=-1, required=True, metavar="SITE_OR_SITEMAP_URL...")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per run.")
@click.option(
    "--recrawl-file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    metavar="PATH",
    help="Write the missing and stale URLs to PATH, one per line (replaced atomically).",
)
@click.option(
    "--every",
    metavar="DURATION",
    callback=positive_duration_option,
    help="Run again every DURATION (30m, 6h, 1d…) until SIGINT or SIGTERM.",
)
@click.option(
    "--allow-private",
    is_flag=True,
    help="Allow loopback and private addresses (tests, intranets); URLs are still checked.",
)
@click.option(
    "--max-urls",
    type=click.IntRange(min=1),
    default=_DEFAULTS.max_urls,
    show_default=True,
    help="URLs per sitemap.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=_DEFAULTS.max_bytes,
    show_default=True,
    help="Bytes per sitemap, after decompression.",
)
@click.option(
    "--max-depth",
    type=click.IntRange(min=1),
    default=_DEFAULTS.max_depth,
    show_default=True,
    help="Deepest chain of sitemap indexes followed.",
)
@click.option(
    "--memory-pages",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_ROWS,
    show_default=True,
    help="Stored pages held in memory (41 bytes each, over all hosts; Postgres); hosts "
    "that do not fit are looked up in batches. 0: always look up in batches.",
)
@click.option(
    "--host-time-limit",
    metavar="DURATION",
    default=f"{DEFAULT_HOST_TIME_LIMIT_S:.0f}s",
    show_default=True,
    callback=positive_duration_option,
    help="Wall time one host's robots.txt and sitemaps may take; past it the host is "
    "incomplete (no vanished).",
)
@click.option(
    "--run-time-limit",
    metavar="DURATION",
    default=f"{DEFAULT_RUN_TIME_LIMIT_S:.0f}s",
    show_default=True,
    callback=positive_duration_option,
    help="Wall time the walks of one run may take together.",
)
@click.option(
    "--max-vanished-share",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=DEFAULT_MAX_VANISHED_SHARE,
    show_default=True,
    help="Shrink guard: withhold a host's vanished pages when more than this share of its "
    "stored pages would newly vanish, or its listing shrank by more since its last run.",
)
@click.option(
    "--force-vanished",
    is_flag=True,
    help="Report vanished pages even where the shrink guard does not believe the listing.",
)
@click.option("--no-record", is_flag=True, help="Do not record the run in reconcile_runs.")
@click.pass_obj
def reconcile_command(
    options: Options,
    sites: tuple[str, ...],
    as_json: bool,
    recrawl_file: Path | None,
    every: timedelta | None,
    allow_private: bool,
    max_urls: int,
    max_bytes: int,
    max_depth: int,
    memory_pages: int,
    host_time_limit: timedelta,
    run_time_limit: timedelta,
    max_vanished_share: float,
    force_vanished: bool,
    no_record: bool,
) -> None:
    """Compare the sitemaps of each site with the store: missing, stale, vanished, fresh.

    SITE_OR_SITEMAP_URL is a site (https://example.com/: its robots.txt names the sitemaps,
    else /sitemap.xml) or a sitemap or sitemap index URL. Exit status 0 on success (broken
    sitemaps are listed as errors), 1 on error, 2 on a usage error; see docs/reconcile.md.
    """
    settings = options.settings()
    hosts = []
    for site in sites:
        try:
            hosts.append(site_host(site, settings.canon_policy))
        except InvalidURLError as exc:
            raise click.BadParameter(str(exc), param_hint="SITE_OR_SITEMAP_URL") from exc
    job = _Job(
        options=options,
        settings=settings,
        sites=list(sites),
        hosts=sorted(set(hosts)),
        limits=Limits(max_urls=max_urls, max_bytes=max_bytes, max_depth=max_depth),
        allow_private=allow_private,
        record=not no_record,
        recrawl_file=recrawl_file,
        as_json=as_json,
        every=every,
        memory_pages=memory_pages,
        guard=_Guard(
            host_s=host_time_limit.total_seconds(),
            run_s=run_time_limit.total_seconds(),
            shrink=ShrinkGuard(max_share=max_vanished_share),
            force=force_vanished,
        ),
    )
    stop = _Stop()
    with stop.installed():
        if every is None:
            code = job.run(stop)
            if stop():
                raise ChangewatchError("interrupted: the run stopped before it finished")
            sys.exit(code)
        _loop(job, every, stop)


def _loop(job: _Job, every: timedelta, stop: _Stop) -> None:
    """Run at fixed slots ``start + k·every``; a run longer than ``every`` skips the slots it
    overran. Errors of one run are reported and the loop goes on."""
    start = time.monotonic()
    interval = every.total_seconds()
    while not stop():
        try:
            job.run(stop)
        except ChangewatchError as exc:
            click.echo(f"changewatch: error: {exc}", err=True)
        slots = int((time.monotonic() - start) // interval) + 1
        stop.event.wait(max(0.0, start + slots * interval - time.monotonic()))


@dataclass(frozen=True, slots=True)
class _Guard:
    """The time limits and the shrink guard of a run."""

    host_s: float = DEFAULT_HOST_TIME_LIMIT_S
    run_s: float = DEFAULT_RUN_TIME_LIMIT_S
    shrink: ShrinkGuard = field(default_factory=ShrinkGuard)
    force: bool = False


class _Job:
    """One configured reconcile, runnable once per slot."""

    def __init__(
        self,
        *,
        options: Options,
        settings: Settings,
        sites: list[str],
        hosts: list[str],
        limits: Limits,
        allow_private: bool,
        record: bool,
        recrawl_file: Path | None,
        as_json: bool,
        every: timedelta | None,
        memory_pages: int = DEFAULT_MAX_ROWS,
        guard: _Guard | None = None,
    ) -> None:
        self.options = options
        self.settings = settings
        self.sites = sites
        self.hosts = hosts
        self.limits = limits
        self.allow_private = allow_private
        self.record = record
        self.recrawl_file = recrawl_file
        self.as_json = as_json
        self.every = every
        self.memory_pages = memory_pages
        self.guard = guard or _Guard()

    def arguments(self) -> str:
        limits = self.limits
        return json.dumps(
            {
                "max_urls": limits.max_urls,
                "max_bytes": limits.max_bytes,
                "max_depth": limits.max_depth,
                "allow_private": self.allow_private,
                "every": None if self.every is None else int(self.every.total_seconds()),
                "memory_pages": self.memory_pages,
                "host_time_limit_s": self.guard.host_s,
                "run_time_limit_s": self.guard.run_s,
                "max_vanished_share": self.guard.shrink.max_share,
                "force_vanished": self.guard.force,
                "url_policy": self.settings.url_policy,
                "recrawl_file": None if self.recrawl_file is None else str(self.recrawl_file),
            },
            sort_keys=True,
        )

    def run(self, stop: _Stop) -> int:
        """One run; the exit status it deserves."""
        with self.options.watch() as watch:
            if not isinstance(watch.store, SnapshotStore):  # built by the CLI from a URL
                raise ChangewatchError("reconcile needs the SQL snapshot store")
            store = ReconcileStore(watch.store)
            with store.site_locks(self.hosts) as busy:
                if busy:
                    return self._skipped(store, busy)
                with contextlib.ExitStack() as stack:
                    recrawl = (
                        None
                        if self.recrawl_file is None
                        else stack.enter_context(_RecrawlFile(self.recrawl_file))
                    )
                    result = self._reconcile(store, recrawl, stop)
        _count_findings(result)
        _print_result(result, self, recrawl)
        for host in result.hosts.values():
            if host.shrink is not None and not host.vanished_checked:
                click.echo(
                    f"changewatch: warning: vanished withheld for {host.host}: {host.shrink} "
                    "(--force-vanished reports them)",
                    err=True,
                )
        if result.status == "failed":
            unread = [h.host for h in result.hosts.values() if h.errors and not h.sitemaps]
            click.echo(
                f"changewatch: error: no sitemap could be read for {', '.join(unread)}", err=True
            )
            return 1 if self.every is None else 0
        return 0

    def _reconcile(
        self, store: ReconcileStore, recrawl: _RecrawlFile | None, stop: _Stop
    ) -> ReconcileResult:
        with (
            SafeClient(allow_private=self.allow_private) as client,
            _progress_display(quiet=self.as_json) as show,
        ):
            source = WalkSource(
                self.sites,
                client,
                limits=self.limits,
                canon_policy=self.settings.canon_policy,
                on_sitemap=show.sitemap,
                host_time_limit=self.guard.host_s,
                run_time_limit=self.guard.run_s,
            )
            return run_reconcile(
                source,
                store=store,
                clock=lambda: datetime.now(UTC),
                sites=self.sites,
                url_policy=self.settings.url_policy,
                canon_policy=self.settings.canon_policy,
                record=self.record,
                arguments=self.arguments(),
                runner=(socket.gethostname(), os.getpid()),
                recrawl=None if recrawl is None else recrawl.write,
                should_stop=stop,
                progress=show.entries,
                max_host_rows=self.memory_pages,
                shrink_guard=self.guard.shrink,
                force_vanished=self.guard.force,
            )

    def _skipped(self, store: ReconcileStore, busy: Sequence[str]) -> int:
        if self.record:
            store.start_run(
                now=datetime.now(UTC),
                sites=self.sites,
                arguments=self.arguments(),
                runner_host=socket.gethostname(),
                runner_pid=os.getpid(),
                status="skipped",
            )
        names = ", ".join(busy)
        click.echo(
            f"changewatch: skipped: another reconcile of {names} is running (it holds the lock)",
            err=True,
        )
        if self.as_json:
            click.echo(json.dumps({"status": "skipped", "locked": list(busy), "sites": self.sites}))
        return 0


class _Display:
    """Progress callbacks: a rich spinner on a terminal — sitemaps read, URLs listed and
    reconciled, URLs per second — and nothing otherwise."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._task = None if progress is None else progress.add_task("reading sitemaps", total=None)
        self._sitemaps = 0
        self._listed = 0
        self._entries = 0
        self._started = time.monotonic()

    def sitemap(self, url: str, urls: int) -> None:
        del url
        self._sitemaps += 1
        self._listed += urls
        self._update()

    def entries(self, done: int) -> None:
        self._entries = done
        self._update()

    def _update(self) -> None:
        if self._progress is not None and self._task is not None:
            rate = self._entries / max(time.monotonic() - self._started, 1e-3)
            self._progress.update(
                self._task,
                description=f"{self._sitemaps} sitemaps read, {self._listed:,} URLs listed, "
                f"{self._entries:,} reconciled ({rate:,.0f} URLs/s)",
            )


@contextlib.contextmanager
def _progress_display(*, quiet: bool) -> Iterator[_Display]:
    """A progress line on stderr when it is a terminal, unless ``quiet`` (``--json``)."""
    if quiet or not sys.stderr.isatty():
        yield _Display(None)
        return
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with progress:
        yield _Display(progress)


# -- output ------------------------------------------------------------------------------------


def _count_findings(result: ReconcileResult) -> None:
    """Count the run's findings in Prometheus when the ``metrics`` extra is installed
    (scraped from a ``--every`` job in multiprocess mode, see docs/operations.md)."""
    try:
        from changewatch.metrics import record_reconcile
    except ImportError:  # prometheus_client is an optional extra
        return
    record_reconcile(result.totals())


def result_json(result: ReconcileResult, sites: Sequence[str]) -> dict[str, Any]:
    """The ``--json`` object: integer totals, per-host details and the errors."""
    data: dict[str, Any] = {"status": result.status, "run_id": result.run_id, "sites": list(sites)}
    data |= result.totals()
    data["url_policy"] = result.url_policy
    data["hosts"] = {name: _host_json(host) for name, host in result.hosts.items()}
    data["errors"] = [{"sitemap": e.sitemap, "error": e.error} for e in result.errors]
    return data


def _host_json(host: HostResult) -> dict[str, Any]:
    trust = host.trust
    return {
        **host.counts(),
        "listed": host.listed,
        "invalid": host.invalid,
        "duplicates": host.duplicates,
        "sitemaps": host.sitemaps,
        "stored": host.stored,
        "vanished_checked": host.vanished_checked,
        "vanished_withheld": host.vanished_withheld,
        "shrink_guard": host.shrink,
        "lastmod_trust": {
            "comparable": trust.comparable,
            "agrees": trust.agrees,
            "ahead": trust.ahead,
            "behind": trust.behind,
            "trust": trust.trust,
        },
        "errors": [{"sitemap": e.sitemap, "error": e.error} for e in host.errors],
    }


#: Host wraps; at 80 columns the lastmod trust goes first.
_RESULT_COLUMNS = (
    Column("host", fold=True),
    *(Column(c, "right") for c in ("listed", "missing", "stale", "vanished", "fresh")),
    Column("lastmod trust", "right", drop=1),
    Column("errors", "right"),
)


def _vanished_cell(host: HostResult) -> str:
    if host.vanished_checked:
        return str(host.vanished) + (" (forced)" if host.shrink else "")
    return "withheld" if host.shrink else "not checked"


def _trust_cell(host: HostResult) -> str:
    trust = host.trust
    if trust.trust is None:
        return "—"
    return f"{trust.trust:.0%} of {trust.comparable}"


def _print_result(result: ReconcileResult, job: _Job, recrawl: _RecrawlFile | None) -> None:
    # changewatch.sitemaps.fetch refuses private and loopback addresses with this wording.
    if not job.allow_private and any("refused address of" in e.error for e in result.errors):
        click.echo(
            "changewatch: hint: pass --allow-private to reconcile a site on a private or "
            "loopback address",
            err=True,
        )
    if job.as_json:
        click.echo(json.dumps(result_json(result, job.sites), ensure_ascii=False))
        return
    console = common_console()
    rows = [
        [
            Text(host.host),
            Text(str(host.listed)),
            Text(str(host.missing)),
            Text(str(host.stale)),
            Text(_vanished_cell(host)),
            Text(str(host.fresh)),
            Text(_trust_cell(host)),
            Text(str(len(host.errors))),
        ]
        for host in result.hosts.values()
    ]
    console.print(fitted_table("sitemap reconciliation", _RESULT_COLUMNS, rows, console.width))
    totals = result.totals()
    console.print(
        Text(
            f"{result.status}: {totals['missing']} missing, {totals['stale']} stale, "
            f"{totals['vanished']} vanished, {totals['fresh']} fresh"
            + (f" (run {result.run_id} in reconcile_runs)" if result.run_id is not None else "")
        )
    )
    for error in result.errors:
        console.print(Text(f"error: {error.sitemap}: {error.error}", style="red"))
    for host in result.hosts.values():
        if host.vanished_withheld is not None:
            console.print(Text(f"vanished {host.host}: {host.vanished_withheld}", style="dim"))
        elif host.shrink is not None:
            console.print(Text(f"vanished {host.host}: forced past: {host.shrink}", style="dim"))
    if result.url_policy == "none" and totals["vanished"]:
        console.print(
            Text("url policy 'none': vanished pages are recorded by digest only", style="dim")
        )
    if recrawl is not None:
        console.print(Text(f"{recrawl.count} URLs to recrawl written to {recrawl.path}"))
