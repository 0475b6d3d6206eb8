"""``changewatch reconcile`` as the installed script, against a real HTTP server on 127.0.0.1.

The server serves robots.txt, sitemap indexes, a gzip and a plain-text sitemap, a redirect,
a 429 (then a 200) and a 500; the store is a SQLite file seeded in the test process.
"""

from __future__ import annotations

import contextlib
import gzip
import http.server
import json
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch

from ._cli import RUN_TIMEOUT_S, Run, assert_clean_error, clean_env, script

SEEDED_AT = datetime(2024, 1, 1, tzinfo=UTC)
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _urlset(base: str, *entries: tuple[str, str | None]) -> bytes:
    rows = "".join(
        f"<url><loc>{base}{path}</loc>"
        + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "")
        + "</url>"
        for path, lastmod in entries
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>{rows}</urlset>'.encode()


def _index(base: str, *paths: str) -> bytes:
    rows = "".join(f"<sitemap><loc>{base}{p}</loc></sitemap>" for p in paths)
    return f'<?xml version="1.0"?>\n<sitemapindex {NS}>{rows}</sitemapindex>'.encode()


class _Site(http.server.ThreadingHTTPServer):
    """A local site; counts requests per path; /slow.xml waits until ``release`` is set."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.base = f"http://127.0.0.1:{self.server_address[1]}"
        self.hits: Counter[str] = Counter()
        self.slow_started = threading.Event()
        self.release = threading.Event()
        b = self.base
        common = ("/pages.xml.gz", "/list.txt", "/moved.xml", "/busy.xml")
        self.bodies = {
            "/robots.txt": f"User-agent: *\nDisallow: /private\nSitemap: {b}/index.xml\n".encode(),
            "/index.xml": _index(b, *common, "/broken.xml"),
            "/good-index.xml": _index(b, *common),
            "/slow-index.xml": _index(b, "/slow.xml"),
            "/pages.xml.gz": gzip.compress(
                _urlset(b, ("/fresh", "2023-06-01"), ("/stale", "2025-06-01T10:00:00+02:00"))
            ),
            "/list.txt": f"{b}/missing-1\n{b}/fresh\n".encode(),
            "/real.xml": _urlset(b, ("/missing-2", None)),
            "/busy.xml": _urlset(b, ("/from-busy", "2023-01-01")),
            "/slow.xml": _urlset(b, ("/fresh", None)),
            "/empty.xml": _urlset(b),
            "/drip-index.xml": _index(b, "/list.txt", "/drip.xml"),
            "/drip.xml": _urlset(b, *((f"/p{n}", None) for n in range(50))),
        }


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Site

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        site = self.server
        site.hits[self.path] += 1
        if self.path == "/moved.xml":
            self._send(301, b"", location=f"{site.base}/real.xml")
        elif self.path == "/busy.xml" and site.hits[self.path] % 2 == 1:
            self._send(429, b"slow down", retry_after="0")
        elif self.path == "/broken.xml":
            self._send(500, b"oops")
        elif self.path == "/drip.xml":  # one byte every 0.2 s: about a minute in all
            body = site.bodies[self.path]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                for i in range(len(body)):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(0.2)
        elif self.path in site.bodies:
            if self.path == "/slow.xml":
                site.slow_started.set()
                site.release.wait(RUN_TIMEOUT_S)
            self._send(200, site.bodies[self.path])
        else:
            self._send(404, b"not found")

    def _send(
        self, status: int, body: bytes, location: str | None = None, retry_after: str | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if location:
            self.send_header("Location", location)
        if retry_after:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def site() -> Iterator[_Site]:
    """The local site, served on a thread for the test."""
    server = _Site()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(10)


@pytest.fixture
def seeded(site: _Site, tmp_path: Path) -> str:
    """The store (tmp_path/cw.db) holds /fresh, /stale, /from-busy and /gone, seen in 2024."""
    with ChangeWatch(
        database_url=f"sqlite:///{tmp_path / 'cw.db'}", seen_url="memory:", clock=lambda: SEEDED_AT
    ) as watch:
        for path in ("/fresh", "/stale", "/from-busy", "/gone"):
            watch.should_parse(f"{site.base}{path}", f"<p>page {path}</p>")
    return site.base.removeprefix("http://")


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_complete_sitemaps_json_and_recrawl_file(
    run: Run, site: _Site, seeded: str, tmp_path: Path
) -> None:
    """A fully readable index: exact totals, vanished checked, the recrawl file written."""
    recrawl = tmp_path / "queue" / "recrawl.txt"
    recrawl.parent.mkdir()
    data = _json(
        run(
            "reconcile",
            f"{site.base}/good-index.xml",
            "--allow-private",
            "--json",
            "--recrawl-file",
            str(recrawl),
        )
    )
    totals = {k: data[k] for k in ("missing", "stale", "vanished", "fresh")}
    assert totals == {"missing": 2, "stale": 1, "vanished": 1, "fresh": 2}
    assert all(isinstance(v, int) for v in totals.values())
    host = data["hosts"][seeded]
    assert (host["listed"], host["duplicates"], host["vanished_checked"]) == (6, 1, True)
    assert host["sitemaps"] == 5  # the index, gzip, text, redirected, and the 429-then-200 one
    assert data["errors"] == []
    assert data["status"] == "complete"
    assert isinstance(data["run_id"], int)
    assert sorted(recrawl.read_text().splitlines()) == [
        f"{site.base}/missing-1",
        f"{site.base}/missing-2",
        f"{site.base}/stale",
    ]
    assert site.hits["/busy.xml"] == 2  # refused once with 429, then read
    assert list(recrawl.parent.iterdir()) == [recrawl]  # no temporary file left behind
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'cw.db'}")
    try:
        with engine.connect() as conn:
            run_row = conn.execute(sa.text("SELECT * FROM reconcile_runs")).one()
            kinds = dict(
                conn.execute(
                    sa.text("SELECT kind, count(*) FROM reconcile_findings GROUP BY kind")
                ).all()
            )
    finally:
        engine.dispose()
    assert run_row.status == "complete"
    assert (run_row.missing, run_row.stale, run_row.vanished, run_row.fresh) == (2, 1, 1, 2)
    assert kinds == {"missing": 2, "stale": 1, "vanished": 1}


def test_memory_pages_is_recorded_and_changes_no_answer(
    run: Run, site: _Site, seeded: str, tmp_path: Path
) -> None:
    """--memory-pages bounds what a run holds in memory; the answer is the same either way,
    and the run's arguments record it."""
    args = ["reconcile", f"{site.base}/good-index.xml", "--allow-private", "--json"]
    looked_up = _json(run(*args, "--memory-pages", "0"))
    in_memory = _json(run(*args, "--memory-pages", "100"))
    kinds = ("missing", "stale", "vanished", "fresh")
    assert {k: looked_up[k] for k in kinds} == {k: in_memory[k] for k in kinds}
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'cw.db'}")
    try:
        with engine.connect() as conn:
            recorded = conn.execute(sa.text("SELECT arguments FROM reconcile_runs ORDER BY id"))
            pages = [json.loads(row.arguments)["memory_pages"] for row in recorded]
    finally:
        engine.dispose()
    assert pages == [0, 100]


