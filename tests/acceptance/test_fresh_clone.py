"""The command line as a new user meets it (issue 14): what is documented runs as written,
tables fit 80 columns, a bad setting is said, never ignored."""

from __future__ import annotations

import http.server
import json
import os
import random
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._cli import RUN_TIMEOUT_S, Run, clean_env, script
from ._site import CountingSite

URL = "https://example.com/reports/annual-report-of-the-cycling-club-2026?edition=full"
ISO_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")
ARTICLE = " ".join(f"Paragraph {i} tells the story of a ride through the hills." for i in range(40))


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _file(tmp_path: Path, name: str, body: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(body)
    return str(path)


def _unwrapped(text: str) -> str:
    """Table text with the table's spaces and line breaks taken out (for wrapped cells)."""
    return re.sub(r"\s+", "", text)


# -- binaries ------------------------------------------------------------------------------


def test_check_of_two_binaries_takes_the_binary_path(run: Run, tmp_path: Path) -> None:
    """``check --content-type application/octet-stream`` of two different binaries: new, then
    changed by the binary path with no distance (it said ``distance 0, path simhash``)."""
    rng = random.Random(14)
    one = _file(tmp_path, "one.bin", rng.randbytes(2000))
    two = _file(tmp_path, "two.bin", rng.randbytes(2000))
    ct = ("--content-type", "application/octet-stream")
    first = _json(run("check", URL, "--file", one, *ct, "--json"))
    assert (first["kind"], first["path"]) == ("new", "binary")
    second = _json(run("check", URL, "--file", two, *ct, "--json"))
    assert (second["kind"], second["path"], second["distance"]) == ("changed", "binary", None)


def test_png_and_executable_without_content_type_are_binary(run: Run, tmp_path: Path) -> None:
    """A PNG and an executable with no content type are binaries, not parsed as HTML."""
    png = _file(tmp_path, "a.png", b"\x89PNG\r\n\x1a\n" + bytes(range(100)))
    elf = _file(tmp_path, "ls", Path("/bin/ls").read_bytes()[:50_000])
    for i, body in enumerate((png, elf)):
        d = _json(run("check", f"https://example.com/f{i}", "--file", body, "--json"))
        assert (d["path"], d["simhash"]) == ("binary", "0" * 16)


# -- tables at 80 columns ---------------------------------------------------------------------


def test_history_due_and_check_tables_at_80_columns(run: Run, tmp_path: Path) -> None:
    """At COLUMNS=80 no cell is cut: kinds, the whole URL and whole timestamps are shown."""
    page = _file(tmp_path, "p.html", f"<p>{ARTICLE}</p>".encode())
    other = _file(tmp_path, "q.html", f"<p>{ARTICLE[::-1]}</p>".encode())
    assert run("check", URL, "--file", page).returncode == 0
    check = run("check", URL, "--file", other, COLUMNS="80")
    assert check.returncode == 0, check.stderr
    history = run("history", URL, COLUMNS="80")
    due = run("due", COLUMNS="80")
    for proc in (check, history, due):
        assert proc.returncode == 0, proc.stderr
        assert "…" not in proc.stdout, proc.stdout
        assert max(len(line) for line in proc.stdout.splitlines()) <= 80, proc.stdout
    for proc in (check, history):
        assert _unwrapped(URL) in _unwrapped(proc.stdout), proc.stdout
    # due: the URL is the first column, wrapped over several lines.
    lines = due.stdout.splitlines()
    body = lines[next(i for i, line in enumerate(lines) if "━" in line) + 1 :]
    assert "".join(line.split()[0] for line in body if line.strip()) == URL
    assert "changed" in check.stdout
    assert re.search(r"\bnew\b", history.stdout)
    assert "changed" in history.stdout
    assert len(ISO_SECONDS.findall(history.stdout)) == 4, history.stdout
    assert len(ISO_SECONDS.findall(due.stdout)) == 1, due.stdout


def test_prune_table_at_80_columns(run: Run, tmp_path: Path) -> None:
    """prune's cutoff timestamp is printed whole at 80 columns."""
    page = _file(tmp_path, "p.html", b"<p>one page</p>")
    assert run("check", URL, "--file", page).returncode == 0
    proc = run("prune", "--keep-versions", "1", "--older-than", "1d", "--dry-run", COLUMNS="80")
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
    assert len(ISO_SECONDS.findall(proc.stdout)) == 1, proc.stdout


def test_demo_at_80_columns_prints_its_site_first(run: Run) -> None:
    """The demo says where its site is served before the crawl lines, and its tables at 80
    columns show every kind in full."""
    proc = run("demo", COLUMNS="80")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("demo site served at http://127.0.0.1:"), lines[:3]
    assert "…" not in proc.stdout
    for kind in ("new", "unchanged", "minor", "changed", "gone"):
        assert re.search(rf"\s{kind}\s", proc.stdout), kind


# -- options and settings ---------------------------------------------------------------------


def test_global_options_after_the_command(run: Run, tmp_path: Path) -> None:
    """Global options work after the command too, with a value or with ``=``."""
    other = tmp_path / "other.db"
    proc = run("stats", "--log-format", "json", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["pages"] == 0
    assert run("db", "upgrade", f"--database-url=sqlite:///{other}").returncode == 0
    assert other.is_file()
    proc = run("db", "current", "--database-url", f"sqlite:///{other}", "--json")
    assert _json(proc)["database"] == f"sqlite:///{other}"


def test_db_current_and_upgrade_json(run: Run) -> None:
    """``db upgrade --json`` and ``db current --json`` print the revisions as JSON."""
    empty = _json(run("db", "current", "--json"))
    assert (empty["current"], empty["up_to_date"]) == (None, False)
    first = _json(run("db", "upgrade", "--json"))
    assert (first["before"], first["after"], first["upgraded"]) == (None, empty["head"], True)
    again = _json(run("db", "upgrade", "--json"))
    assert again["upgraded"] is False
    assert _json(run("db", "current", "--json"))["up_to_date"] is True


@pytest.mark.parametrize(
    ("seen_url", "message"),
    [("bogus:thing", "unknown scheme 'bogus'"), ("file:", "names no file")],
)
def test_a_seen_set_url_that_cannot_work_fails_check_and_stats(
    run: Run, tmp_path: Path, seen_url: str, message: str
) -> None:
    """A seen-set URL of an unknown scheme or naming no file is an error of check and stats."""
    page = _file(tmp_path, "p.html", b"<p>hello</p>")
    for args in (["check", URL, "--file", page], ["stats"]):
        proc = run(*args, CHANGEWATCH_SEEN_URL=seen_url)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert message in proc.stderr


def test_stats_says_a_shared_seen_set_does_not_answer(run: Run) -> None:
    """stats with a Redis seen-set nobody answers at: the store counters, then an error."""
    proc = run("stats", CHANGEWATCH_SEEN_URL="redis://127.0.0.1:1/0?timeout=1")
    assert proc.returncode == 1
    assert "pages" in proc.stdout
    assert "the seen-set (redis://127.0.0.1:1/0" in proc.stderr


def test_check_warns_that_a_shared_seen_set_does_not_answer(run: Run, tmp_path: Path) -> None:
    """check needs no seen-set, so an unreachable Redis one is a warning: the page is still
    recorded (exit 0), and the password of the URL is never shown."""
    page = _file(tmp_path, "p.html", b"<p>hello</p>")
    url = "redis://:hunter2@127.0.0.1:1/0?timeout=1"
    proc = run("check", URL, "--file", page, "--json", CHANGEWATCH_SEEN_URL=url)
    assert _json(proc)["kind"] == "new"
    assert "changewatch: warning: the seen-set (redis://" in proc.stderr
    assert "cannot be used" in proc.stderr
    assert "hunter2" not in proc.stderr


def test_seen_url_help_lists_every_scheme(run: Run) -> None:
    """``--help`` names every seen-set scheme."""
    out = _unwrapped(run("--help").stdout)
    for scheme in ("memory:", "file:PATH", "redis://", "rediss://", "redis+cluster://"):
        assert scheme in out, scheme


def test_a_misspelt_variable_is_warned_with_the_close_match(run: Run) -> None:
    """``CHANGEWATCH_DATABSE_URL`` gets a warning naming ``CHANGEWATCH_DATABASE_URL``."""
    proc = run("stats", CHANGEWATCH_DATABSE_URL="sqlite:///elsewhere.db")
    assert proc.returncode == 0
    assert (
        "CHANGEWATCH_DATABSE_URL is not a changewatch variable; "
        "did you mean CHANGEWATCH_DATABASE_URL?"
    ) in proc.stderr


# -- reconcile --------------------------------------------------------------------------------


class _Sitemaps(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.base = f"http://127.0.0.1:{self.server_address[1]}"
        locs = [f"{self.base}/page-{i}" for i in range(3)] + ["https://elsewhere.example/x"]
        self.body = (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
            + "</urlset>"
        ).encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Sitemaps

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        body = self.server.body if self.path == "/sitemap.xml" else b"not found"
        self.send_response(200 if self.path == "/sitemap.xml" else 404)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def sitemaps() -> Iterator[_Sitemaps]:
    server = _Sitemaps()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_reconcile_of_loopback_names_the_flag(run: Run, sitemaps: _Sitemaps) -> None:
    """Reconciling a loopback site without --allow-private says that the flag exists."""
    proc = run("reconcile", f"{sitemaps.base}/sitemap.xml")
    assert proc.returncode == 1
    assert "pass --allow-private" in proc.stderr


def test_reconcile_counts_an_off_host_loc_as_invalid(run: Run, sitemaps: _Sitemaps) -> None:
    """An off-host <loc> is counted in the host's ``invalid``, like the parser counts it."""
    proc = run("reconcile", f"{sitemaps.base}/sitemap.xml", "--allow-private", "--json")
    host = _json(proc)["hosts"][sitemaps.base.removeprefix("http://")]
    assert (host["listed"], host["invalid"]) == (3, 1)


def _on_a_terminal(args: list[str], tmp_path: Path) -> str:
    """Run the CLI with stderr on a pseudo-terminal; what it wrote there."""
    leader, follower = os.openpty()
    try:
        proc = subprocess.run(
            [script(), *args],
            cwd=tmp_path,
            env=clean_env(tmp_path, COLUMNS="100"),
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 0, b"".join(chunks)
    return b"".join(chunks).decode("utf-8", "replace")


def test_reconcile_progress_on_a_terminal_only(sitemaps: _Sitemaps, tmp_path: Path) -> None:
    """On a terminal reconcile shows sitemaps read, URLs listed and the rate; with --json, or
    not on a terminal, it stays quiet."""
    args = ["reconcile", f"{sitemaps.base}/sitemap.xml", "--allow-private"]
    shown = _on_a_terminal(args, tmp_path)
    for words in ("sitemaps read", "URLs listed", "URLs/s"):
        assert words in shown, shown
    assert "sitemaps read" not in _on_a_terminal([*args, "--json"], tmp_path)


# -- Scrapy -----------------------------------------------------------------------------------

CRAWLER = Path(__file__).with_name("_scrapy_crawl.py")


def _scrapy(tmp_path: Path, start: str, settings: dict[str, Any]) -> tuple[int, str]:
    """One real Scrapy crawl in a subprocess: its exit status and its log."""
    config = tmp_path / "crawl.json"
    out = tmp_path / "crawl.out.json"
    config.write_text(json.dumps({"start_urls": [start], "settings": settings, "out": str(out)}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGEWATCH_")}
    proc = subprocess.run(
        [sys.executable, str(CRAWLER), str(config)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_scrapy_decision_log_lines_carry_kind_path_and_distance(tmp_path: Path) -> None:
    """Under Scrapy's own log format a decision line says its kind, path and distance."""
    with CountingSite({"/": "<html><body><p>one page, no links</p></body></html>"}) as site:
        _, log = _scrapy(
            tmp_path,
            f"{site.base}/",
            {
                "LOG_LEVEL": "DEBUG",
                "DOWNLOADER_MIDDLEWARES": {"changewatch.scrapy.ChangewatchMiddleware": 580},
                "CHANGEWATCH_DATABASE_URL": f"sqlite:///{tmp_path / 'cw.db'}",
            },
        )
    lines = [line for line in log.splitlines() if "[changewatch.decisions]" in line]
    assert len(lines) == 1, log[-3000:]
    assert "decision kind=new path=new distance=- url=" in lines[0]


def test_scrapy_setting_error_is_its_own_message(tmp_path: Path) -> None:
    """A ``file:`` seen-set URL naming no file, without JOBDIR: the first error of the crawl's
    log names it (it was buried under ``RuntimeError: Engine slot not assigned``)."""
    _, log = _scrapy(
        tmp_path,
        "http://127.0.0.1:9/",
        {
            "DUPEFILTER_CLASS": "changewatch.scrapy.ChangewatchDupeFilter",
            "CHANGEWATCH_SEEN_URL": "file:?kind=bloom",
        },
    )
    errors = [line for line in log.splitlines() if re.search(r"\] (ERROR|CRITICAL):", line)]
    assert errors, log[-3000:]
    assert "changewatch setting error, the crawl cannot start" in errors[0], log[-3000:]
    assert "names no file, and JOBDIR is not set" in errors[0]
