"""Pure helpers of the command line: global options after the command, fitted tables, and
the environment checks (issue 14)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from changewatch.cli import hoist_global_options, main
from changewatch.cli.common import Column, fitted_table
from changewatch.config import misspelt_variables, terminal_columns


def test_global_options_after_the_command_move_before_it() -> None:
    """Global options (with a value, or ``=value``) after the command move in front of it;
    the command's own arguments, and anything after ``--``, stay."""
    assert hoist_global_options(main, ["stats", "--log-format", "json", "--json"]) == [
        "--log-format",
        "json",
        "stats",
        "--json",
    ]
    assert hoist_global_options(main, ["db", "current", "--database-url=sqlite:///x"]) == [
        "--database-url=sqlite:///x",
        "db",
        "current",
    ]
    args = ["--seen-url", "memory:", "check", "U", "--file", "-", "--", "--log-level", "debug"]
    assert hoist_global_options(main, args) == args
    assert hoist_global_options(main, ["nosuchcommand", "--log-level", "debug"]) == [
        "nosuchcommand",
        "--log-level",
        "debug",
    ]


def _render(width: int, columns: tuple[Column, ...], rows: list[list[Text]]) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    console.print(fitted_table("t", columns, rows, width))
    return out.getvalue()


def test_fitted_table_drops_columns_but_never_cuts_kept_ones() -> None:
    """Too narrow: the highest ``drop`` columns go first; kept cells stay whole; a folded cell
    wraps and no cell ends in an ellipsis."""
    url = "https://example.com/" + "long-path/" * 8
    columns = (
        Column("url", fold=True),
        Column("kind", keep=True),
        Column("when", keep=True),
        Column("extra words here", drop=1),
        Column("bytes", "right", drop=2),
    )
    rows = [[Text(url), Text("unchanged"), Text("2026-03-01T12:00:00+00:00"), Text("x"), Text("9")]]
    narrow = _render(60, columns, rows)
    assert "…" not in narrow
    assert "unchanged" in narrow
    assert "2026-03-01T12:00:00+00:00" in narrow
    assert "bytes" not in narrow
    lines = narrow.splitlines()
    body = lines[next(i for i, line in enumerate(lines) if "━" in line) + 1 :]
    assert "".join(line.split()[0] for line in body if line.strip()) == url  # wrapped, whole
    wide = _render(200, columns, rows)
    assert "bytes" in wide
    assert "extra words here" in wide
    assert url in wide


def test_misspelt_variables_and_columns() -> None:
    """Unknown CHANGEWATCH_* names are listed with the closest known one (or none)."""
    env = {
        "CHANGEWATCH_DATABSE_URL": "x",
        "CHANGEWATCH_SEEN_ULR": "y",
        "CHANGEWATCH_WHATEVER": "z",
        "CHANGEWATCH_CORPUS": "/c",
        "PATH": "/bin",
    }
    assert misspelt_variables(env) == [
        ("CHANGEWATCH_DATABSE_URL", "CHANGEWATCH_DATABASE_URL"),
        ("CHANGEWATCH_SEEN_ULR", "CHANGEWATCH_SEEN_URL"),
        ("CHANGEWATCH_WHATEVER", None),
    ]
    assert terminal_columns({"COLUMNS": "80"}) == 80
    assert terminal_columns({"COLUMNS": "0"}) is None
    assert terminal_columns({}) is None