def test_site_discovery_with_a_broken_sitemap(run: Run, site: _Site, seeded: str) -> None:
    """From the site's robots.txt: the 500 is listed as an error, exit 0, vanished unchecked."""
    proc = run("reconcile", f"{site.base}/", "--allow-private")
    assert proc.returncode == 0, proc.stderr
    assert site.hits["/robots.txt"] == 1
    assert site.hits["/broken.xml"] >= 2  # retried
    row = next(line for line in proc.stdout.splitlines() if seeded in line)
    assert re.search(rf"{re.escape(seeded)}\s+6\s+2\s+1\s+not checked\s+2\s", row), row
    assert f"error: {site.base}/broken.xml: " in proc.stdout
    assert "HTTP 500" in proc.stdout
    assert "complete: 2 missing, 1 stale, 0 vanished, 2 fresh" in proc.stdout

    data = _json(run("reconcile", f"{site.base}/", "--allow-private", "--json", "--no-record"))
    assert data["run_id"] is None
    assert data["hosts"][seeded]["vanished_checked"] is False
    assert [e["sitemap"] for e in data["errors"]] == [f"{site.base}/broken.xml"]


def test_nothing_readable_is_an_error(run: Run, site: _Site, seeded: str) -> None:
    """A sitemap URL that cannot be read at all: exit 1, one clean error line."""
    proc = run("reconcile", f"{site.base}/nothing.xml", "--allow-private")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("changewatch: error: no sitemap could be read for "), proc.stderr
    assert "Traceback" not in proc.stderr
    assert "HTTP 404" in proc.stdout


