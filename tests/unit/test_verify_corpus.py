"""tests/corpus-manifest.json and tests/verify_corpus.py: where each corpus folder came from,
and a check that a copy of the corpus is the same, file by file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import shared_corpus
import verify_corpus

MANIFEST = json.loads(verify_corpus.MANIFEST.read_text(encoding="utf-8"))


def test_every_folder_names_upstream_commit_path_and_licence() -> None:
    """Each corpus folder's entry names its upstream, commit (or why none), path and licence,
    and every listed file belongs to a described folder."""
    folders = MANIFEST["folders"]
    assert set(folders) == {
        "pages-readability",
        "sitemaps-crawler-commons",
        "refetch-opentermsarchive",
        "urls",
    }
    for name, entry in folders.items():
        assert entry["upstream"].startswith("https://github.com/"), name
        assert entry["commit"] or entry["commit_note"], name
        assert entry["path"], name
        assert entry["licence"], name
        assert entry["licence_file"] in MANIFEST["files"], name
    assert len(MANIFEST["files"]) > 900
    assert all(len(e["sha256"]) == 64 for e in MANIFEST["files"].values())


def _tiny_corpus(root: Path, mtime: float = 0.0) -> None:
    (root / "urls").mkdir(parents=True)
    (root / "README.md").write_text("# corpus\n")
    (root / "urls" / "cases.json").write_text("[]\n")
    (root / "urls" / "page.html.gz").write_bytes(gzip.compress(b"<p>a page</p>", mtime=mtime))


def test_verify_reports_every_kind_of_difference(tmp_path: Path) -> None:
    """A copy that matches passes; a changed, missing or extra file is named; a re-compressed
    .gz differs by its bytes but matches by content with ``--content``."""
    _tiny_corpus(tmp_path / "a")
    manifest = verify_corpus.update(tmp_path / "a", {"folders": {"urls": {}}, "files": {}})
    assert verify_corpus.verify(tmp_path / "a", manifest) == []

    _tiny_corpus(tmp_path / "b", mtime=1_700_000_000)
    assert [p.split(" (")[0] for p in verify_corpus.verify(tmp_path / "b", manifest)] == [
        "differs: urls/page.html.gz"
    ]
    assert verify_corpus.verify(tmp_path / "b", manifest, content=True) == []

    (tmp_path / "b" / "urls" / "cases.json").write_text("[1]\n")
    (tmp_path / "b" / "README.md").unlink()
    (tmp_path / "b" / "urls" / "extra.txt").write_text("x")
    problems = verify_corpus.verify(tmp_path / "b", manifest, content=True)
    assert problems[0] == "missing: README.md"
    assert problems[1] == "not in the manifest: urls/extra.txt"
    assert problems[2].startswith("differs: urls/cases.json (sha256 ")


def test_main_exits_1_without_a_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Pointed at no corpus, the verifier says so and exits 1."""
    assert verify_corpus.main([str(tmp_path / "nothing")]) == 1
    assert "no corpus at" in capsys.readouterr().err


@pytest.mark.corpus
def test_the_shared_corpus_matches_its_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    """The shared corpus is, file for file, the one the manifest describes."""
    assert verify_corpus.main([str(shared_corpus.ROOT)]) == 0, capsys.readouterr().out
