"""``changewatch demo``: the bundled site crawled twice, every decision shown."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from changewatch.cli.common import (
    Column,
    cell,
    console,
    echo_json,
    fitted_table,
    kind_text,
    version_json,
    versions_table,
)
from changewatch.demo import DemoReport, run_demo

__all__ = ["demo"]

#: Page and kind are never cut; at 80 columns the least telling columns are left out.
_CRAWL_COLUMNS = (
    Column("page", fold=True),
    Column("status", "right", keep=True),
    Column("kind", keep=True),
    Column("distance", "right", drop=2),
    Column("duplicate of", fold=True, drop=4),
    Column("decided by", drop=3),
    Column("bytes", "right", drop=5),
    Column("what changed", drop=1),
)


@click.command()
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
    out = console()

    def progress(line: str) -> None:  # "demo site served at …" first, then each step
        if not as_json:
            out.print(Text(line, style="dim"))

    if keep is None:
        with tempfile.TemporaryDirectory(prefix="changewatch-demo-") as tmp:
            report = run_demo(Path(tmp) / "demo", progress=progress)
    else:
        report = run_demo(keep, progress=progress)
    if as_json:
        echo_json(_report_json(report, kept=keep is not None))
    else:
        for renderable in _report_tables(report, kept=keep is not None, width=out.width):
            out.print(renderable)


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
            {"path": h.path, "url": h.url, "versions": [version_json(v) for v in h.versions]}
            for h in report.histories
        ],
    }


def _report_tables(report: DemoReport, *, kept: bool, width: int) -> Iterator[Table | Text]:
    for crawl in report.crawls:
        rows = [
            [
                cell(p.path),
                cell(p.status),
                kind_text(p.kind),
                cell(p.distance),
                cell(p.duplicate_of),
                cell(p.decided_by),
                cell(p.size or None),
                cell(p.change),
            ]
            for p in crawl.pages
        ]
        yield fitted_table(f"Crawl {crawl.number}: {crawl.title}", _CRAWL_COLUMNS, rows, width)
        counts = ", ".join(f"{n} {kind}" for kind, n in crawl.counts().items())
        yield Text(f"crawl {crawl.number}: {len(crawl.pages)} pages: {counts}\n")
    for page in report.histories:
        yield versions_table(page.versions, f"History of {page.path}", width)
    where = f"kept in {report.workdir}" if kept else "in a temporary directory, now removed"
    yield Text(f"store {report.database_url.rpartition('/')[2]} and seen-sets were {where}")