def test_private_address_refused_without_the_flag(run: Run, site: _Site, seeded: str) -> None:
    """Without --allow-private the loopback server is refused: an error, nothing fetched."""
    proc = run("reconcile", f"{site.base}/good-index.xml")
    assert proc.returncode == 1
    assert sum(site.hits.values()) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--every", "soon"], "is not understood"),
        (["--every", "0m"], "longer than zero"),
        (["--max-urls", "0"], "--max-urls"),
        (["--memory-pages", "-1"], "--memory-pages"),
        ([], "Missing argument"),
    ],
)
def test_usage_errors_exit_2(run: Run, args: list[str], message: str) -> None:
    """Bad options exit 2 with a message naming the problem."""
    sites = [] if not args else ["https://example.com/"]
    proc = run("reconcile", *sites, *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert message in proc.stderr


def test_store_error_exits_1(run: Run, site: _Site, tmp_path: Path) -> None:
    """An unusable database is an error (exit 1), reported once without a traceback."""
    (tmp_path / "dir.db").mkdir()
    proc = run(
        "reconcile",
        f"{site.base}/good-index.xml",
        "--allow-private",
        CHANGEWATCH_DATABASE_URL=f"sqlite:///{tmp_path / 'dir.db'}",
    )
    assert_clean_error(proc)


def test_overlapping_runs_of_a_site(site: _Site, seeded: str, tmp_path: Path, run: Run) -> None:
    """While one run holds the site's lock, a second run is skipped (exit 0, recorded)."""
    first = subprocess.Popen(
        [script(), "reconcile", f"{site.base}/slow-index.xml", "--allow-private", "--json"],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert site.slow_started.wait(RUN_TIMEOUT_S)
        second = run("reconcile", f"{site.base}/good-index.xml", "--allow-private", "--json")
        assert second.returncode == 0, second.stderr
        assert "skipped: another reconcile of" in second.stderr
        assert json.loads(second.stdout)["status"] == "skipped"
    finally:
        site.release.set()
        out, err = first.communicate(timeout=RUN_TIMEOUT_S)
    assert first.returncode == 0, err
    assert json.loads(out)["fresh"] == 1
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'cw.db'}")
    try:
        with engine.connect() as conn:
            statuses = conn.execute(sa.text("SELECT status FROM reconcile_runs ORDER BY id")).all()
    finally:
        engine.dispose()
    assert [s for (s,) in statuses] == ["complete", "skipped"]


def test_every_loops_until_sigterm(site: _Site, seeded: str, tmp_path: Path) -> None:
    """--every runs again at each slot and stops cleanly (exit 0) on SIGTERM."""
    proc = subprocess.Popen(
        [script(), "reconcile", f"{site.base}/list.txt", "--allow-private", "--every", "1s"],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while site.hits["/list.txt"] < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert site.hits["/list.txt"] >= 2
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, err
    assert "SIGTERM: stopping" in err
    assert out.count("sitemap reconciliation") >= 2


def test_sigint_interrupts_a_single_run(site: _Site, seeded: str, tmp_path: Path) -> None:
    """SIGINT during a one-shot run: it stops at the next batch, exit 1, recorded interrupted."""
    proc = subprocess.Popen(
        [script(), "reconcile", f"{site.base}/slow-index.xml", "--allow-private"],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert site.slow_started.wait(RUN_TIMEOUT_S)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
    finally:
        site.release.set()
        _out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 1, err
    assert "SIGINT: stopping" in err
    assert "changewatch: error: interrupted" in err
    assert "Traceback" not in err
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'cw.db'}")
    try:
        with engine.connect() as conn:
            status = conn.execute(sa.text("SELECT status FROM reconcile_runs")).scalar_one()
    finally:
        engine.dispose()
    assert status == "interrupted"


def test_shrink_guard_withholds_says_why_and_can_be_forced(
    run: Run, site: _Site, seeded: str, tmp_path: Path
) -> None:
    """An empty sitemap of a host with 14 stored pages: vanished withheld in the table, the
    JSON, the run record and a warning on stderr; --force-vanished reports all 14."""
    with ChangeWatch(
        database_url=f"sqlite:///{tmp_path / 'cw.db'}", seen_url="memory:", clock=lambda: SEEDED_AT
    ) as watch:
        for n in range(10):
            watch.should_parse(f"{site.base}/extra{n}", f"<p>extra page {n}</p>")
    args = ["reconcile", f"{site.base}/empty.xml", "--allow-private"]
    table = run(*args)
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if seeded in line)
    assert re.search(rf"{re.escape(seeded)}\s+0\s+0\s+0\s+withheld\s+0\s", row), row
    reason = "the sitemaps list no page of the host: all 14 stored pages would vanish"
    # The note wraps at the terminal's width like any other line of the table output.
    assert f"vanished {seeded}: shrink guard: {reason}" in " ".join(table.stdout.split())
    assert f"changewatch: warning: vanished withheld for {seeded}: {reason}" in table.stderr
    data = _json(run(*args, "--json"))
    host = data["hosts"][seeded]
    assert (data["vanished"], host["vanished_checked"], host["stored"]) == (0, False, 14)
    assert (host["shrink_guard"], host["vanished_withheld"]) == (reason, f"shrink guard: {reason}")
    forced = _json(run(*args, "--json", "--force-vanished"))
    assert (forced["vanished"], forced["hosts"][seeded]["shrink_guard"]) == (14, reason)
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'cw.db'}")
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT h.vanished_checked, h.vanished, h.shrink_guard, r.arguments "
                    "FROM reconcile_hosts h JOIN reconcile_runs r ON r.id = h.run_id ORDER BY r.id"
                )
            ).all()
    finally:
        engine.dispose()
    assert [(bool(r[0]), r[1], r[2]) for r in rows] == [(False, 0, reason)] * 2 + [
        (True, 14, reason)
    ]
    recorded = json.loads(rows[-1][3])
    assert (recorded["force_vanished"], recorded["max_vanished_share"]) == (True, 0.2)


