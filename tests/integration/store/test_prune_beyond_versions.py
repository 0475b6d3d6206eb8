"""``prune`` removes the SimHashes no stored page holds (never one a page holds) and the chrome
changes seen before its cut-off."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from changewatch import ChangeWatch
from changewatch.cli import main
from changewatch.store.simhashes import prune_simhashes
from changewatch.store.tables import page_chrome_changes, page_simhashes

from .._pages import page, words
from .._race_workers import run_processes
from .._simhash_prune_workers import LACKING, dispatch, flipping_writer, simhash_pruner

if TYPE_CHECKING:
    from conftest import Clock


def _count(watch: ChangeWatch) -> int:
    with watch.store.engine.connect() as conn:
        return int(
            conn.execute(sa.select(sa.func.count()).select_from(page_simhashes)).scalar_one()
        )


def _lacking(watch: ChangeWatch) -> int:
    with watch.store.engine.connect() as conn:
        return int(conn.execute(LACKING).scalar_one())


def test_prune_removes_the_simhashes_no_page_holds(watch: ChangeWatch) -> None:
    """30 pages stored in 3 versions leave 90 SimHashes, 60 of them held by no page: a dry
    run counts them, prune removes them (in batches smaller than the table), the 30 held
    stay, and near-duplicate search still finds every page."""
    urls = [f"https://e.example/{i}" for i in range(30)]
    for version in range(3):
        watch.should_parse_many(
            [(u, page(words(i * 10 + version, 80))) for i, u in enumerate(urls)]
        )
    assert _count(watch) == 90
    assert watch.prune(1, timedelta(0), dry_run=True).simhashes_removed == 60
    assert _count(watch) == 90
    assert prune_simhashes(watch.store.engine, batch_size=7) == 60
    assert _count(watch) == 30
    assert _lacking(watch) == 0
    for i, url in enumerate(urls):
        fp = watch.should_parse(url, page(words(i * 10 + 2, 80)))
        assert fp.kind == "unchanged"
        found = watch.near_duplicates(fp.simhash or 0, 0)
        assert fp.url_digest in {n.url_digest for n in found}
    assert watch.prune(1, timedelta(0)).simhashes_removed == 0


def test_a_pruned_simhash_comes_back_with_a_page_that_holds_it(watch: ChangeWatch) -> None:
    """A page returning to an earlier text whose SimHash was pruned adds it again."""
    url = "https://e.example/back"
    first = watch.should_parse(url, page(words(1, 80)))
    watch.should_parse(url, page(words(2, 80)))
    assert watch.prune(1, timedelta(0)).simhashes_removed == 1
    back = watch.should_parse(url, page(words(1, 80)))
    assert back.kind == "changed"
    assert back.simhash == first.simhash
    assert _lacking(watch) == 0
    assert back.url_digest in {n.url_digest for n in watch.near_duplicates(back.simhash or 0, 0)}


def test_prune_json_reports_the_simhashes_removed(
    make_database_url: Callable[..., str],
) -> None:
    url = make_database_url()
    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        watch.should_parse("https://e.example/a", page(words(1, 80)))
        watch.should_parse("https://e.example/a", page(words(2, 80)))
    runner = CliRunner()
    args = ["--database-url", url, "prune", "--keep-versions", "1", "--older-than", "0s"]
    dry = runner.invoke(main, [*args, "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["simhashes_removed"] == 1
    done = runner.invoke(main, args)
    assert done.exit_code == 0, done.output
    assert "1 SimHash no stored page holds was removed" in done.output


@pytest.mark.slow
def test_simhash_pruning_beside_writers_never_loses_a_held_simhash(
    make_database_url: Callable[..., str],
) -> None:
    """4 writers flipping 24 pages between 3 contents while 2 processes prune SimHashes in
    batches of 3: after every batch of every writer, and at the end, each stored page's
    SimHash is in page_simhashes (a prune that deleted a value a writer had just found
    there would leave its page unfindable by near-duplicate search), and the pruners did
    remove values that fell out of use."""
    url = make_database_url()
    ChangeWatch(database_url=url, seen_url="memory:").close()  # schema first (SQLite)
    jobs = [(flipping_writer, (url, seed, 25)) for seed in range(4)]
    jobs += [(simhash_pruner, (url, 6.0))] * 2
    outcomes = run_processes(dispatch, jobs)
    lacking = [n for o in outcomes if isinstance(o, list) for n in o]
    removed = sum(o for o in outcomes if isinstance(o, int))
    assert len(lacking) == 4 * 25
    assert set(lacking) == {0}
    assert removed > 0
    with ChangeWatch(database_url=url, seen_url="memory:") as watch:
        assert _lacking(watch) == 0


def _chrome_page(story: int, banner: int) -> str:
    return (
        f"<html><body><aside>Banner {banner} of the week</aside>"
        f"<main><p>{' '.join(words(story, 60))}</p></main></body></html>"
    )


def _chrome_rows(watch: ChangeWatch) -> list[tuple[bool, bool]]:
    c = page_chrome_changes.c
    with watch.store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(c.content_changed, c.chrome_changed).order_by(c.seen_at)
        ).all()
    return [(bool(a), bool(b)) for a, b in rows]


def test_prune_removes_chrome_changes_seen_before_the_cutoff(
    watch: ChangeWatch, clock: Clock
) -> None:
    """A day apart: 3 chrome-only changes, a content change with a chrome change (version
    2), 2 more chrome-only changes, then a content change (version 3) with one. A prune of
    what is older than 2.5 days, keeping 2 versions, removes the 3 chrome-only rows before
    its cut-off and keeps the one beside version 2 (a kept version); 3 days later, keeping
    1, it removes version 2 and its chrome row with the 2 chrome-only rows left before the
    new cut-off. Each dry run counts what the prune then removes; page_history lists the rest.
    """
    url = "https://e.example/chrome"
    watch.should_parse(url, _chrome_page(1, 0))
    fetches = [(1, 1), (1, 2), (1, 3), (2, 4), (2, 5), (2, 6), (3, 7)]
    for story, banner in fetches:
        clock.advance(86400)
        decision = watch.should_parse(url, _chrome_page(story, banner))
        assert decision.chrome_changed
    only, beside = (False, True), (True, True)
    assert _chrome_rows(watch) == [only] * 3 + [beside] + [only] * 2 + [beside]
    assert watch.prune(2, timedelta(days=2.5), dry_run=True).chrome_changes_removed == 3
    report = watch.prune(2, timedelta(days=2.5))
    assert (report.removed, report.chrome_changes_removed) == (1, 3)  # version 1 too
    assert _chrome_rows(watch) == [beside, only, only, beside]
    clock.advance(3 * 86400)
    assert watch.prune(1, timedelta(days=2.5), dry_run=True).chrome_changes_removed == 3
    report = watch.prune(1, timedelta(days=2.5))
    assert (report.removed, report.chrome_changes_removed) == (1, 3)
    assert _chrome_rows(watch) == [beside]
    with watch.store.engine.connect() as conn:
        history = conn.execute(
            sa.text("SELECT what, version_no, chrome_changed FROM page_history")
        ).all()
    assert [tuple(r) for r in history] == [("content", 3, True)]
