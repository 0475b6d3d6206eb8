"""Throughput of ``fingerprint`` beside selectolax parsing alone and ``simhash.Simhash(text)``.

On the 130 real pages of ``../shared/corpus/pages-readability`` (``CHANGEWATCH_CORPUS``
overrides the corpus directory), in one run, each figure the median of ``--repeats`` passes:

- ``fingerprint(page)`` — the whole thing (decode, parse, drop, blocks and regions, outlinks,
  normalise, SHA-256s, SimHash), the outlink memo warm as on a re-crawl (every pass after the
  first sees the same links), and cold (memo cleared before each pass), and with
  ``regions = false`` (all visible text read in one call, as version 3 did) and
  ``with_blocks=True`` (the per-block keys for learning noise);
- selectolax parse alone — ``LexborHTMLParser(page)`` on the same bytes, each tree freed before
  the next page is parsed, as ``fingerprint`` does (a list of all 130 trees alive at once,
  freed together, takes about twice as long per page and would flatter the ratio);
- the floor: parse the bytes, drop invisible elements, take the text, raw SHA-256 — what any
  fingerprint of the visible text must spend before normalising or hashing it;
- the steps of ``fingerprint`` one by one, cumulatively, to show where the time goes;
- our SimHash step, ``simhash(text)``, beside ``simhash.Simhash(text)`` (the PyPI package, its
  own features and hash) on the same normalised texts. The package raises ``OverflowError``
  under numpy 2 when a feature's weight exceeds 255 (1e0ng/simhash#74); such pages are counted
  and left out of *both* SimHash figures.

    python benchmarks/fingerprint.py [--quick] [--repeats 5] [--json]
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import time
from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any

import simhash as simhash_package
from _common import PAGES
from selectolax.lexbor import LexborHTMLParser

from changewatch.fingerprint import (
    DEFAULT_POLICY,
    FingerprintPolicy,
    content_sha256,
    decode_html,
    fingerprint,
    normalise,
    raw_sha256,
    simhash,
)
from changewatch.fingerprint.decode import utf8_source
from changewatch.fingerprint.regions import _canonical_link, _relative_link
from changewatch.fingerprint.text import _visible_text

CORPUS = PAGES  # benchmarks/_common.py: CHANGEWATCH_CORPUS or ../shared/corpus


def load_corpus(limit: int | None = None) -> list[bytes]:
    """The corpus pages as fetched bytes, by file name (``limit``: the first N)."""
    paths = sorted(CORPUS.glob("*.html.gz"))[:limit]
    if not paths:
        sys.exit(f"no pages under {CORPUS}; set CHANGEWATCH_CORPUS")
    return [gzip.decompress(p.read_bytes()) for p in paths]


def timed(run: Callable[[], object], repeats: int) -> float:
    """Median seconds of ``repeats`` calls of ``run``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30 pages, 3 repeats")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    pages = load_corpus(30 if args.quick else None)
    repeats = 3 if args.quick else args.repeats
    megabytes = sum(map(len, pages)) / 1e6
    # What fingerprint() hands the parser: the bytes when they are valid UTF-8, else the text.
    sources = [utf8_source(p, None) or decode_html(p) for p in pages]
    texts = [normalise(p) for p in pages]
    overflow = []
    for index, text in enumerate(texts):
        try:
            simhash_package.Simhash(text)
        except OverflowError:
            overflow.append(index)
    usable = [t for i, t in enumerate(texts) if i not in set(overflow)]

    # Each tree is freed before the next page is parsed, as in fingerprint().
    def parse_each(items: list[bytes] | list[str | bytes]) -> None:
        for item in items:
            LexborHTMLParser(item)

    def floor() -> None:
        for page in pages:
            raw_sha256(page)
            _visible_text(LexborHTMLParser(page), DEFAULT_POLICY)

    def steps_to_text() -> None:
        for source in sources:
            _visible_text(LexborHTMLParser(source), DEFAULT_POLICY)

    def cold() -> None:
        _canonical_link.cache_clear()
        _relative_link.cache_clear()
        for page in pages:
            fingerprint(page)

    flat = FingerprintPolicy(regions=False)

    def steps_without_simhash() -> None:
        for page in pages:
            raw_sha256(page)
            content_sha256(normalise(page))

    rows: dict[str, float] = {
        "fingerprint(page)": timed(lambda: [fingerprint(p) for p in pages], repeats),
        "  fingerprint(page), outlink memo cleared each pass": timed(cold, repeats),
        "  fingerprint(page, policy=regions off)": timed(
            lambda: [fingerprint(p, policy=flat) for p in pages], repeats
        ),
        "  fingerprint(page, with_blocks=True)": timed(
            lambda: [fingerprint(p, with_blocks=True) for p in pages], repeats
        ),
        "selectolax parse alone": timed(lambda: parse_each(pages), repeats),
        "floor: parse + drop + text + raw sha256": timed(floor, repeats),
        "  parse (what fingerprint parses)": timed(lambda: parse_each(sources), repeats),
        "  parse + drop + text": timed(steps_to_text, repeats),
        "  raw sha256 + normalise + content sha256": timed(steps_without_simhash, repeats),
        "  simhash(text) (all pages)": timed(lambda: [simhash(t) for t in texts], repeats),
    }
    ours = timed(lambda: [simhash(t) for t in usable], repeats)
    package = timed(lambda: [simhash_package.Simhash(t) for t in usable], repeats)
    lines = [
        f"fingerprint throughput: {len(pages)} pages, {megabytes:.1f} MB, "
        f"median of {repeats} passes",
        "",
        "| step | pages/s | MB/s | ms/page |",
        "|---|---|---|---|",
    ]
    for name, seconds in rows.items():
        lines.append(
            f"| {name} | {len(pages) / seconds:,.0f} | {megabytes / seconds:,.1f} "
            f"| {1000 * seconds / len(pages):.3f} |"
        )
    parse_alone = rows["selectolax parse alone"]
    whole = rows["fingerprint(page)"]
    lines += [
        "",
        f"| SimHash on the same {len(usable)} texts | pages/s | ms/page |",
        "|---|---|---|",
        f"| changewatch simhash(text) | {len(usable) / ours:,.0f} "
        f"| {1000 * ours / len(usable):.3f} |",
        f"| simhash.Simhash(text) | {len(usable) / package:,.0f} "
        f"| {1000 * package / len(usable):.3f} |",
        "",
        f"- simhash.Simhash(text) raised OverflowError on {len(overflow)} of {len(pages)} pages "
        "(left out of both SimHash rows)",
        f"- SimHash step: {package / ours:.1f}× faster than simhash.Simhash(text) (target ≥ 20×); "
        f"{rows['  simhash(text) (all pages)'] / parse_alone:.0%} of the parse-alone time",
        f"- fingerprint rate is {parse_alone / whole:.0%} of the parse-alone rate (target ≥ 70%); "
        f"memo cold {parse_alone / rows['  fingerprint(page), outlink memo cleared each pass']:.0%}"
        f", regions off {parse_alone / rows['  fingerprint(page, policy=regions off)']:.0%}",
        f"- the floor (parse + drop + text + raw SHA-256) alone runs at "
        f"{parse_alone / rows['floor: parse + drop + text + raw sha256']:.0%} of the parse-alone "
        f"rate; the rest (UTF-8 check, normalising, content SHA-256, SimHash) takes "
        f"{(whole - rows['floor: parse + drop + text + raw sha256']) / whole:.0%} of "
        "fingerprint's time",
    ]
    print("\n".join(lines))
    if args.json:
        out: dict[str, Any] = {k.strip(): len(pages) / v for k, v in rows.items()}
        out["simhash_speedup"] = package / ours
        out["fingerprint_vs_parse"] = parse_alone / whole
        out["floor_vs_parse"] = parse_alone / rows["floor: parse + drop + text + raw sha256"]
        out["overflow_pages"] = len(overflow)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