def test_host_time_limit_cuts_a_dripping_sitemap(run: Run, site: _Site, seeded: str) -> None:
    """--host-time-limit 2s: the dripping child is cut (minutes otherwise), the error names
    the limit, the host is incomplete; the other child's pages still count."""
    began = time.monotonic()
    data = _json(
        run(
            "reconcile",
            f"{site.base}/drip-index.xml",
            "--allow-private",
            "--json",
            "--host-time-limit",
            "2s",
        )
    )
    assert time.monotonic() - began < RUN_TIMEOUT_S / 2
    host = data["hosts"][seeded]
    assert (host["vanished_checked"], host["fresh"], host["missing"]) == (False, 1, 1)
    assert {"sitemap": f"{site.base}/drip.xml", "error": "the host's time limit of 2 s passed"} in (
        data["errors"]
    )
    assert host["vanished_withheld"].startswith("the walk was incomplete: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-vanished-share", "0"], "--max-vanished-share"),
        (["--max-vanished-share", "1.5"], "--max-vanished-share"),
        (["--host-time-limit", "soon"], "is not understood"),
        (["--run-time-limit", "0s"], "longer than zero"),
    ],
)
def test_guard_and_limit_usage_errors_exit_2(run: Run, args: list[str], message: str) -> None:
    """Bad shrink-guard and time-limit options exit 2 naming the problem."""
    proc = run("reconcile", "https://example.com/", *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert message in proc.stderr
