"""The hostile-page guard (``too_deep``) on real pages, beside lexbor's parse and an older
revision's guard, interleaved page by page (so the machine's load falls on all alike).

    python benchmarks/guard_cost.py [--baseline main] [--repeats 7]

On the 130 pages of ``../shared/corpus/pages-readability`` (``CHANGEWATCH_CORPUS``
overrides), each given as ``fingerprint()`` gives it (the UTF-8 bytes). Prints the median of
the passes in ms a page (mean over the pages) for: the parse alone, the guard here, its
:func:`~changewatch.fingerprint.tagscan.scan` alone, the guard at ``--baseline``; and how
many pages the nesting model read here.
"""

from __future__ import annotations

import gc
import importlib
import statistics
import tempfile
import time
from argparse import ArgumentParser
from collections.abc import Callable
from pathlib import Path

from _common import real_pages
from fingerprint_versions import baseline_package
from selectolax.lexbor import LexborHTMLParser

from changewatch.fingerprint import guard, nesting
from changewatch.fingerprint.decode import utf8_source
from changewatch.fingerprint.tagscan import scan
from changewatch.fingerprint.text import _lt_count


def main() -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    pages = []
    for _, body in real_pages():
        source = utf8_source(body, None)
        pages.append(source if source is not None else body)
    counts = [_lt_count(page) for page in pages]
    with tempfile.TemporaryDirectory() as tmp:
        baseline_package(args.baseline, Path(tmp))
        old = importlib.import_module("cw_baseline.fingerprint.guard").too_deep
        steps: dict[str, Callable[[str | bytes, int], object]] = {
            "parse alone (lexbor)": lambda page, _: LexborHTMLParser(page),
            "too_deep here": guard.too_deep,
            "scan alone here": lambda page, _: scan(
                page, guard.MAX_ATTRIBUTES, guard.MAX_NAMES_FEW_TAGS
            ),
            f"too_deep at {args.baseline}": old,
        }
        passes: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(args.repeats):
            totals = dict.fromkeys(steps, 0.0)
            gc.disable()
            try:
                for page, count in zip(pages, counts, strict=True):
                    for name, step in steps.items():
                        started = time.perf_counter()
                        step(page, count)
                        totals[name] += time.perf_counter() - started
            finally:
                gc.enable()
            for name, total in totals.items():
                passes[name].append(1000 * total / len(pages))
    modelled = _modelled(pages, counts)
    median = {name: statistics.median(values) for name, values in passes.items()}
    parse = median["parse alone (lexbor)"]
    print(f"{len(pages)} pages, median of {args.repeats} interleaved passes\n")
    print("| step | ms/page | ÷ parse alone |\n|---|---:|---:|")
    for name, value in median.items():
        print(f"| {name} | {value:.3f} | {value / parse:.2f}× |")
    print(f"\npages the nesting model read here: {len(modelled)} ({', '.join(modelled)})")


def _modelled(pages: list[str | bytes], counts: list[int]) -> list[str]:
    """The sizes (in ``<``) of the pages on which the guard here ran the nesting model."""
    runs: list[str] = []
    run = nesting.Model.run

    def counting(model: nesting.Model, text: str | bytes) -> None:
        runs.append(f"{_lt_count(text):,} <")
        run(model, text)

    nesting.Model.run = counting  # type: ignore[method-assign]
    try:
        for page, count in zip(pages, counts, strict=True):
            guard.too_deep(page, count)
    finally:
        nesting.Model.run = run  # type: ignore[method-assign]
    return runs


if __name__ == "__main__":
    main()
