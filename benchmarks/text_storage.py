"""What keeping page texts (``store_text``) costs: stored bytes per version, against the page.

For each real page of ``../shared/corpus/pages-readability`` (CHANGEWATCH_CORPUS overrides):
the page's bytes, its normalised text (UTF-8 bytes, what ``changewatch diff`` needs) and that
text zstd-compressed as ``page_texts.text_zstd`` holds it, at changewatch's level and at two
peer levels measured in the same run (with their compression time). Medians and totals.

    python benchmarks/text_storage.py [--quick] [--json]
"""

from __future__ import annotations

import gzip
import json
import statistics
import time
from argparse import ArgumentParser

from _common import PAGES

from changewatch.fingerprint import normalise
from changewatch.store.texts import DEFAULT_ZSTD_LEVEL, compress_text

CORPUS = PAGES  # benchmarks/_common.py: CHANGEWATCH_CORPUS or ../shared/corpus
LEVELS = sorted({3, DEFAULT_ZSTD_LEVEL, 19})


def main() -> None:
    """Measure every page, print a markdown table (or JSON)."""
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 20 pages")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    files = sorted(CORPUS.glob("*.html.gz"))[: 20 if args.quick else None]
    page_bytes, text_bytes = [], []
    stored: dict[int, list[int]] = {level: [] for level in LEVELS}
    seconds: dict[int, float] = dict.fromkeys(LEVELS, 0.0)
    for path in files:
        html = gzip.decompress(path.read_bytes())
        text = normalise(html)
        if not text:
            continue
        page_bytes.append(len(html))
        text_bytes.append(len(text.encode("utf-8")))
        for level in LEVELS:
            start = time.perf_counter()
            blob = compress_text(text, level)
            seconds[level] += time.perf_counter() - start
            stored[level].append(len(blob))
    rows = []
    for level in LEVELS:
        rows.append(
            {
                "level": level,
                "default": level == DEFAULT_ZSTD_LEVEL,
                "median_stored_bytes": statistics.median(stored[level]),
                "stored_vs_text": sum(stored[level]) / sum(text_bytes),
                "stored_vs_page": sum(stored[level]) / sum(page_bytes),
                "ms_per_page": seconds[level] / len(page_bytes) * 1000,
            }
        )
    summary = {
        "pages": len(page_bytes),
        "median_page_bytes": statistics.median(page_bytes),
        "median_text_bytes": statistics.median(text_bytes),
        "levels": rows,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(
        f"{summary['pages']} corpus pages: median page {summary['median_page_bytes']:,.0f} B, "
        f"median normalised text {summary['median_text_bytes']:,.0f} B\n"
    )
    print("| zstd level | median stored / version | stored ÷ text | stored ÷ page | ms / page |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        name = f"{r['level']}{' (changewatch)' if r['default'] else ''}"
        print(
            f"| {name} | {r['median_stored_bytes']:,.0f} B | {r['stored_vs_text']:.1%} | "
            f"{r['stored_vs_page']:.1%} | {r['ms_per_page']:.2f} |"
        )


if __name__ == "__main__":
    main()
