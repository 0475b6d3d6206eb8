"""``changewatch demo``: the bundled site crawled twice, through the installed console script."""

from __future__ import annotations

import difflib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from changewatch.demo import site
from changewatch.fingerprint import fingerprint, hamming, normalise

from ._cli import RUN_TIMEOUT_S, Run, clean_env, script

KINDS = ("new", "unchanged", "minor", "changed")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON report of one ``changewatch demo --json`` run."""
    workdir = tmp_path_factory.mktemp("demo")
    proc = subprocess.run(
        [script(), "demo", "--json"],
        cwd=workdir,
        env=clean_env(workdir),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert list(workdir.iterdir()) == [], "the demo wrote outside its own directory"
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def _pages(report: dict[str, Any], crawl: int) -> dict[str, dict[str, Any]]:
    return {p["path"]: p for p in report["crawls"][crawl - 1]["pages"]}


def test_every_kind_appears(report: dict[str, Any]) -> None:
    """The demo shows every decision kind, and a removed page as gone."""
    assert set(KINDS) <= set(report["kinds"])
    assert "gone" in report["kinds"]
    counts = report["crawls"][1]["counts"]
    assert (counts["new"], counts["unchanged"], counts["gone"]) == (1, 5, 1)
    assert counts["minor"] + counts["changed"] == 3  # the edit, the rewrite, the home page


def test_first_crawl_finds_every_page_new(report: dict[str, Any]) -> None:
    """Crawl 1 reaches all nine pages by following links from the home page, all new."""
    first = _pages(report, 1)
    assert set(first) == set(site.first_site().pages)
    assert {p["kind"] for p in first.values()} == {"new"}
    assert {p["status"] for p in first.values()} == {200}


def test_duplicate_page_names_its_original(report: dict[str, Any]) -> None:
    """The printable copy of a page is new with duplicate_of naming the original."""
    first = _pages(report, 1)
    assert first[site.DUPLICATE_PATH]["duplicate_of"] == site.DUPLICATED_PATH
    others = [p for path, p in first.items() if path != site.DUPLICATE_PATH]
    assert all(p["duplicate_of"] is None for p in others)


def test_noise_only_pages_are_unchanged(report: dict[str, Any]) -> None:
    """Pages re-rendered with a new nonce, CSRF token, comment and whitespace are unchanged."""
    noise = [p for p in report["crawls"][1]["pages"] if p["change"] == "noise only"]
    assert len(noise) == 5
    for page in noise:
        assert (page["kind"], page["distance"], page["decided_by"]) == (
            "unchanged",
            0,
            "normalised",
        ), page


def test_one_sentence_edit_is_minor(report: dict[str, Any]) -> None:
    """The one-sentence edit to the long guide is minor, within the default distance of 3."""
    page = _pages(report, 2)[site.EDITED_PATH]
    assert page["change"] == "one-sentence edit"
    assert page["kind"] == "minor"
    assert page["distance"] <= 3


def test_rewrite_is_changed(report: dict[str, Any]) -> None:
    """The rewritten page is changed, far beyond the minor distance."""
    page = _pages(report, 2)[site.REWRITTEN_PATH]
    assert (page["change"], page["kind"]) == ("rewritten", "changed")
    assert page["distance"] > 3


def test_added_page_is_new_and_removed_page_gone(report: dict[str, Any]) -> None:
    """The page linked from the home page is new; the removed page answers 404, gone."""
    second = _pages(report, 2)
    added = second[site.ADDED_PATH]
    assert (added["kind"], added["status"], added["duplicate_of"]) == ("new", 200, None)
    removed = second[site.REMOVED_PATH]
    assert (removed["kind"], removed["status"], removed["distance"]) == ("gone", 404, None)


def test_history_of_edited_pages(report: dict[str, Any]) -> None:
    """The report ends with the stored history of each page that changed: new, then the edit."""
    histories = {h["path"]: h["versions"] for h in report["histories"]}
    assert set(histories) == {site.HOME_PATH, site.EDITED_PATH, site.REWRITTEN_PATH}
    edited = histories[site.EDITED_PATH]
    assert [(v["version"], v["kind"]) for v in edited] == [(1, "new"), (2, "minor")]
    assert edited[1]["distance"] == _pages(report, 2)[site.EDITED_PATH]["distance"]
    for version in edited:
        assert version["first_seen"].endswith("+00:00")


def test_table_output(run: Run) -> None:
    """``changewatch demo`` prints both crawl tables, every kind and the summary lines."""
    proc = run("demo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Crawl 1: first crawl" in out
    assert "Crawl 2: second crawl" in out
    for kind in (*KINDS, "gone"):
        assert re.search(rf"\b{kind}\b", out), kind
    assert "crawl 1: 9 pages: 9 new, 0 unchanged, 0 minor, 0 changed, 0 gone" in out
    assert re.search(r"crawl 2: 10 pages: 1 new, 5 unchanged, \d minor, \d changed, 1 gone", out)
    assert f"History of {site.EDITED_PATH}" in out


def test_keep_directory(run: Run, tmp_path: Path) -> None:
    """--keep DIR keeps the SQLite store and seen-sets; a non-empty DIR is refused."""
    keep = tmp_path / "kept"
    proc = run("demo", "--json", "--keep", str(keep))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kept"] is True
    assert {"cw.db", "crawl-1.seen", "crawl-2.seen"} <= {p.name for p in keep.iterdir()}
    proc = run("demo", "--keep", str(keep))
    assert proc.returncode == 1
    assert proc.stderr.startswith("changewatch: error: demo directory ")
    assert "is not empty" in proc.stderr


def test_bundled_pages_are_realistic() -> None:
    """Every bundled page is 2-10 KB; the edit changes one sentence and stays within distance 3."""
    before, after = site.first_site(), site.changed_site()
    for pages in (before.pages, after.pages):
        for path, body in pages.items():
            assert 2048 <= len(body) <= 10240, (path, len(body))
    old = normalise(before.pages[site.EDITED_PATH])
    new = normalise(after.pages[site.EDITED_PATH])
    sentences = [s for s in difflib.ndiff(old.split(". "), new.split(". ")) if s[0] in "+-"]
    assert len(sentences) == 2, sentences
    distance = hamming(
        fingerprint(before.pages[site.EDITED_PATH]).simhash,
        fingerprint(after.pages[site.EDITED_PATH]).simhash,
    )
    assert distance <= 3
