"""``changewatch check``, ``history``, ``stats`` and ``db``, run as the installed script."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from changewatch.seen import open_seen_set

from ._cli import Run, assert_clean_error

URL = "https://example.com/guide?utm_source=newsletter"
CANONICAL = "https://example.com/guide"
HEX64 = re.compile(r"[0-9a-f]{64}")
HEX16 = re.compile(r"[0-9a-f]{16}")

ARTICLE = " ".join(
    f"Paragraph {i} explains how the crawler stores each page and compares fingerprints."
    for i in range(40)
)


def _page(tmp_path: Path, name: str, text: str, nonce: str = "a1") -> Path:
    path = tmp_path / name
    path.write_text(
        f'<html><head><script nonce="{nonce}">x=1</script></head>'
        f"<body><!-- {nonce} --><p>{text}</p></body></html>",
        encoding="utf-8",
    )
    return path


def _json(proc: Any) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_check_new_then_unchanged_then_changed(run: Run, tmp_path: Path) -> None:
    """check answers new, then unchanged for the same bytes, then changed for a rewrite."""
    first = _page(tmp_path, "a.html", ARTICLE)
    d1 = _json(run("check", URL, "--file", str(first), "--json"))
    assert (d1["kind"], d1["parse"], d1["distance"], d1["path"]) == ("new", True, None, "new")
    assert d1["url"] == CANONICAL
    assert HEX64.fullmatch(d1["content_sha256"])
    assert HEX16.fullmatch(d1["simhash"])

    d2 = _json(run("check", URL, "--file", str(first), "--json"))
    assert (d2["kind"], d2["parse"], d2["distance"], d2["path"]) == ("unchanged", False, 0, "raw")
    assert (d2["content_sha256"], d2["simhash"]) == (d1["content_sha256"], d1["simhash"])

    noisy = _page(tmp_path, "b.html", ARTICLE, nonce="b2")
    d3 = _json(run("check", URL, "--file", str(noisy), "--json"))
    assert (d3["kind"], d3["path"]) == ("unchanged", "normalised")

    rewrite = _page(tmp_path, "c.html", "A different page about baking bread at home, " * 30)
    d4 = _json(run("check", URL, "--file", str(rewrite), "--json"))
    assert (d4["kind"], d4["parse"], d4["path"], d4["version"]) == ("changed", True, "simhash", 2)
    assert d4["distance"] > 3


def test_check_reads_stdin_and_prints_a_table(run: Run, tmp_path: Path) -> None:
    """check --file - reads the body from stdin; without --json it prints a table."""
    body = _page(tmp_path, "a.html", ARTICLE).read_bytes()
    proc = run(
        "check", URL, "--file", "-", "--content-type", "text/html; charset=utf-8", stdin=body
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"kind\s+new\b", proc.stdout), proc.stdout
    assert CANONICAL in proc.stdout


def test_check_finds_duplicate_of_another_url(run: Run, tmp_path: Path) -> None:
    """A page whose content is already stored at another URL is new with duplicate_of."""
    page = _page(tmp_path, "a.html", ARTICLE)
    _json(run("check", URL, "--file", str(page), "--json"))
    d = _json(run("check", "https://example.com/print/guide", "--file", str(page), "--json"))
    assert (d["kind"], d["duplicate_of"]) == ("new", CANONICAL)


def test_history_lists_versions(run: Run, tmp_path: Path) -> None:
    """history --json lists every version oldest first, with UTC ISO-8601 timestamps."""
    before = datetime.now(UTC) - timedelta(seconds=1)
    _json(run("check", URL, "--file", str(_page(tmp_path, "a.html", ARTICLE)), "--json"))
    rewrite = _page(tmp_path, "b.html", "Completely new words about something else. " * 30)
    _json(run("check", URL, "--file", str(rewrite), "--json"))

    versions = _json(run("history", URL, "--json"))
    assert [(v["version"], v["kind"]) for v in versions] == [(1, "new"), (2, "changed")]
    assert versions[0]["distance"] is None
    assert versions[1]["distance"] > 3
    for v in versions:
        first_seen = datetime.fromisoformat(v["first_seen"])
        assert first_seen.utcoffset() == timedelta(0)
        assert before <= first_seen <= datetime.fromisoformat(v["last_seen"])
        assert HEX64.fullmatch(v["content_sha256"])

    table = run("history", URL)
    assert table.returncode == 0, table.stderr
    assert re.search(r"\b1\s+new\b", table.stdout)
    assert re.search(r"\b2\s+changed\b", table.stdout)


def test_history_of_unknown_url(run: Run) -> None:
    """A URL never stored has an empty history: [] with --json, a clear line otherwise, exit 0."""
    assert _json(run("history", "https://example.com/never", "--json")) == []
    proc = run("history", "https://example.com/never")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "no history for https://example.com/never: it was never stored"


def test_stats_counts(run: Run, tmp_path: Path) -> None:
    """stats --json counts pages, fetches and versions per kind."""
    page = _page(tmp_path, "a.html", ARTICLE)
    for _ in range(2):
        _json(run("check", URL, "--file", str(page), "--json"))
    stats = _json(run("stats", "--json"))
    counters = ("pages", "hosts", "fetches", "versions", "new", "changed", "minor", "unchanged")
    assert [stats[k] for k in counters] == [1, 1, 2, 1, 1, 0, 0, 1]
    assert datetime.fromisoformat(stats["last_seen"]).utcoffset() == timedelta(0)
    table = run("stats")
    assert table.returncode == 0, table.stderr
    assert re.search(r"fetches\s+2\b", table.stdout), table.stdout


def test_database_url_option_overrides_environment(run: Run, tmp_path: Path) -> None:
    """--database-url wins over CHANGEWATCH_DATABASE_URL."""
    other = tmp_path / "other.db"
    page = _page(tmp_path, "a.html", ARTICLE)
    _json(run("--database-url", f"sqlite:///{other}", "check", URL, "--file", str(page), "--json"))
    assert other.is_file()
    assert _json(run("stats", "--json"))["pages"] == 0
    assert _json(run("--database-url", f"sqlite:///{other}", "stats", "--json"))["pages"] == 1


def test_db_upgrade_sqlite_is_idempotent(run: Run, tmp_path: Path) -> None:
    """db upgrade migrates a fresh SQLite file from empty to head, then reports it current."""
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    first = run("--database-url", url, "db", "upgrade")
    assert first.returncode == 0, first.stderr
    head = re.fullmatch(r"database sqlite:///\S+: upgraded from empty to (\w+)\n", first.stdout)
    assert head, first.stdout
    again = run("--database-url", url, "db", "upgrade", "--revision", "head")
    assert again.returncode == 0, again.stderr
    assert again.stdout.endswith(f"already at revision {head.group(1)}\n")
    current = run("--database-url", url, "db", "current")
    assert current.returncode == 0, current.stderr
    assert "(up to date)" in current.stdout, current.stdout


@pytest.mark.postgres
def test_db_upgrade_postgres(run: Run, pg_scratch_url: str, tmp_path: Path) -> None:
    """db upgrade migrates an empty Postgres database, is idempotent, and check then works."""
    first = run("--database-url", pg_scratch_url, "db", "upgrade")
    assert first.returncode == 0, first.stderr
    assert "upgraded from empty to " in first.stdout
    again = run("--database-url", pg_scratch_url, "db", "upgrade")
    assert again.returncode == 0, again.stderr
    assert "already at revision" in again.stdout, again.stdout

    page = _page(tmp_path, "a.html", ARTICLE)
    env = {"CHANGEWATCH_DATABASE_URL": pg_scratch_url}
    assert _json(run("check", URL, "--file", str(page), "--json", **env))["kind"] == "new"
    assert _json(run("check", URL, "--file", str(page), "--json", **env))["kind"] == "unchanged"
    assert _json(run("stats", "--json", **env))["fetches"] == 2


def test_check_applies_the_fingerprint_policy_and_flip_window(run: Run, tmp_path: Path) -> None:
    """The CLI builds its ChangeWatch from every setting: the [fingerprint] table of
    CHANGEWATCH_CANON_POLICY (an ignored selector's text is not content) and
    CHANGEWATCH_FLIP_WINDOW (0: no flip-flop is recorded)."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[fingerprint]\nignore = [".ad"]\n', encoding="utf-8")
    env = {"CHANGEWATCH_CANON_POLICY": str(policy), "CHANGEWATCH_FLIP_WINDOW": "0"}
    body = "<main><p>Pricing for every plan, billed monthly or yearly.</p></main>"
    first = _page(tmp_path, "a.html", f"<html><body>{body}<div class=ad>Buy A</div></body></html>")
    ad = _page(tmp_path, "b.html", f"<html><body>{body}<div class=ad>Buy B</div></body></html>")
    rewrite = _page(tmp_path, "c.html", "<html><body><p>Entirely other words here.</p></body>")
    assert _json(run("check", URL, "--file", str(first), "--json", **env))["kind"] == "new"
    assert _json(run("check", URL, "--file", str(ad), "--json", **env))["kind"] == "unchanged"
    assert _json(run("check", URL, "--file", str(rewrite), "--json", **env))["kind"] == "changed"
    back = _json(run("check", URL, "--file", str(first), "--json", **env))
    assert (back["kind"], back["reverted_to"]) == ("changed", None)
    bad = run("check", URL, "--file", str(first), CHANGEWATCH_FLIP_WINDOW="-1")
    assert bad.returncode == 1
    assert "CHANGEWATCH_FLIP_WINDOW" in bad.stderr


def test_check_keeps_validators_and_conditional_prints_them(run: Run, tmp_path: Path) -> None:
    """--header ETag/Last-Modified are stored; `conditional` prints the next request's
    headers (curl -H lines, or JSON); a later --status 304 is recorded as unchanged."""
    page = _page(tmp_path, "a.html", ARTICLE)
    first = _json(
        run(
            "check", URL, "--file", str(page), "--json",
            "-H", 'ETag: "v1"', "--header", "Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT",
            "-H", "Content-Type: text/html; charset=utf-8",
        )
    )  # fmt: skip
    assert first["kind"] == "new"
    lines = run("conditional", URL)
    assert lines.returncode == 0, lines.stderr
    assert lines.stdout.splitlines() == [
        'If-None-Match: "v1"',
        "If-Modified-Since: Tue, 01 Dec 2026 10:00:00 GMT",
    ]
    assert _json(run("conditional", URL, "--json")) == {
        "If-None-Match": '"v1"',
        "If-Modified-Since": "Tue, 01 Dec 2026 10:00:00 GMT",
    }
    not_modified = _json(run("check", URL, "--status", "304", "--json"))
    assert (not_modified["kind"], not_modified["path"]) == ("unchanged", "not-modified")
    never = run("conditional", "https://example.com/never-fetched")
    assert (never.returncode, never.stdout) == (0, "")


def test_check_refuses_bad_statuses_and_headers(run: Run, tmp_path: Path) -> None:
    page = _page(tmp_path, "a.html", ARTICLE)
    not_found = run("check", URL, "--file", str(page), "--status", "404")
    assert_clean_error(not_found)
    assert "404" in not_found.stderr
    never = run("check", "https://example.com/never-fetched", "--status", "304")
    assert_clean_error(never)
    no_body = run("check", URL)
    assert no_body.returncode == 2
    assert "--file is required" in no_body.stderr
    bad = run("check", URL, "--file", str(page), "-H", "no colon here")
    assert bad.returncode == 2
    assert "'no colon here' is not 'NAME: VALUE'" in bad.stderr
    assert _json(run("history", URL, "--json")) == []  # nothing was recorded
    bad_url = run("conditional", "ftp://example.com/x")
    assert_clean_error(bad_url)
    assert "not http or https" in bad_url.stderr


def test_stats_seen_shows_each_generation(run: Run, tmp_path: Path) -> None:
    """stats --seen: the seen-set's figures and one row per live generation (table and JSON)."""
    seen_url = f"file:{tmp_path / 'aged.seen'}?kind=bloom&capacity=1000&max_age=7d&window=1d"
    an_hour_ago = time.time() - 3600
    seen = open_seen_set(seen_url, clock=lambda: an_hour_ago)
    seen.add_many([f"https://example.com/{i}" for i in range(30)])
    seen.close()
    plain = _json(run("stats", "--json"))
    assert "seen" not in plain  # without --seen the seen-set is not even opened
    stats = _json(run("--seen-url", seen_url, "stats", "--seen", "--json"))
    (generation,) = stats["seen"]["generations"]
    assert generation["entries"] == 30
    assert generation["filters"] == 1
    assert 0 < generation["fill"] < 1
    assert generation["age_s"] >= 3600
    assert stats["seen"]["live_generations"] == 8
    table = run("--seen-url", seen_url, "stats", "--seen")
    assert table.returncode == 0, table.stderr
    assert "seen-set: generations" in table.stdout
    assert re.search(r"\b30\s+1\s+0\.0\d+", table.stdout), table.stdout
