"""Every query in docs/sql.md runs on Postgres (and SQLite unless tagged postgres-only), on a
store filled through the public API; many results are checked, and the documented columns
of the views are the views' real columns."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.store.tables import metadata
from changewatch.store.views import HISTORY_VIEW, VIEW_NAMES

from .._history_data import ABOUT, ARTICLE, FLIP, MINOR, NEWS, SHOP, STATIC, STEADY, populate

if TYPE_CHECKING:
    from conftest import Clock

DOC = Path(__file__).resolve().parents[3] / "docs" / "sql.md"


@dataclass(frozen=True)
class Query:
    name: str
    sql: str
    postgres_only: bool
    sqlite_only: bool


def _queries() -> list[Query]:
    found = []
    for block in re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        name = re.search(r"^-- name: (\S+)$", block, re.M)
        assert name, f"a query in docs/sql.md has no '-- name:' line:\n{block}"
        tags = set(re.findall(r"^-- (postgres-only|sqlite-only)$", block, re.M))
        found.append(Query(name.group(1), block, "postgres-only" in tags, "sqlite-only" in tags))
    return found


def _for(dialect: str) -> dict[str, Query]:
    """The query of each name on ``dialect``: the sqlite-only spelling wins on SQLite."""
    chosen: dict[str, Query] = {}
    for q in _queries():
        wanted = not q.sqlite_only if dialect == "postgresql" else not q.postgres_only
        if wanted and (q.sqlite_only or q.name not in chosen):
            chosen[q.name] = q
    return chosen


def _f(value: Any) -> float | None:
    return None if value is None else float(value)


def _check_changed_this_week(rows: list[Any]) -> None:
    assert [(r.url, r.version_no, r.reverted_to) for r in rows] == [(MINOR, 2, None), (FLIP, 4, 2)]


def _check_volatile(rows: list[Any]) -> None:
    assert [(r.url, r.change_count) for r in rows] == [(FLIP, 3), (ARTICLE, 1), (MINOR, 1)]


def _check_hosts_by_rate(rows: list[Any]) -> None:
    assert [(r.host, _f(r.changes_per_page)) for r in rows] == [
        (SHOP, 1.33),
        (NEWS, 1.0),
        (STATIC, 0.0),
    ]


def _check_flip_flops(rows: list[Any]) -> None:
    assert [(r.url, r.reversions, r.versions_returned_to, r.reverted_versions) for r in rows] == [
        (FLIP, 2, 2, "3->1, 4->2")
    ]


def _check_new_per_day(rows: list[Any]) -> None:
    assert {r.host: r.new_pages for r in rows} == {SHOP: 3, NEWS: 1, STATIC: 1}
    assert len({str(r.day) for r in rows}) == 1


def _check_minor_share(rows: list[Any]) -> None:
    assert [(r.host, r.minor, r.changed, _f(r.minor_share)) for r in rows] == [
        (NEWS, 0, 1, 0.0),
        (SHOP, 1, 3, 0.25),
    ]


def _check_unchanged_30(rows: list[Any]) -> None:
    assert [(r.url, r.fetch_count) for r in rows] == [(STEADY, 4), (ABOUT, 2)]


def _check_between(rows: list[Any]) -> None:
    assert [(r.url, r.intervals, _f(r.mean_days)) for r in rows] == [
        (FLIP, 3, 11.67),
        (MINOR, 1, 38.0),
        (ARTICLE, 1, 39.5),
    ]


def _check_fetches_per_change(rows: list[Any]) -> None:
    assert [(r.host, r.fetches, r.changes, _f(r.fetches_per_change)) for r in rows] == [
        (NEWS, 2, 1, 2.0),
        (SHOP, 10, 4, 2.5),
        (STATIC, 2, 0, None),
    ]


def _check_today(rows: list[Any]) -> None:
    assert [(r.host, r.changes_last_1_day, r.changes_last_7_days) for r in rows] == [(NEWS, 1, 1)]


def _check_median(rows: list[Any]) -> None:
    assert [(r.host, r.measured_intervals, _f(r.median_days)) for r in rows] == [
        (SHOP, 4, 13.0),
        (NEWS, 1, 39.5),
    ]


def _check_latest_change(rows: list[Any]) -> None:
    assert {r.url: (r.version_no, r.reverted_to) for r in rows} == {
        FLIP: (4, 2),
        MINOR: (2, None),
        ARTICLE: (2, None),
    }


def _check_history(rows: list[Any]) -> None:
    assert [(r.version_no, r.reverted_to) for r in rows] == [(1, None), (2, None), (3, 1), (4, 2)]
    assert rows[0].content_sha256 == rows[2].content_sha256
    assert re.fullmatch(r"[0-9a-f]{64}", rows[0].content_sha256)


def _check_empty(rows: list[Any]) -> None:
    assert rows == []


def _check_moving_average(rows: list[Any]) -> None:
    assert sum(r.changes for r in rows) == 4  # days -20, -5, -2 and -0.5


def _check_due(rows: list[Any]) -> None:
    # The history's clock is in the past: every page with an estimate is due by now.
    assert rows, "no page is due"
    assert [r.due_at for r in rows] == sorted(r.due_at for r in rows)
    assert all(r.changes_per_day is not None for r in rows)


CHECKS: dict[str, Callable[[list[Any]], None]] = {
    "changed_this_week_on_host": _check_changed_this_week,
    "most_volatile_pages": _check_volatile,
    "hosts_by_change_rate": _check_hosts_by_rate,
    "flip_flopping_pages": _check_flip_flops,
    "new_pages_per_day": _check_new_per_day,
    "minor_vs_changed": _check_minor_share,
    "unchanged_30_days": _check_unchanged_30,
    "time_between_changes": _check_between,
    "fetches_per_change": _check_fetches_per_change,
    "hosts_changed_today": _check_today,
    "median_days_between_changes": _check_median,
    "latest_change_per_page": _check_latest_change,
    "history_of_one_page": _check_history,
    "duplicate_content": _check_empty,
    "prune_preview": _check_empty,
    "daily_changes_moving_average": _check_moving_average,
    "due_for_refetch": _check_due,
}


def test_the_document_has_enough_named_questions() -> None:
    names = {q.name for q in _queries()}
    assert len(names) >= 12
    assert set(CHECKS) <= names
    assert set(_for("sqlite")) <= set(_for("postgresql"))  # every SQLite query has a Postgres one


def test_every_documented_query_runs_and_answers(watch: ChangeWatch, clock: Clock) -> None:
    populate(watch, clock)
    dialect = watch.store.dialect
    queries = _for(dialect)
    assert len(queries) >= (12 if dialect == "postgresql" else 10)
    checked = 0
    with watch.store.engine.connect() as conn:
        for name, query in queries.items():
            # exec_driver_sql: the documented text reaches the database untouched.
            sql = query.sql.replace("%", "%%") if dialect == "postgresql" else query.sql
            rows = list(conn.exec_driver_sql(sql).all())
            if name in CHECKS:
                try:
                    CHECKS[name](rows)
                except AssertionError as exc:
                    raise AssertionError(f"docs/sql.md query {name!r} on {dialect}: {exc}") from exc
                checked += 1
    assert checked >= 10


def _documented_columns(title: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = re.search(rf"^### {title}\n(.*?)(?=^##)", text, re.M | re.S)
    assert section, f"docs/sql.md has no section {title!r}"
    return re.findall(r"^\| `(\w+)` \|", section.group(1), re.M)


@pytest.mark.parametrize("view", [*VIEW_NAMES, HISTORY_VIEW])
def test_documented_view_columns_are_the_real_ones(watch: ChangeWatch, view: str) -> None:
    with watch.store.engine.connect() as conn:
        real = list(conn.execute(sa.text(f"SELECT * FROM {view} WHERE 1 = 0")).keys())
    assert _documented_columns(f"View `{view}`") == real


@pytest.mark.parametrize("table", ["page_snapshots", "page_versions"])
def test_documented_table_columns_exist(table: str) -> None:
    """Every documented column exists, in the schema's order (later migrations may add more)."""
    documented = _documented_columns(f"Table `{table}`")
    real = [c.name for c in metadata.tables[table].columns]
    assert documented == [c for c in real if c in documented]
    assert len(documented) >= 13


