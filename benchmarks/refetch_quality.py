"""Noise versus real edits on real consecutive captures of real pages, per fingerprint method.

Over ``../shared/corpus/refetch-opentermsarchive`` (``CHANGEWATCH_CORPUS`` overrides the corpus
directory): the 10 sequences of 30 captures (29 labelled steps each) and the 222 before/after
pairs. Each step is labelled by Open Terms Archive's own record of the document's text: ``1`` a
real edit (must never be reported unchanged), ``markup`` (links or layout of the document only),
``0`` noise (the bytes changed, the document's text did not). For each method it reports the
share of noise steps reported unchanged, every real edit missed (listed), the markup steps
reported changed, and the median milliseconds a page:

- ``v3 should_parse`` — the version-3 content hash ``should_parse`` used before version 4: all
  visible text (hidden elements dropped), volatile stamps removed everywhere
  (:func:`changewatch.fingerprint.legacy.content_sha256_v3`, version 3's rules kept frozen
  for the upgrade of stored rows), so it can be compared in the same run;
- ``visible-text SHA-256`` — a plain SHA-256 of the text outside ``script``, ``style``,
  ``noscript`` and ``template``, whitespace collapsed (what the corpus labels were checked with);
- ``resiliparse main content`` — SHA-256 of resiliparse's ``extract_plain_text(main_content=
  True)`` (a C++ main-content extractor; the dev extra installs it for this comparison only);
- ``v4 content_sha256`` — :func:`changewatch.fingerprint.fingerprint` as ``should_parse`` uses
  it: the main content's hash, the page URL passed so that outlinks resolve. Chrome-only and
  outlink changes are counted beside it (``chrome``/``links`` flagged): they are what the
  Decision reports as ``chrome_changed``/``links_changed`` without calling the page changed.
- ``v4 should_parse`` — the decision itself: each sequence's captures, oldest first, and
  each pair's two, through :meth:`changewatch.ChangeWatch.should_parse` on a real SQLite
  store (one per sequence and per pair); a step counts as unchanged when the decision is
  ``unchanged`` — what a crawler skips. It differs from the row above where the store
  matters: a redirect stub keeps the stored version (``path="redirect"``), so the page's
  return is compared with what was stored before it.

Nothing here knows the sites: no file name, host or selector is special-cased.

    python benchmarks/refetch_quality.py [--json] [--worst N]
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import itertools
import json
import os
import statistics
import sys
import time
from argparse import ArgumentParser
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from changewatch.fingerprint import decode_html, fingerprint
from changewatch.fingerprint.legacy import content_sha256_v3

CORPUS = (
    Path(
        os.environ.get("CHANGEWATCH_CORPUS")
        or Path(__file__).resolve().parents[2] / "shared" / "corpus"
    )
    / "refetch-opentermsarchive"
)


@dataclass(frozen=True)
class Step:
    """One labelled step: the capture before, the capture after, and what changed."""

    name: str
    url: str
    label: str
    before: Path
    after: Path


def steps() -> Iterator[Step]:
    """The sequences' steps (``seq:<slug>:<n>``), then the pairs' (``pair:<slug>:<k>``)."""
    index = CORPUS / "index.tsv"
    if not index.exists():
        sys.exit(f"no corpus at {CORPUS}; set CHANGEWATCH_CORPUS")
    with index.open() as handle:
        pages = list(csv.DictReader(handle, delimiter="\t"))
    for page in pages:
        folder = CORPUS / "pages" / page["slug"]
        with (folder / "versions.tsv").open() as handle:
            versions = list(csv.DictReader(handle, delimiter="\t"))
        for previous, current in itertools.pairwise(versions):
            yield Step(
                f"seq:{page['slug']}:{current['n']}",
                page["url"],
                current["label"],
                folder / f"{previous['n']}.html.gz",
                folder / f"{current['n']}.html.gz",
            )
    with (CORPUS / "pairs" / "pairs.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            folder = CORPUS / "pairs" / row["slug"]
            yield Step(
                f"pair:{row['slug']}:{row['k']}",
                row["url"],
                row["label"],
                folder / f"{row['k']}-before.html.gz",
                folder / f"{row['k']}-after.html.gz",
            )


# -- the methods: each maps (page bytes, page URL) to a tuple whose first item is the content
# hash; v4 adds its chrome and links hashes.

_INVISIBLE = ", ".join(("script", "style", "noscript", "template"))


def v3_should_parse(page: bytes, url: str) -> tuple[bytes, ...]:
    """Version 3's content hash: every visible text node, volatile stamps removed everywhere."""
    return (content_sha256_v3(page),)


