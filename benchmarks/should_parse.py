"""Benchmark ``ChangeWatch.should_parse`` against the cost of merely parsing each page.

Real pages (``../shared/corpus/pages-readability``, 20–100 KiB raw) are fed to
``should_parse`` / ``should_parse_many`` on SQLite (temp file) and Postgres (a scratch
database, dropped at the end) in four scenarios: unchanged bytes (raw fast path), unchanged
after a noise-only re-render (normalised path), changed text (SimHash path) and new URLs.
Every figure is the median of ``--repeats`` passes, in pages/s and as a ratio to the floor:
selectolax parse + text extraction + SHA-256 of the same pages, measured in the same run.

    python benchmarks/should_parse.py [--quick] [--repeats 5] [--batch-size 100] [--json]
        [--copies 12] [--no-postgres] [--pg-url ADMIN_URL]  (or $CHANGEWATCH_BENCH_PG_URL)

Each page is fed under ``--copies`` URLs per pass (only ~25 corpus pages qualify), so copies
share content and a "new" page usually has a ``duplicate_of``. Every decision is checked to
have taken the scenario's path; pages whose variants fail their check are skipped and counted.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from argparse import ArgumentParser, Namespace
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from _common import PAGES, real_pages
from selectolax.lexbor import LexborHTMLParser
from sqlalchemy.engine import make_url

from changewatch import ChangeWatch, Decision, fingerprint
from changewatch.store import open_store

CORPUS = PAGES  # benchmarks/_common.py: CHANGEWATCH_CORPUS or ../shared/corpus
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
# scenario -> the Decision.path every page of it must take
SCENARIOS = {"unchanged-raw": "raw", "unchanged-noise": "normalised", "changed": "simhash"}
SCENARIOS["new"] = "new"
ROW = (
    "| {scenario} | {backend} | {mode} | {median_pages_per_s:,.0f} | {ratio_vs_floor:.2f}× floor |"
)
FLOOR = "floor: parse+text+sha256"
NOTES: list[str] = []  # printed with the results
WORDS = ["harbour", "lantern", "quietly", "orbit", "mosaic", "thunder", "velvet", "cargo"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Page:
    name: str
    original: bytes
    noise: bytes  # same visible text, different bytes
    changed: bytes  # one paragraph of visible text replaced


def noise_variant(html: bytes, seed: str) -> bytes:
    """Re-render without touching visible text: script nonce, a comment, whitespace."""
    nonce = hashlib.sha256(seed.encode()).hexdigest()[:16].encode()
    out, n = re.subn(rb'(<script\b[^>]*\bnonce=")[^"]*', rb"\g<1>" + nonce, html, count=1)
    if not n:
        script = b'<script nonce="' + nonce + b'">window.__r=1;</script>'
        out, n = re.subn(rb"(<head\b[^>]*>)", rb"\g<1>" + script, out, count=1, flags=re.I)
        out = out if n else script + out
    comment = b"<!-- rendered " + nonce + b" -->"
    out, n = re.subn(rb"(</body\s*>)", comment + rb"\g<1>", out, count=1, flags=re.I)
    out = out if n else out + comment
    return re.sub(rb">(\s+)<", rb">\g<1> \n<", out)


def changed_variant(html: bytes, seed: str, content: bytes) -> bytes | None:
    """Replace a paragraph's text (else a long text run) with other words; verify it shows."""
    runs = sorted(
        re.finditer(rb"(<p\b[^>]*)?>([^<]{60,})<", html, flags=re.I),
        key=lambda m: (m.group(1) is None, -len(m.group(2))),
    )
    rng = random.Random(seed)
    for run in runs[:10]:  # a run may sit in a <script> or be invisible: try the next one
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < len(run.group(2)):
            words.append(rng.choice(WORDS))
        out = html[: run.start(2)] + " ".join(words).encode() + html[run.end(2) :]
        if fingerprint(out).content_sha256 != content:
            return out
    return None


