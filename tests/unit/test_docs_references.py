"""The files and tests that README, SECURITY.md and docs/ point at exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
DOCUMENTS = [
    REPOSITORY / "README.md",
    REPOSITORY / "SECURITY.md",
    *(REPOSITORY / "docs").glob("*.md"),
]
# A repository file (tests/, changewatch/, benchmarks/, docs/, migrations/, with a file
# extension: "changewatch/new" is a Scrapy stats key) and, for a test, an optional ::name.
_PATH_RE = re.compile(
    r"(?<![\w./-])((?:tests|changewatch|benchmarks|docs|migrations)/[\w./-]*\.(?:py|md|json|toml|txt))"
    r"(::\w+)?"
)


def _references() -> list[tuple[str, str, str | None]]:
    found = []
    for document in DOCUMENTS:
        for match in _PATH_RE.finditer(document.read_text(encoding="utf-8")):
            found.append((document.name, match.group(1), (match.group(2) or "")[2:] or None))
    return found


@pytest.mark.parametrize(
    ("document", "path", "test"), sorted(set(_references())), ids=lambda value: str(value)
)
def test_a_documented_path_exists(document: str, path: str, test: str | None) -> None:
    """A path a document names is in the repository, and a named test is in its file."""
    target = REPOSITORY / path
    assert target.exists(), f"{document} names {path}, which does not exist"
    if test is not None:
        assert re.search(rf"^def {test}\b", target.read_text(), re.M), f"{document}: {path}::{test}"
