"""Check a copy of the shared test corpus against tests/corpus-manifest.json.

The manifest names, for each corpus folder, the upstream repository, commit, path and licence
its files came from, and holds the SHA-256 of every file — and, for a ``.gz`` file, of its
decompressed content too, since gzip headers (a time stamp) differ between two compressions of
the same page. A contributor who fetched the corpus from upstream (README, Development) runs

    python tests/verify_corpus.py [DIR] [--content]

``DIR`` defaults to ``CHANGEWATCH_CORPUS`` or ``../shared/corpus`` beside the checkout;
``--content`` compares ``.gz`` files by their decompressed bytes (for a re-compressed copy).
Exit 0 when every file matches and none is missing or unlisted, else 1 with one line per
difference. ``--update`` rewrites the manifest's hashes from ``DIR`` (keeping what it says of
each folder): for whoever changes the corpus.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "corpus-manifest.json"


def default_corpus() -> Path:
    """``CHANGEWATCH_CORPUS``, else ``../shared/corpus`` beside the checkout."""
    configured = os.environ.get("CHANGEWATCH_CORPUS")
    return Path(configured) if configured else HERE.parents[1] / "shared" / "corpus"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_entry(path: Path) -> dict[str, str]:
    """``sha256`` of the file's bytes and, for ``.gz``, ``content_sha256`` of its content."""
    data = path.read_bytes()
    entry = {"sha256": _sha256(data)}
    if path.suffix == ".gz":
        entry["content_sha256"] = _sha256(gzip.decompress(data))
    return entry


def corpus_files(root: Path) -> dict[str, Path]:
    """Every file under ``root`` by its POSIX path relative to it (hidden files left out)."""
    return {
        p.relative_to(root).as_posix(): p
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def verify(root: Path, manifest: dict[str, object], *, content: bool = False) -> list[str]:
    """The differences between ``root`` and ``manifest``; empty when they agree."""
    listed = manifest["files"]
    assert isinstance(listed, dict)
    found = corpus_files(root)
    problems = [f"missing: {name}" for name in sorted(set(listed) - set(found))]
    problems += [f"not in the manifest: {name}" for name in sorted(set(found) - set(listed))]
    for name in sorted(set(listed) & set(found)):
        expected = listed[name]
        actual = file_entry(found[name])
        key = "content_sha256" if content and "content_sha256" in expected else "sha256"
        if actual[key] != expected[key]:
            problems.append(f"differs: {name} ({key} {actual[key]}, manifest {expected[key]})")
    folders = manifest["folders"]
    assert isinstance(folders, dict)
    for name in listed:
        if name.split("/", 1)[0] not in folders and "/" in name:
            problems.append(f"no folder entry (upstream, commit, licence) for: {name}")
    return problems


def update(root: Path, manifest: dict[str, object]) -> dict[str, object]:
    """``manifest`` with the hashes of every file under ``root``."""
    return {**manifest, "files": {n: file_entry(p) for n, p in corpus_files(root).items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=None)
    parser.add_argument("--content", action="store_true", help="compare .gz files by content")
    parser.add_argument("--update", action="store_true", help="rewrite the manifest's hashes")
    args = parser.parse_args(argv)
    root: Path = args.corpus or default_corpus()
    if not root.is_dir():
        print(f"verify_corpus: no corpus at {root} (set CHANGEWATCH_CORPUS)", file=sys.stderr)
        return 1
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    if args.update:
        text = json.dumps(update(root, manifest), indent=1, ensure_ascii=False) + "\n"
        MANIFEST.write_text(text, encoding="utf-8")
        print(f"verify_corpus: {MANIFEST.name} rewritten from {root}")
        return 0
    problems = verify(root, manifest, content=args.content)
    for line in problems:
        print(line)
    files = manifest["files"]
    assert isinstance(files, dict)
    if problems:
        print(f"verify_corpus: {len(problems)} differences from {MANIFEST.name}", file=sys.stderr)
        return 1
    print(f"verify_corpus: all {len(files)} files of {root} match {MANIFEST.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
