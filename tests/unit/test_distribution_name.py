"""The distribution's name is free on PyPI, and every documented install line works from a
checkout (issue 14): PyPI's ``changewatch`` is an unrelated project."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
INSTALL = re.compile(r"pip install\s+(?:-e\s+)?('[^']*'|\"[^\"]*\"|\S+)")


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_distribution_is_changewatch_crawl() -> None:
    """pyproject names the distribution changewatch-crawl; the import package stays changewatch."""
    assert PYPROJECT["project"]["name"] == "changewatch-crawl"
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["changewatch"]


def test_every_documented_install_line_works_from_a_checkout() -> None:
    """Each ``pip install`` in README and docs installs this checkout (``-e .``, ``-e '.[X]'``
    with X a real extra) or names changewatch-crawl; never the unrelated ``changewatch``."""
    extras = set(PYPROJECT["project"]["optional-dependencies"]) | {"EXTRA"}
    seen = 0
    for path in _documents():
        for target in INSTALL.findall(path.read_text(encoding="utf-8")):
            spec = target.strip("'\"`")
            seen += 1
            where = f"{path.name}: pip install {target}"
            if spec.startswith("."):
                named = re.fullmatch(r"\.(?:\[([\w,]+)\])?", spec)
                assert named, where
                assert set(filter(None, (named.group(1) or "").split(","))) <= extras, where
            else:
                assert spec.startswith("changewatch-crawl"), where
    assert seen >= 8


def test_the_readme_names_the_published_name() -> None:
    """README says what the distribution is called on an index."""
    assert "pip install 'changewatch-crawl[EXTRA]'" in (ROOT / "README.md").read_text()


def test_extras_that_name_the_project_name_it_by_its_distribution_name() -> None:
    """An extra that pulls in other extras (``dev``) names this distribution as pyproject
    does: under the old name pip would look for the unrelated project's extras (and warn,
    installing none of them)."""
    self_references = [
        requirement
        for requirements in PYPROJECT["project"]["optional-dependencies"].values()
        for requirement in requirements
        if re.match(r"changewatch\b", requirement)
    ]
    assert self_references, "the dev extra names the other extras"
    assert all(r.startswith("changewatch-crawl[") for r in self_references), self_references