def visible_sha256(page: bytes, url: str) -> tuple[bytes, ...]:
    """SHA-256 of the text outside script/style/noscript/template, whitespace collapsed."""
    tree = LexborHTMLParser(page)
    for node in reversed(tree.css(_INVISIBLE)):
        node.decompose()
    root = tree.root
    text = " ".join((root.text(separator=" ") if root is not None else "").split())
    return (hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest(),)


def resiliparse_main(page: bytes, url: str) -> tuple[bytes, ...]:
    """SHA-256 of resiliparse's main-content plain text, whitespace collapsed."""
    from resiliparse.extract.html2text import extract_plain_text

    text = extract_plain_text(decode_html(page), main_content=True)
    return (hashlib.sha256(" ".join(text.split()).encode("utf-8", "surrogatepass")).digest(),)


def v4_fingerprint(page: bytes, url: str) -> tuple[bytes, ...]:
    """Version 4: the main content's hash, then the chrome's and the outlinks'."""
    fp = fingerprint(page, url=url)
    return (fp.content_sha256, fp.chrome_sha256, fp.links_sha256)


#: The methods ``--only`` asked for (``None``: all).
ONLY: set[str] | None = None

METHODS: dict[str, Callable[[bytes, str], tuple[bytes, ...]]] = {
    "v3 should_parse": v3_should_parse,
    "visible-text SHA-256": visible_sha256,
    "resiliparse main content": resiliparse_main,
    "v4 content_sha256": v4_fingerprint,
}


@dataclass
class Tally:
    """What one method reported over a set of steps."""

    noise: int = 0
    noise_unchanged: int = 0
    noise_changed: list[str] = field(default_factory=list)
    edits: int = 0
    edits_missed: list[str] = field(default_factory=list)
    markup: int = 0
    markup_changed: int = 0
    chrome_flagged: int = 0
    links_flagged: int = 0
    times_ms: list[float] = field(default_factory=list)

    def count(self, step: Step, same: bool) -> None:
        """Count one step: reported unchanged (``same``) or changed, by its label."""
        if step.label == "0":
            self.noise += 1
            self.noise_unchanged += same
            if not same:
                self.noise_changed.append(step.name)
        elif step.label == "1":
            self.edits += 1
            if same:
                self.edits_missed.append(step.name)
        elif step.label == "markup":
            self.markup += 1
            self.markup_changed += not same


def measure(selected: list[Step]) -> dict[str, dict[str, Tally]]:
    """Tallies per method, for the sequences, the pairs and both."""
    cache: dict[Path, bytes] = {}

    def read(path: Path) -> bytes:
        if path not in cache:
            cache[path] = gzip.decompress(path.read_bytes())
        return cache[path]

    results = {method: _measure_method(run, selected, read) for method, run in METHODS.items()}
    if ONLY is None or SHOULD_PARSE in ONLY:
        results[SHOULD_PARSE] = measure_should_parse(selected, read)
    return results


def _measure_method(
    run: Callable[[bytes, str], tuple[bytes, ...]],
    selected: list[Step],
    read: Callable[[Path], bytes],
) -> dict[str, Tally]:
    """One method's tallies; each capture is hashed once (and timed once)."""
    tallies = {"sequences": Tally(), "pairs": Tally(), "all": Tally()}
    hashes: dict[Path, tuple[bytes, ...]] = {}

    def hashed(path: Path, url: str) -> tuple[bytes, ...]:
        if path not in hashes:
            page = read(path)
            started = time.perf_counter()
            hashes[path] = run(page, url)
            tallies["all"].times_ms.append(1000 * (time.perf_counter() - started))
        return hashes[path]

    for step in selected:
        group = tallies["sequences" if step.name.startswith("seq:") else "pairs"]
        before = hashed(step.before, step.url)
        after = hashed(step.after, step.url)
        same = before[0] == after[0]
        for tally in (group, tallies["all"]):
            tally.count(step, same)
            if same and len(before) > 1:
                tally.chrome_flagged += before[1] != after[1]
                tally.links_flagged += before[2] != after[2]
    return tallies


