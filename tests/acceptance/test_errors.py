"""How the CLI fails: one clear line on stderr, exit 1 (2 for usage), no traceback, no secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._cli import Run, assert_clean_error

PASSWORD = "Sw0rdfish-9f2c"
# Port 1 on the loopback interface: nothing listens there, the connection is refused at once.
UNREACHABLE = f"postgresql+psycopg://crawler:{PASSWORD}@127.0.0.1:1/changewatch"


def test_invalid_url(run: Run, tmp_path: Path) -> None:
    """check with an invalid URL exits 1 with one line naming the URL, and opens no store."""
    page = tmp_path / "a.html"
    page.write_text("<p>hello</p>")
    proc = run("check", "not a url", "--file", str(page))
    assert_clean_error(proc)
    assert proc.stderr == (
        "changewatch: error: invalid URL 'not a url': not an absolute URL (no scheme)\n"
    )
    assert not (tmp_path / "cw.db").exists()


@pytest.mark.parametrize("via", ["option", "environment"])
def test_unreachable_database_hides_password(run: Run, tmp_path: Path, via: str) -> None:
    """An unreachable database exits 1 with the cause chain, never printing the password."""
    page = tmp_path / "a.html"
    page.write_text("<p>hello</p>")
    if via == "option":
        proc = run(
            "--database-url", UNREACHABLE, "check", "https://example.com/", "--file", str(page)
        )
    else:
        proc = run(
            "check",
            "https://example.com/",
            "--file",
            str(page),
            CHANGEWATCH_DATABASE_URL=UNREACHABLE,
        )
    assert_clean_error(proc)
    first, *causes = proc.stderr.splitlines()
    assert "crawler:***@127.0.0.1:1/changewatch" in first
    assert causes
    assert all(line.startswith("  caused by: ") for line in causes)
    assert PASSWORD not in proc.stderr + proc.stdout


def test_db_upgrade_unreachable_database(run: Run) -> None:
    """db upgrade on an unreachable database exits 1 without a traceback or the password."""
    proc = run("--database-url", UNREACHABLE, "db", "upgrade")
    assert_clean_error(proc)
    assert PASSWORD not in proc.stderr + proc.stdout


def test_unsupported_database_url(run: Run) -> None:
    """A database URL of an unsupported kind is a clear error, its password hidden."""
    proc = run("--database-url", f"mysql://crawler:{PASSWORD}@127.0.0.1/cw", "stats")
    assert_clean_error(proc)
    assert "only sqlite and postgresql are supported" in proc.stderr
    assert PASSWORD not in proc.stderr


def test_unknown_revision(run: Run) -> None:
    """db upgrade --revision with a revision that does not exist exits 1."""
    proc = run("db", "upgrade", "--revision", "no-such-revision")
    assert_clean_error(proc)
    assert "no-such-revision" in proc.stderr.splitlines()[0]


def test_invalid_setting(run: Run) -> None:
    """An invalid CHANGEWATCH_* setting exits 1 naming the variable."""
    proc = run("stats", CHANGEWATCH_MINOR_DISTANCE="three")
    assert_clean_error(proc)
    assert "CHANGEWATCH_MINOR_DISTANCE" in proc.stderr


@pytest.mark.postgres
def test_unmigrated_postgres(run: Run, pg_scratch_url: str) -> None:
    """A Postgres database without the schema exits 1 telling to run changewatch db upgrade."""
    proc = run("--database-url", pg_scratch_url, "stats")
    assert_clean_error(proc)
    assert "run `changewatch db upgrade`" in proc.stderr.splitlines()[0]


@pytest.mark.parametrize(
    "args",
    [
        ["--no-such-option"],
        ["check", "https://example.com/"],
        ["no-such-command"],
        ["check", "https://example.com/", "--file", "/nonexistent/page.html"],
    ],
)
def test_usage_errors_exit_2(run: Run, args: list[str]) -> None:
    """Unknown options and commands, and missing or unreadable arguments, exit 2."""
    proc = run(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Usage: changewatch" in proc.stderr
    assert "Traceback" not in proc.stderr