def load_pages(lo: int, hi: int, limit: int | None) -> tuple[list[Page], dict[str, int]]:
    counts = {"corpus": 0, "in_range": 0, "skipped_noise": 0, "skipped_change": 0}
    pages: list[Page] = []
    for name, raw in real_pages(required=False):
        counts["corpus"] += 1
        if not lo <= len(raw) <= hi:
            continue
        counts["in_range"] += 1
        noise, content = noise_variant(raw, name), fingerprint(raw).content_sha256
        if noise == raw or fingerprint(noise).content_sha256 != content:
            counts["skipped_noise"] += 1
        elif (changed := changed_variant(raw, name, content)) is None:
            counts["skipped_change"] += 1
        else:
            pages.append(Page(name, raw, noise, changed))
    return pages[:limit], counts


def floor_text_sha(html: bytes) -> None:
    root = LexborHTMLParser(html).root
    hashlib.sha256((root.text() if root is not None else "").encode()).digest()


@contextmanager
def postgres_database(admin_url: str | None) -> Iterator[str | None]:
    """Yield the URL of a fresh scratch database (None if unreachable or not wanted)."""
    if admin_url is None:
        yield None
        return
    admin = make_url(admin_url).set(drivername="postgresql")
    name = f"changewatch_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    dsn = admin.render_as_string(hide_password=False)
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        detail = " ".join(str(exc).split())
        NOTES.append(f"Postgres skipped: unreachable at {admin.render_as_string()} ({detail})")
        log(f"note: {NOTES[-1]}")
        yield None
        return
    try:
        yield admin.set(drivername="postgresql+psycopg", database=name).render_as_string(
            hide_password=False
        )
    finally:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        log(f"dropped scratch database {name}")


@dataclass(slots=True)
class Case:
    """One measured figure: ``run(repeat)`` processes one pass, returns seconds taken."""

    scenario: str
    backend: str
    mode: str
    run: Callable[[int], float]
    rates: list[float] = field(default_factory=list)  # pages/s of each timed pass

    def row(self, floor: float) -> dict[str, Any]:
        row: dict[str, Any] = {k: getattr(self, k) for k in ("scenario", "backend", "mode")}
        median = statistics.median(self.rates)
        return row | {
            "median_pages_per_s": median,
            "ratio_vs_floor": median / floor,
            "rates": self.rates,
        }


def pass_items(
    pages: list[Page], copies: int, scenario: str, prefix: str, repeat: int
) -> list[tuple[str, bytes]]:
    items = []
    for copy in range(copies):
        for page in pages:
            url = f"https://host{copy % 5}.example/{prefix}/{page.name}/{copy}"
            html = page.original
            if scenario == "new":
                url += f"?repeat={repeat}"
            elif repeat % 2 == 0 and scenario != "unchanged-raw":  # alternate two contents
                html = page.noise if scenario == "unchanged-noise" else page.changed
            items.append((url, html))
    return items


def store_case(
    cw: ChangeWatch, backend: str, scenario: str, mode: str, pages: list[Page], args: Namespace
) -> Case:
    prefix, copies, batch = f"{backend}/{scenario}/{mode}", args.copies, args.batch_size
    if scenario != "new":  # seed the first version, untimed
        cw.should_parse_many(pass_items(pages, copies, scenario, prefix, 1))

    def run(repeat: int) -> float:
        items = pass_items(pages, copies, scenario, prefix, repeat)
        decisions: list[Decision] = []
        start = time.perf_counter()
        if mode == "one-by-one":
            decisions = [cw.should_parse(url, html) for url, html in items]
        else:
            for i in range(0, len(items), batch):
                decisions += cw.should_parse_many(items[i : i + batch])
        elapsed = time.perf_counter() - start
        right = sum(d.path == SCENARIOS[scenario] for d in decisions)
        if right != len(items):  # the benchmark checks that it measures what it says
            raise RuntimeError(
                f"{prefix}: {len(items) - right} of {len(items)} decisions "
                f"did not take path {SCENARIOS[scenario]!r}"
            )
        return elapsed

    return Case(scenario, backend, mode, run)


