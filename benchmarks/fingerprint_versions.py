"""fingerprint() of this checkout beside an older revision's, interleaved page by page.

On a shared machine whose load moves by 2× within minutes, two separate runs cannot be
compared; here every page is fingerprinted by the older revision's code, by this
checkout's, with ``regions = false``, and parsed alone, one after the other, so the load
falls on all of them alike. The older revision's ``changewatch`` package is taken from git
(``git archive``) into a temporary directory and imported under another name.

    python benchmarks/fingerprint_versions.py [--baseline 4bca33f] [--repeats 7]

On the 130 pages of ``../shared/corpus/pages-readability`` (``CHANGEWATCH_CORPUS``
overrides); prints median ms a page, each rate as a share of the parse-alone rate, and the
throughput of this checkout as a share of the baseline's.
"""

from __future__ import annotations

import gc
import gzip
import importlib
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from argparse import ArgumentParser
from collections.abc import Callable
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from changewatch.fingerprint import FingerprintPolicy, fingerprint

CORPUS = (
    Path(
        os.environ.get("CHANGEWATCH_CORPUS")
        or Path(__file__).resolve().parents[2] / "shared" / "corpus"
    )
    / "pages-readability"
)
REPOSITORY = Path(__file__).resolve().parents[1]


def baseline_package(revision: str, into: Path) -> Callable[..., object]:
    """The ``fingerprint`` function of ``revision``, imported as ``cw_baseline``."""
    archive = subprocess.run(
        ["git", "-C", str(REPOSITORY), "archive", revision, "changewatch"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = into / "cw_baseline"
    (into / "changewatch").rename(package)
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        text = text.replace("changewatch.", "cw_baseline.").replace(
            "from changewatch import", "from cw_baseline import"
        )
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(into))
    module = importlib.import_module("cw_baseline.fingerprint")
    return module.fingerprint  # type: ignore[no-any-return]


def main() -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="4bca33f", help="git revision to compare with")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    pages = [gzip.decompress(p.read_bytes()) for p in sorted(CORPUS.glob("*.html.gz"))]
    if not pages:
        sys.exit(f"no pages under {CORPUS}; set CHANGEWATCH_CORPUS")
    flat = FingerprintPolicy(regions=False)
    with tempfile.TemporaryDirectory() as tmp:
        old = baseline_package(args.baseline, Path(tmp))
        steps: dict[str, Callable[[bytes], object]] = {
            "parse alone": LexborHTMLParser,
            f"fingerprint() at {args.baseline}": old,
            "fingerprint() here": fingerprint,
            "fingerprint() here, regions = false": lambda p: fingerprint(p, policy=flat),
        }
        passes: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(args.repeats):
            totals = dict.fromkeys(steps, 0.0)
            gc.disable()
            try:
                for page in pages:
                    for name, step in steps.items():
                        started = time.perf_counter()
                        step(page)
                        totals[name] += time.perf_counter() - started
            finally:
                gc.enable()
            for name, total in totals.items():
                passes[name].append(1000 * total / len(pages))
    median = {name: statistics.median(values) for name, values in passes.items()}
    parse = median["parse alone"]
    print(f"{len(pages)} pages, median of {args.repeats} interleaved passes\n")
    print("| step | ms/page | share of the parse-alone rate |\n|---|---:|---:|")
    for name, value in median.items():
        print(f"| {name} | {value:.3f} | {parse / value:.1%} |")
    base = median[f"fingerprint() at {args.baseline}"]
    print(
        f"\nthroughput here / at {args.baseline}: {base / median['fingerprint() here']:.1%}; "
        f"regions = false: {base / median['fingerprint() here, regions = false']:.1%}"
    )


if __name__ == "__main__":
    main()
