"""``should_parse`` itself over the real re-fetch corpus (Open Terms Archive captures), each
sequence's captures in order through one real SQLite store and each pair through its own:
every labelled real edit is a change, and at least 99% of the noise steps are unchanged
(issue 20; ``benchmarks/refetch_quality.py`` prints the same figures beside its peers)."""

from __future__ import annotations

import csv
import gzip
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import shared_corpus

from changewatch import ChangeWatch

pytestmark = pytest.mark.corpus
CORPUS = shared_corpus.path("refetch-opentermsarchive")


def _sequences() -> list[tuple[str, str, list[tuple[str, Path]]]]:
    """(slug, url, [(label, capture)…]) of each sequence, oldest capture first."""
    out = []
    with (CORPUS / "index.tsv").open() as handle:
        for page in csv.DictReader(handle, delimiter="\t"):
            folder = CORPUS / "pages" / page["slug"]
            with (folder / "versions.tsv").open() as versions:
                captures = [
                    (row["label"], folder / f"{row['n']}.html.gz")
                    for row in csv.DictReader(versions, delimiter="\t")
                ]
            out.append((page["slug"], page["url"], captures))
    with (CORPUS / "pairs" / "pairs.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            folder = CORPUS / "pairs" / row["slug"]
            pair = [
                ("", folder / f"{row['k']}-before.html.gz"),
                (row["label"], folder / f"{row['k']}-after.html.gz"),
            ]
            out.append((f"pair {row['slug']}:{row['k']}", row["url"], pair))
    return out


@pytest.fixture(scope="module")
def outcomes() -> dict[str, list[str]]:
    """Step names by label and decision ("1 missed", "0 unchanged", "0 changed"…)."""
    out: dict[str, list[str]] = {"1 caught": [], "1 missed": [], "0 unchanged": [], "0 changed": []}
    for name, url, captures in _sequences():
        now = [datetime(2026, 1, 1, tzinfo=UTC)]
        watch = ChangeWatch("sqlite:///:memory:", "memory:", clock=lambda now=now: now[0])
        try:
            for step, (label, path) in enumerate(captures):
                now[0] += timedelta(days=1)
                decision = watch.should_parse(url, gzip.decompress(path.read_bytes()))
                unchanged = decision.kind == "unchanged"
                if label == "1":
                    out["1 missed" if unchanged else "1 caught"].append(f"{name}:{step}")
                elif label == "0":
                    out["0 unchanged" if unchanged else "0 changed"].append(f"{name}:{step}")
        finally:
            watch.close()
    return out


def test_should_parse_never_skips_a_labelled_real_edit(outcomes: dict[str, list[str]]) -> None:
    assert outcomes["1 missed"] == []
    assert len(outcomes["1 caught"]) == 71


def test_should_parse_skips_at_least_99_percent_of_noise(outcomes: dict[str, list[str]]) -> None:
    """411 of 415 when written; the four left are listed in docs/fingerprints.md."""
    unchanged, changed = len(outcomes["0 unchanged"]), len(outcomes["0 changed"])
    assert unchanged + changed == 415
    assert unchanged / (unchanged + changed) >= 0.99, outcomes["0 changed"]
