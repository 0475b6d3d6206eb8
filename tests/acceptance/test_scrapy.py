"""Real Scrapy crawls, each in a subprocess, of a site served on 127.0.0.1 by the test.

The crawler is ``_scrapy_crawl.py`` (a link-following spider, every request through the
duplicate filter); the site counts every request per path, so "no URL fetched twice" is
checked where it happens, at the server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from changewatch.store.migrate import upgrade

from ._site import CountingSite, body_text, render

CRAWLER = Path(__file__).with_name("_scrapy_crawl.py")
REPO = Path(__file__).resolve().parents[2]
CRAWL_TIMEOUT_S = 60
DUPEFILTER = "changewatch.scrapy.ChangewatchDupeFilter"
MIDDLEWARE = {"changewatch.scrapy.ChangewatchMiddleware": 580}
DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/15"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGEWATCH_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _start(tmp: Path, name: str, start_urls: list[str], settings: dict[str, Any]) -> Any:
    config = tmp / f"{name}.json"
    out = tmp / f"{name}.out.json"
    config.write_text(json.dumps({"start_urls": start_urls, "settings": settings, "out": str(out)}))
    log = tmp / f"{name}.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, str(CRAWLER), str(config)],
            cwd=tmp,
            env=_env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    return proc, out, log


def _finish(started: Any) -> dict[str, Any]:
    proc, out, log = started
    try:
        proc.wait(timeout=CRAWL_TIMEOUT_S)
    finally:
        proc.kill()  # only if still running: a hung crawl must not outlive the test
        proc.wait()
    text = log.read_text(errors="replace")
    assert proc.returncode == 0, text[-4000:]
    assert "Traceback" not in text, text[-4000:]
    assert "DeprecationWarning" not in text, text[-4000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def crawl(tmp: Path, name: str, start_urls: list[str], **settings: Any) -> dict[str, Any]:
    """Run one crawl to its end; its reason, stats and parsed pages."""
    return _finish(_start(tmp, name, start_urls, settings))


def _stat(result: dict[str, Any], key: str) -> int:
    return int(result["stats"].get(key, 0))


# -- 1. the second crawl parses exactly the changed and new pages ---------------------------


def _site_pages(n: int, noise: int, changed: frozenset[int] = frozenset()) -> dict[str, str]:
    """Index linking to /p0…/p{n-1}; each page links home and to the next of the first 20.

    ``changed`` pages get other text; adding pages changes only the index.
    """
    pages = {"/": render("Index", "Our pages", [f"/p{i}" for i in range(n)], noise)}
    for i in range(n):
        text = body_text(i + 1000) if i in changed else body_text(i)
        pages[f"/p{i}"] = render(f"Page {i}", text, ["/", f"/p{(i + 1) % 20}"], noise + i)
    return pages


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The middleware's store: a SQLite file, or a scratch Postgres database migrated to head."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'cw.db'}"
    url: str = request.getfixturevalue("pg_scratch_url")
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return url


def test_second_crawl_parses_exactly_the_changed_and_new_pages(
    tmp_path: Path, store_url: str
) -> None:
    """Recrawl after 3 edits, 1 new page and fresh noise everywhere: only those 5 are parsed."""
    n = 20
    db = store_url
    settings = {"DUPEFILTER_CLASS": DUPEFILTER, "DOWNLOADER_MIDDLEWARES": MIDDLEWARE}
    with CountingSite(_site_pages(n, noise=1)) as site:
        first = crawl(tmp_path, "first", [site.base + "/"], CHANGEWATCH_DATABASE_URL=db, **settings)
        every = {site.base + path for path in site.pages}
        assert set(first["parsed"]) == every
        assert {meta["kind"] for meta in first["parsed"].values()} == {"new"}
        assert _stat(first, "changewatch/new") == n + 1
        assert _stat(first, "changewatch/dupefilter/new") == n + 1
        assert _stat(first, "changewatch/dupefilter/filtered") > 0
        assert site.twice() == {}

        edited = frozenset({2, 5, 11})
        site.pages = _site_pages(n + 1, noise=977, changed=edited)  # adds /p20 (and its link)
        site.reset_counts()
        # A recrawl starts from every URL it knows (a sitemap, or the last crawl's list):
        # an unchanged page is dropped before its links are followed.
        second = crawl(tmp_path, "second", sorted(every), CHANGEWATCH_DATABASE_URL=db, **settings)
        expected = {site.base + p for p in ["/", "/p20", *(f"/p{i}" for i in edited)]}
        assert set(second["parsed"]) == expected
        assert second["parsed"][site.base + "/p20"]["kind"] == "new"
        assert all(second["parsed"][site.base + f"/p{i}"]["kind"] == "changed" for i in edited)
        assert second["parsed"][site.base + "/"]["kind"] in ("minor", "changed")
        assert _stat(second, "changewatch/new") == 1
        assert _stat(second, "changewatch/changed") + _stat(second, "changewatch/minor") == 4
        assert _stat(second, "changewatch/unchanged") == n - len(edited)
        assert _stat(second, "changewatch/dropped") == n - len(edited)
        assert _stat(second, "changewatch/errors") == 0
        assert set(site.counts) == set(site.pages)
        assert site.twice() == {}

        # CHANGEWATCH_UNCHANGED = "pass": every page reaches the spider, with its decision
        # (decided in the reactor's thread pool, CHANGEWATCH_THREADED).
        site.reset_counts()
        third = crawl(
            tmp_path,
            "third",
            [site.base + "/"],
            CHANGEWATCH_DATABASE_URL=db,
            CHANGEWATCH_UNCHANGED="pass",
            CHANGEWATCH_THREADED=True,
            **settings,
        )
    assert set(third["parsed"]) == {site.base + path for path in site.pages}
    assert {meta["kind"] for meta in third["parsed"].values()} == {"unchanged"}
    assert _stat(third, "changewatch/unchanged") == n + 2
    assert _stat(third, "changewatch/dropped") == 0


def _nav_site(n: int, noise: int, changed: frozenset[int] = frozenset()) -> dict[str, str]:
    """``n`` pages /s0…/s{n-1}, each an article in <main> beside a <nav> that links to every
    page (so a new page shows in every page's navigation), with per-render noise."""
    links = "".join(f'<li><a href="/s{j}">Page {j}</a></li>' for j in range(n))
    pages = {}
    for i in range(n):
        text = body_text(i + 1000) if i in changed else body_text(i)
        pages[f"/s{i}"] = (
            "<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>Story {i}</title><script nonce='n{noise + i:08x}'>var t={noise};</script>"
            f"</head><body><header><nav><ul>{links}</ul></nav></header>"
            f"<main><h1>Story {i}</h1><p>{text}</p></main>"
            f"<footer>Rendered at 2026-11-{1 + noise % 28:02d}T{noise % 24:02d}:{i % 60:02d}:07Z"
            "</footer></body></html>"
        )
    return pages


def test_recrawl_parses_the_changed_and_new_pages_and_finds_the_new_ones(
    tmp_path: Path, store_url: str
) -> None:
    """40 pages; 5 edited, 2 added, the noise changed everywhere and every page's navigation
    gained links to the 2 new pages: the recrawl parses exactly the 5 edited and 2 new pages
    — the others reach the spider marked ``parse: False, links_changed: True``, so that their
    new links are followed — and finds the new pages."""
    n = 40
    settings = {"DUPEFILTER_CLASS": DUPEFILTER, "DOWNLOADER_MIDDLEWARES": MIDDLEWARE}
    with CountingSite(_nav_site(n, noise=1)) as site:
        first = crawl(
            tmp_path, "first", [site.base + "/s0"], CHANGEWATCH_DATABASE_URL=store_url, **settings
        )
        known = {site.base + path for path in site.pages}
        assert set(first["parsed"]) == known
        edited = frozenset({3, 8, 15, 22, 31})
        site.pages = _nav_site(n + 2, noise=977, changed=edited)  # adds /s40 and /s41
        site.reset_counts()
        # The recrawl starts from the URLs it knows: the new pages can only be found through
        # the navigation of pages that did not change.
        second = crawl(
            tmp_path, "second", sorted(known), CHANGEWATCH_DATABASE_URL=store_url, **settings
        )
    parsed = {url for url, meta in second["parsed"].items() if meta and meta["parse"]}
    new = {site.base + "/s40", site.base + "/s41"}
    assert parsed == {site.base + f"/s{i}" for i in edited} | new
    assert all(second["parsed"][url]["kind"] == "new" for url in new)
    passed_for_links = {url for url, meta in second["parsed"].items() if meta and not meta["parse"]}
    assert passed_for_links == known - {site.base + f"/s{i}" for i in edited}
    assert all(second["parsed"][url]["links_changed"] for url in passed_for_links)
    assert _stat(second, "changewatch/links_changed") == n - len(edited)
    assert _stat(second, "changewatch/dropped") == 0
    assert _stat(second, "changewatch/new") == 2
    assert site.twice() == {}


# -- 2. two processes, one Redis seen-set -----------------------------------------------------


@pytest.fixture
def redis_seen_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A Redis Bloom seen-set URL under a key no other test uses; its keys deleted after.

    The server is ``CHANGEWATCH_TEST_REDIS_URL`` (default db 15 on 127.0.0.1); without it the
    test skips, except under ``CI=true``, where it fails.
    """
    import redis

    url = os.environ.get("CHANGEWATCH_TEST_REDIS_URL") or DEFAULT_TEST_REDIS_URL
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        message = f"Redis at {url.rpartition('@')[2]} is unreachable: {exc.__class__.__name__}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    key = f"cwtest:scrapy:{uuid.uuid4().hex[:12]}"
    sep = "&" if "?" in url else "?"
    try:
        yield f"{url}{sep}kind=bloom&capacity=100000&error_rate=0.00001&key={key}"
    finally:
        for name in client.scan_iter(match=f"{key}*", count=1000):
            client.delete(name)
        client.close()


def _graph(n: int) -> dict[str, str]:
    """``n`` pages, each linking to four others: every page reachable from every page."""
    pages = {}
    for i in range(n):
        links = [f"/g{j}" for j in ((i + 1) % n, (i + 7) % n, (3 * i + 1) % n, (i - 1) % n)]
        pages[f"/g{i}"] = render(f"Graph {i}", body_text(i, words=20), links, i)
    return pages


def test_two_processes_share_a_redis_seen_set(tmp_path: Path, redis_seen_url: str) -> None:
    """Two Scrapy processes crawl one site at once through Redis: no URL is fetched twice."""
    n = 60
    starts = ("/g0", "/g30")
    settings = {"DUPEFILTER_CLASS": DUPEFILTER, "CHANGEWATCH_SEEN_URL": redis_seen_url}
    with CountingSite(_graph(n), delay_s=0.03, gate=frozenset(starts)) as site:
        running = [
            _start(tmp_path, f"worker{k}", [site.base + start], settings)
            for k, start in enumerate(starts)
        ]
        results = [_finish(started) for started in running]
        assert site.twice() == {}
        assert set(site.counts) == set(site.pages)
    news = [_stat(r, "changewatch/dupefilter/new") for r in results]
    assert sum(news) == n
    assert min(news) >= 5, news  # both really crawled
    assert sum(len(r["parsed"]) for r in results) == n
    assert sum(_stat(r, "changewatch/dupefilter/filtered") for r in results) > 0


# -- 3. pause and resume with JOBDIR and a local Bloom filter --------------------------------


def test_pause_and_resume_with_jobdir_fetches_no_url_twice(tmp_path: Path) -> None:
    """A crawl stopped after 8 pages and resumed from JOBDIR fetches every URL exactly once."""
    n = 40
    jobdir = tmp_path / "job"
    settings = {
        "DUPEFILTER_CLASS": DUPEFILTER,
        "JOBDIR": str(jobdir),
        "CHANGEWATCH_SEEN_URL": "file:?kind=bloom&capacity=10000&error_rate=0.0001",
        "CONCURRENT_REQUESTS": 2,
    }
    with CountingSite(_graph(n), delay_s=0.01) as site:
        first = crawl(tmp_path, "paused", [site.base + "/g0"], CLOSESPIDER_PAGECOUNT=8, **settings)
        assert first["reason"] == "closespider_pagecount"
        assert (jobdir / "changewatch.seen").is_file()
        fetched_first = set(site.counts)
        assert 8 <= len(fetched_first) < n
        second = crawl(tmp_path, "resumed", [site.base + "/g0"], **settings)
        assert second["reason"] == "finished"
        assert site.twice() == {}, "a URL was fetched again after the restart"
        assert set(site.counts) == set(site.pages)
    assert _stat(second, "changewatch/dupefilter/filtered") > 0
    assert _stat(second, "scheduler/dequeued/disk") > 0  # the paused requests were resumed


# -- 4. the example project -------------------------------------------------------------------


def test_example_project_extracts_only_changed_pages(tmp_path: Path) -> None:
    """docs/examples/scrapy_project: items for every page, then only for the pages that changed."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "docs" / "examples" / "scrapy_project", project)
    n = 8
    with CountingSite(_site_pages(n, noise=3)) as site:
        runs = []
        for run, edited in enumerate((frozenset(), frozenset({1, 6}))):
            site.pages = _site_pages(n, noise=50 * run + 3, changed=edited)
            items = project / f"items{run}.jsonl"
            args = ["crawl", "site", "-a", f"start={site.base}/", "-O", str(items)]
            args += ["-s", "ROBOTSTXT_OBEY=False", "-s", "DOWNLOAD_DELAY=0"]
            proc = subprocess.run(
                [sys.executable, "-m", "scrapy", *args],
                cwd=project,
                env=_env(),
                capture_output=True,
                text=True,
                timeout=CRAWL_TIMEOUT_S,
                check=False,
            )
            assert proc.returncode == 0, proc.stderr[-4000:]
            assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
            runs.append([json.loads(line) for line in items.read_text().splitlines()])
    assert {item["url"] for item in runs[0]} == {site.base + path for path in site.pages}
    assert {item["kind"] for item in runs[0]} == {"new"}
    assert {item["url"] for item in runs[1]} == {f"{site.base}/p1", f"{site.base}/p6"}
    assert {item["kind"] for item in runs[1]} == {"changed"}


# -- 5. a page that failed is fetched again by the next crawl ---------------------------------


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_a_page_that_failed_is_fetched_again_by_the_next_crawl(tmp_path: Path, kind: str) -> None:
    """A 503 and a dropped connection in crawl 1 are forgotten; crawl 2 fetches just those two."""
    n = 20
    seen_url = f"file:{tmp_path / 'crawl.seen'}"
    if kind == "bloom":
        seen_url += "?kind=bloom&capacity=10000&error_rate=0.0001"
    settings = {
        "DUPEFILTER_CLASS": DUPEFILTER,
        "CHANGEWATCH_SEEN_URL": seen_url,
        "DOWNLOADER_MIDDLEWARES": {"changewatch.scrapy.ChangewatchFailureMiddleware": 540},
    }
    with CountingSite(_site_pages(n, noise=1)) as site:
        site.statuses = {"/p3": 503}
        site.dropped = {"/p5"}
        first = crawl(tmp_path, "first", [site.base + "/"], **settings)
        assert set(site.counts) == set(site.pages)  # every page was requested once
        assert site.twice() == {}
        assert _stat(first, "changewatch/dupefilter/forgotten") == 2
        assert _stat(first, "changewatch/dupefilter/forgotten/503") == 1
        assert (
            sum(
                v
                for k, v in first["stats"].items()
                if k.startswith("changewatch/dupefilter/forgotten/")
            )
            == 2
        )
        assert set(first["parsed"]) == {site.base + p for p in site.pages} - {
            site.base + "/p3",
            site.base + "/p5",
        }

        site.statuses, site.dropped = {}, set()
        site.reset_counts()
        second = crawl(tmp_path, "second", sorted(site.base + p for p in site.pages), **settings)
    assert dict(site.counts) == {"/p3": 1, "/p5": 1}
    assert set(second["parsed"]) == {site.base + "/p3", site.base + "/p5"}
    assert _stat(second, "changewatch/dupefilter/forgotten") == 0
    if kind == "bloom":
        assert _stat(second, "changewatch/dupefilter/retried") == 2
    assert _stat(second, "changewatch/dupefilter/new") == 2