SHOULD_PARSE = "v4 should_parse"


def measure_should_parse(selected: list[Step], read: Callable[[Path], bytes]) -> dict[str, Tally]:
    """The tallies of ``should_parse`` over a real store: each sequence in one store, its
    captures in order, a day apart; each pair in a store of its own."""
    from datetime import UTC, datetime, timedelta

    from changewatch import ChangeWatch

    tallies = {"sequences": Tally(), "pairs": Tally(), "all": Tally()}
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]
    stores: dict[str, ChangeWatch] = {}

    def decide(watch: ChangeWatch, step: Step, path: Path) -> bool:
        clock[0] += timedelta(days=1)
        page = read(path)
        started = time.perf_counter()
        decision = watch.should_parse(step.url, page)
        tallies["all"].times_ms.append(1000 * (time.perf_counter() - started))
        return decision.kind == "unchanged"

    for step in selected:
        sequence = step.name.startswith("seq:")
        key = step.name.rsplit(":", 1)[0] if sequence else step.name
        watch = stores.get(key)
        if watch is None:
            watch = stores[key] = ChangeWatch(
                "sqlite:///:memory:", "memory:", clock=lambda: clock[0]
            )
            decide(watch, step, step.before)
        same = decide(watch, step, step.after)
        if not sequence:
            watch.close()
            del stores[key]
        for tally in (tallies["sequences" if sequence else "pairs"], tallies["all"]):
            tally.count(step, same)
    for watch in stores.values():
        watch.close()
    return tallies


def _rate(hit: int, total: int) -> str:
    return f"{hit}/{total} = {100 * hit / total:.2f}%" if total else "n/a"


def report(results: dict[str, dict[str, Tally]], worst: int) -> str:
    """The markdown tables and the worst cases."""
    lines = [
        "refetch quality (Open Terms Archive captures): noise steps reported unchanged, real "
        "edits missed",
        "",
        "| method | noise unchanged (sequences) | noise unchanged (pairs) | noise unchanged (all) "
        "| real edits missed (all) | markup steps changed | median ms/page |",
        "|---|---|---|---|---|---|---|",
    ]
    for method, tallies in results.items():
        seq, pairs, both = tallies["sequences"], tallies["pairs"], tallies["all"]
        lines.append(
            f"| {method} | {_rate(seq.noise_unchanged, seq.noise)} "
            f"| {_rate(pairs.noise_unchanged, pairs.noise)} "
            f"| {_rate(both.noise_unchanged, both.noise)} "
            f"| {len(both.edits_missed)} of {both.edits} "
            f"| {_rate(both.markup_changed, both.markup)} "
            f"| {statistics.median(both.times_ms):.2f} |"
        )
    for method, tallies in results.items():
        both = tallies["all"]
        lines += ["", f"**{method}**", ""]
        lines.append(f"- real edits missed: {', '.join(both.edits_missed) or 'none'}")
        shown = ", ".join(both.noise_changed[:worst])
        more = len(both.noise_changed) - worst
        lines.append(
            f"- noise steps reported changed: {shown or 'none'}"
            + (f" (and {more} more)" if more > 0 else "")
        )
        if method.startswith("v4") and method != SHOULD_PARSE:
            lines.append(
                f"- of the steps whose content was unchanged: chrome flagged on "
                f"{both.chrome_flagged}, outlinks flagged on {both.links_flagged}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="also print the rates as JSON")
    parser.add_argument("--worst", type=int, default=20, help="noise failures listed per method")
    parser.add_argument(
        "--only", action="append", default=[], help="run only these methods (repeatable)"
    )
    args = parser.parse_args()
    global ONLY
    ONLY = set(args.only) or None
    if args.only:
        for name in list(METHODS):
            if name not in args.only:
                del METHODS[name]
    results = measure(list(steps()))
    print(report(results, args.worst))
    if args.json:
        print(
            json.dumps(
                {
                    method: {
                        "noise_unchanged": t["all"].noise_unchanged / max(t["all"].noise, 1),
                        "edits_missed": t["all"].edits_missed,
                        "median_ms": statistics.median(t["all"].times_ms),
                    }
                    for method, t in results.items()
                }
            )
        )


if __name__ == "__main__":
    main()
