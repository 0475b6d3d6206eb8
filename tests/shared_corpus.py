"""Where the shared real-data corpus is, for the tests that read it.

``CHANGEWATCH_CORPUS`` names it; otherwise it is ``../shared/corpus`` beside the checkout
(the layout of this project's CI). Tests that read it carry ``@pytest.mark.corpus`` (or a
module-level ``pytestmark``); without the corpus they are skipped with :data:`REASON` —
never an error at collection — except under ``CI=true``, where ``.ci/run`` refuses to start
without it. ``tests/corpus-manifest.json`` records each folder's upstream and the SHA-256 of
every file (``python tests/verify_corpus.py`` checks a copy against it).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PRESENT", "REASON", "ROOT", "path"]

#: The repository's root: the parent of ``tests/``.
REPOSITORY = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("CHANGEWATCH_CORPUS") or REPOSITORY.parent / "shared" / "corpus")
#: The corpus is there (its README is the marker every copy has).
PRESENT = (ROOT / "README.md").is_file()
REASON = (
    f"the shared corpus is not at {ROOT} ("
    + ("CHANGEWATCH_CORPUS" if os.environ.get("CHANGEWATCH_CORPUS") else "../shared/corpus")
    + "): set CHANGEWATCH_CORPUS to its path or put it at ../shared/corpus beside the "
    "checkout (README, Development: the test corpus)"
)


def path(*parts: str) -> Path:
    """A path inside the corpus (whether or not it exists)."""
    return ROOT.joinpath(*parts)