@pytest.mark.parametrize(
    "table",
    [
        "host_noise",
        "page_chrome_changes",
        "host_templates",
        "host_template_pages",
        "page_simhashes",
    ],
)
def test_new_tables_are_documented_whole(table: str) -> None:
    """host_noise, page_chrome_changes and the template tables (issue 20) and page_simhashes
    (issue 17): every column documented, in the schema's order."""
    assert _documented_columns(f"Table `{table}`") == [
        c.name for c in metadata.tables[table].columns
    ]


ROOT = DOC.parents[1]
TAGS = re.compile(r"^-- (postgres-only|sqlite-only)$", re.M)


def _doc_blocks() -> list[tuple[str, str, set[str]]]:
    """(file, block, tags) of every ```sql block of README.md and docs/*.md but docs/sql.md,
    whose named queries the tests above run one by one."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if path == DOC:
            continue
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"```sql\n(.*?)```", text, re.S):
            found.append((path.relative_to(ROOT).as_posix(), block, set(TAGS.findall(block))))
    return found


def _statements(block: str) -> list[str]:
    """The statements of a block: split at each ``;`` ending a line."""
    return [s.strip() for s in re.split(r";\s*$", block, flags=re.M) if s.strip("\n ")]


def test_sql_blocks_are_found_in_readme_and_docs() -> None:
    """README, docs/reconcile.md and docs/storage.md hold SQL blocks; each tag is one or none."""
    blocks = _doc_blocks()
    assert {f for f, _, _ in blocks} >= {"README.md", "docs/reconcile.md", "docs/storage.md"}
    assert all(len(tags) <= 1 for _, _, tags in blocks)


def _reconcile_with_a_stale_page(watch: ChangeWatch, clock: Clock) -> None:
    """One complete reconcile run of SHOP: FLIP listed with a lastmod 36 hours after its
    last fetch (stale), a page never stored (missing)."""
    from changewatch.reconcile import StaticSource, run_reconcile
    from changewatch.sitemaps.model import SitemapURL
    from changewatch.store.reconcile import ReconcileStore

    last_seen = watch.history(FLIP)[-1].last_seen
    sitemap = f"https://{SHOP}/sitemap.xml"
    listed = [
        SitemapURL(FLIP, last_seen + timedelta(hours=36), sitemap),
        SitemapURL(f"https://{SHOP}/never-fetched", None, sitemap),
    ]
    run_reconcile(
        StaticSource(listed, frozenset({SHOP})),
        store=ReconcileStore(watch.store),
        clock=clock,
        sites=[f"https://{SHOP}"],
        shrink_guard=None,
    )


def _check_behind(dialect: str, rows: list[Any]) -> None:
    """The stale query answers how far behind, in time: 1.5 days (SQLite once said 73)."""
    assert len(rows) == 1, rows
    behind = rows[0][1]
    days = behind / timedelta(days=1) if dialect == "postgresql" else float(behind)
    assert days == pytest.approx(1.5, abs=1e-3), behind


def test_every_sql_block_of_readme_and_docs_runs(watch: ChangeWatch, clock: Clock) -> None:
    """Every statement of every SQL block of README.md and docs/ runs on each database its tag
    allows (untagged: both), on a store with pages and a reconcile run; the stale query
    answers in days on SQLite, as an interval on Postgres."""
    populate(watch, clock)
    _reconcile_with_a_stale_page(watch, clock)
    dialect = watch.store.dialect
    skip = "sqlite-only" if dialect == "postgresql" else "postgres-only"
    ran = behind_checked = 0
    with watch.store.engine.connect() as conn:
        for where, block, tags in _doc_blocks():
            if skip in tags:
                continue
            for statement in _statements(block):
                sql = statement.replace("%", "%%") if dialect == "postgresql" else statement
                try:
                    rows = list(conn.exec_driver_sql(sql).all())
                except sa.exc.DBAPIError as exc:
                    raise AssertionError(
                        f"{where}: an SQL block fails on {dialect}:\n{statement}\n{exc}"
                    ) from exc
                if "how far behind the sitemap" in statement:
                    _check_behind(dialect, rows)
                    behind_checked += 1
                ran += 1
            conn.rollback()
    assert ran >= 12
    assert behind_checked == 1
