"""What learning a host's template costs a crawl: ``should_parse_many`` with and without
``learn_templates``, in the same run, on the same pages.

The corpus's real pages (``pages-readability``; ``CHANGEWATCH_CORPUS`` overrides) are served as
the pages of one host, each with a shared promo line inserted after ``<body>``: one round of
first fetches (every page new), then ``--rounds`` rounds in which the promo line changes
across the site (every page parsed again). Each configuration gets a fresh SQLite file (or,
with ``--postgres ADMIN_URL``, a scratch Postgres database) and a fresh ``ChangeWatch``; the
two run one round each in turn, so machine load falls on both alike. Printed: median
milliseconds a page per round kind, and the decisions of the last round (with learning the
promo is chrome: ``unchanged`` with ``chrome_changed``).

    python benchmarks/template_learning.py [--pages N] [--rounds N] [--batch N] [--postgres URL]
"""

from __future__ import annotations

import re
import statistics
import sys
import tempfile
import time
from argparse import ArgumentParser
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import log, real_pages, scratch_database

from changewatch import ChangeWatch
from changewatch.store import open_store

HOST = "bench.example"
_BODY = re.compile(rb"<body[^>]*>", re.I)


def _with_promo(body: bytes, promo: str) -> bytes:
    line = f"<div class='promo'>{promo}</div>".encode()
    found = _BODY.search(body)
    if found is None:
        return line + body
    return body[: found.end()] + line + body[found.end() :]


def _round(
    watch: ChangeWatch, pages: list[tuple[str, bytes]], promo: str, batch: int
) -> tuple[float, Counter[str]]:
    """Milliseconds a page for one round of ``pages`` with ``promo``, and its decisions."""
    items = [(f"https://{HOST}/{name}", _with_promo(body, promo)) for name, body in pages]
    kinds: Counter[str] = Counter()
    start = time.perf_counter()
    for i in range(0, len(items), batch):
        for d in watch.should_parse_many(items[i : i + batch]):
            kinds[f"{d.kind}{'+chrome' if d.chrome_changed else ''}"] += 1
    return (time.perf_counter() - start) * 1000 / len(items), kinds


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--postgres", metavar="ADMIN_URL")
    args = parser.parse_args()
    pages = real_pages(args.pages)
    with ExitStack() as stack:
        watches = {}
        for learn in (False, True):
            if args.postgres:
                url = stack.enter_context(scratch_database(args.postgres, "h_templates_bench"))
            else:
                folder = stack.enter_context(tempfile.TemporaryDirectory())
                url = f"sqlite:///{folder}/cw.db"
            store = open_store(url, auto_upgrade=True)
            watch = ChangeWatch(store=store, seen_url="memory:", learn_templates=learn)
            stack.callback(watch.close)
            watches[learn] = watch
        first: dict[bool, float] = {}
        later: dict[bool, list[float]] = {False: [], True: []}
        last: dict[bool, Counter[str]] = {}
        for n in range(args.rounds + 1):
            promo = f"Offer {n}: free shipping this week"
            for learn, watch in watches.items():
                ms, kinds = _round(watch, pages, promo, args.batch)
                if n == 0:
                    first[learn] = ms
                else:
                    later[learn].append(ms)
                last[learn] = kinds
            log(f"round {n} done")
    print(
        f"{len(pages)} real pages of one host, batches of {args.batch}, "
        f"{'Postgres' if args.postgres else 'SQLite'}"
    )
    print(f"{'':24}{'learn_templates=False':>24}{'learn_templates=True':>24}")
    print(f"{'first fetch, ms/page':24}{first[False]:>24.2f}{first[True]:>24.2f}")
    print(
        f"{'promo change, ms/page':24}{statistics.median(later[False]):>24.2f}"
        f"{statistics.median(later[True]):>24.2f}"
    )
    print(f"{'last round decisions':24}{dict(last[False])!s:>24}{dict(last[True])!s:>24}")


if __name__ == "__main__":
    main()