def alone_case(label: str, func: Callable[[bytes], object], pages: list[Page], copies: int) -> Case:
    htmls = [p.original for p in pages] * copies

    def run(_repeat: int) -> float:
        start = time.perf_counter()
        for html in htmls:
            func(html)
        return time.perf_counter() - start

    return Case(label, "-", "alone", run)


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="timed passes per figure")
    ap.add_argument("--batch-size", type=int, default=100, help="pages per should_parse_many")
    ap.add_argument("--copies", type=int, default=12, help="URLs per page (~25 pages qualify)")
    ap.add_argument("--min-kib", type=int, default=20)
    ap.add_argument("--max-kib", type=int, default=100)
    ap.add_argument("--pg-url", default=os.environ.get("CHANGEWATCH_BENCH_PG_URL", PG_ADMIN))
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    limit = None
    if args.quick:
        args.repeats, args.copies, limit = min(args.repeats, 2), 1, 4

    if not CORPUS.is_dir():
        args.min_kib = 0  # the demo site's pages (a smoke run on a fresh clone) are small
    pages, counts = load_pages(args.min_kib * 1024, args.max_kib * 1024, limit)
    if not pages:
        log("no usable pages")
        return 1
    n = len(pages) * args.copies
    log(
        f"{counts['in_range']} of {counts['corpus']} corpus pages are {args.min_kib}–"
        f"{args.max_kib} KiB; skipped {counts['skipped_noise']} (noise changed the text) and "
        f"{counts['skipped_change']} (edit did not change it); using {len(pages)} pages × "
        f"{args.copies} URLs = {n} pages per pass"
    )

    cases = [
        alone_case(FLOOR, floor_text_sha, pages, args.copies),
        alone_case("fingerprint() alone", fingerprint, pages, args.copies),
        alone_case("raw sha256 alone", lambda h: hashlib.sha256(h).digest(), pages, args.copies),
    ]
    with (
        tempfile.TemporaryDirectory() as tmp,
        postgres_database(None if args.no_postgres else args.pg_url) as pg_url,
    ):
        backends = {"sqlite": f"sqlite:///{tmp}/bench.db"}
        if pg_url is not None:
            backends["postgres"] = pg_url
        watches = {}
        try:
            for backend, url in backends.items():
                log(f"opening {backend} and seeding")
                watches[backend] = cw = ChangeWatch(store=open_store(url, auto_upgrade=True))
                for scenario in SCENARIOS:
                    for mode in ("one-by-one", "batch"):
                        cases.append(store_case(cw, backend, scenario, mode, pages, args))
            # Repeat 0 is a warm-up; cases are interleaved so machine noise hits all alike.
            for repeat in range(args.repeats + 1):
                log(f"repeat {repeat}/{args.repeats}" + (" (warm-up)" if repeat == 0 else ""))
                for case in cases:
                    elapsed = case.run(repeat)
                    if repeat:
                        case.rates.append(n / elapsed)
        finally:
            for cw in watches.values():
                cw.close()

    floor = statistics.median(cases[0].rates)
    rows = [case.row(floor) for case in cases]
    if args.json:
        meta = {**counts, "pages": len(pages), "pages_per_pass": n, "floor": FLOOR}
        meta |= {k: getattr(args, k) for k in ("copies", "repeats", "batch_size")}
        print(json.dumps({"meta": meta | {"notes": NOTES}, "rows": rows}, indent=2))
        return 0
    print(
        f"{len(pages)} real pages ({args.min_kib}–{args.max_kib} KiB) × {args.copies} URLs "
        f"= {n} pages per pass; median of {args.repeats} passes; batch size {args.batch_size}; "
        "floor = selectolax parse + text + SHA-256 of the same pages\n"
    )
    print("".join(f"Note: {note}\n\n" for note in NOTES), end="")
    print("| scenario | backend | mode | median pages/s | ratio vs floor |")
    print("|---|---|---|---:|---:|")
    for row in rows:
        print(ROW.format(**row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
