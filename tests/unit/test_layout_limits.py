"""The size rules of docs/architecture.md: modules of at most 600 lines, functions of at most 80.

Big rooms hide several jobs; these limits keep each module and function to one. The check reads
the package's source with :mod:`ast`, so it needs nothing installed beyond the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import changewatch

PACKAGE = Path(changewatch.__file__).parent
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_package_has_modules_to_check() -> None:
    assert len(_modules()) > 50


def test_every_module_is_at_most_600_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in _modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_every_function_is_at_most_80_lines() -> None:
    long: dict[str, int] = {}
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE)}:{node.name}"] = lines
    assert long == {}
