"""How the SimHash shingle size and the draw of the hash function move the quality figures.

The texts are the ones ``near_dup_quality.py`` makes from the 130 corpus pages (its small
edits of visible text, and its pairs of different pages); only the SimHash step varies:

- shingle size 1 (single words) to 4 (word 4-shingles), weights = counts capped at 255;
- ``--seeds`` hash functions per size, drawn from the library's family by keying the word
  hashes (``fmix64(word_hash ^ key)`` for a seeded random 64-bit key), so a figure is not one
  lucky or unlucky draw.

For each size it prints the mean and the worst over the draws of (b) the share of small
edits within the ``minor`` distance (3 bits) and (c) the share of pairs of different pages
further apart than 3 bits — the trade-off the shingle size sets.

    python benchmarks/shingle_sweep.py [--quick] [--seeds 8]
"""

from __future__ import annotations

import importlib
import random
import statistics
import sys
from argparse import ArgumentParser
from itertools import combinations
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import near_dup_quality as quality

from changewatch.fingerprint import normalise

simhash64 = importlib.import_module("changewatch.fingerprint.simhash64")
MINOR = 3


def texts(pages: dict[str, bytes]) -> tuple[list[tuple[str, str]], list[str]]:
    """(original, edited) normalised texts of every visible edit, and one text per page."""
    edits: list[tuple[str, str]] = []
    distinct: dict[str, str] = {}
    for index, page in enumerate(pages.values()):
        base = normalise(page)
        reference = normalise(page, policy=quality.REFERENCE)
        distinct.setdefault(reference, base)
        for edited in quality.edits(page, index).values():
            after = normalise(edited)
            if normalise(edited, policy=quality.REFERENCE) != reference and after != base:
                edits.append((base, after))
    return edits, list(distinct.values())


def simhash_with(text: str, size: int, key: int) -> int:
    """SimHash of ``text`` with word ``size``-shingles and word hashes keyed by ``key``."""
    words = simhash64._word_hashes(text)
    if len(words) == 0:
        return 0
    with np.errstate(over="ignore"):
        words = simhash64._fmix64_array(words ^ np.uint64(key))
        if size > 1 and len(words) >= size:
            count = len(words) - size + 1
            combined = words[:count].copy()
            for j in range(1, size):
                combined = combined * np.uint64(simhash64._GOLDEN) ^ simhash64._rotl_array(
                    words[j : j + count], 21 * j
                )
            words = simhash64._fmix64_array(combined)
        else:
            words = simhash64._fmix64_array(words)
    unique, counts = np.unique(words, return_counts=True)
    weights = np.minimum(counts, simhash64.MAX_FEATURE_WEIGHT)
    return int(simhash64._weighted_simhash(unique, weights))


def main() -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30 pages, 2 draws")
    parser.add_argument("--seeds", type=int, default=8, help="hash draws per shingle size")
    args = parser.parse_args()
    pages = quality.load_corpus(30 if args.quick else None)
    seeds = 2 if args.quick else args.seeds
    edits, distinct = texts(pages)
    print(
        f"shingle sweep: {len(pages)} pages, {len(edits)} visible edits, "
        f"{len(distinct) * (len(distinct) - 1) // 2} page pairs, {seeds} hash draws per size\n"
    )
    print("| shingle | (b) edits minor: mean | worst | (c) pairs > 3 bits: mean | worst |")
    print("|---|---|---|---|---|")
    rng = random.Random(20261130)
    keys = [rng.getrandbits(64) for _ in range(seeds)]
    for size in (1, 2, 3, 4):
        minor, far = [], []
        for key in keys:
            near = sum(
                (simhash_with(a, size, key) ^ simhash_with(b, size, key)).bit_count() <= MINOR
                for a, b in edits
            )
            minor.append(near / len(edits))
            hashes = [simhash_with(text, size, key) for text in distinct]
            apart = sum((x ^ y).bit_count() > MINOR for x, y in combinations(hashes, 2))
            far.append(apart / max(1, len(hashes) * (len(hashes) - 1) // 2))
        print(
            f"| {size} | {statistics.mean(minor):.2%} | {min(minor):.2%} "
            f"| {statistics.mean(far):.3%} | {min(far):.3%} |"
        )


if __name__ == "__main__":
    main()
