"""Seen-set benchmark: changewatch's exact and Bloom seen-sets beside their peers.

Every figure is measured in the same run, on the same deterministic canonical URL strings:

* ``set()`` of URL strings (the Scrapy-style exact baseline);
* ``changewatch`` ``memory:`` (an exact set of 16-byte digests), one by one and batched;
* ``changewatch.bloom.BloomFilter`` over ``digest_canonical(url)`` (digest time included),
  one by one and batched (``add_many`` per batch);
* ``changewatch.bloom.BloomGenerations`` with 4 live generations (an ageing seen-set with
  ``max_age = 3·window``): the same n URLs in 4 generations of n/4, the configured rate p
  the compound rate of all 4 — adds/s against the single filter above, the false-positive
  rate measured against p, bits per URL;
* ``changewatch`` ``file:…?kind=bloom`` seen-set, batched from URL strings, plus its save time
  on ``close()`` and its file size;
* ``pybloom_live.BloomFilter`` (one by one: it has no batch add);
* ``rbloom.Bloom`` with a stable blake2b hash (its default is Python's salted ``hash()``),
  one by one and batched (``update``).

Rates are medians of ``--repeats`` runs, each into a fresh structure. False-positive rates are
measured once per filter (they are deterministic: every hash here is stable) on ``--probes``
URLs from a generator disjoint from the added ones, with the filter filled to capacity.

Run::

    python benchmarks/seen_set.py                 # 1M and 10M URLs (several minutes)
    python benchmarks/seen_set.py --quick         # tiny sizes, a smoke test
    python benchmarks/seen_set.py --json          # the rows as JSON instead of tables

Progress goes to stderr, the tables (or JSON) to stdout.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from changewatch.bloom import BloomFilter, BloomGenerations
from changewatch.seen import open_seen_set
from changewatch.urls import canonicalise, digest_canonical

try:
    import pybloom_live
except ImportError:  # pragma: no cover - reported in the output
    pybloom_live = None
try:
    import rbloom
except ImportError:  # pragma: no cover - reported in the output
    rbloom = None

RATES = (0.01, 0.001)
GENERATIONS = 4  # live generations of the ageing rows
LN2_SQUARED = math.log(2) ** 2
_START = time.perf_counter()

# -- inputs ------------------------------------------------------------------------------

_WORDS = (
    "news",
    "sport",
    "tech",
    "garden",
    "travel",
    "books",
    "music",
    "cars",
    "health",
    "food",
    "science",
    "jobs",
    "homes",
    "shoes",
    "toys",
    "games",
)


def _mix(i: int) -> int:
    """A cheap deterministic scramble of ``i`` (Knuth's multiplicative hash), 32 bits."""
    return (i * 2654435761) & 0xFFFFFFFF


def make_url(i: int, family: str = "") -> str:
    """The ``i``-th URL of a family, already canonical; families never share a URL.

    Five shapes (catalogue pages with queries, product pages, dated articles, tag listings,
    forum threads) over ~20,000 hosts; ``family`` is a path prefix, so ``make_url(i, "x")``
    never equals ``make_url(j)``.
    """
    h = _mix(i)
    host = h % 20011
    word = _WORDS[(h >> 8) & 15]
    shape = i % 5
    if shape == 0:
        return (
            f"https://www.site{host}.example/{family}section/{(h >> 12) % 97}/item-{i}"
            f"?id={i}&page={(h >> 4) % 13}"
        )
    if shape == 1:
        return f"https://shop{host}.example.com/{family}products/{word}-{i}.html"
    if shape == 2:
        return (
            f"https://news{host}.example.org/{family}{2000 + (h >> 20) % 26}/"
            f"{1 + (h >> 4) % 12:02d}/{1 + (h >> 9) % 28:02d}/{word}-story-{i}/"
        )
    if shape == 3:
        return (
            f"https://blog{host}.example.net/{family}tag/{word}/page/{(h >> 6) % 40}/"
            f"?id={i}&sort=new"
        )
    return f"http://forum{host}.example/{family}thread/{i}?a={(h >> 3) % 7}&page={(h >> 11) % 9}"


def make_urls(n: int, family: str = "") -> list[str]:
    return [make_url(i, family) for i in range(n)]


def stable_hash(url: str) -> int:
    """rbloom's hash: blake2b-128 of the UTF-8 URL as a signed 128-bit integer (stable)."""
    return int.from_bytes(
        hashlib.blake2b(url.encode("utf-8"), digest_size=16).digest(), "big", signed=True
    )


def batches(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


# -- bookkeeping -------------------------------------------------------------------------


def progress(message: str) -> None:
    print(f"[{time.perf_counter() - _START:7.1f}s] {message}", file=sys.stderr, flush=True)


@dataclass
class Row:
    n: int
    p: float | None
    name: str
    mode: str  # "one by one" | "batched"
    input: str
    adds_per_s: float | None = None
    timed_items: int = 0
    bytes: int | None = None
    bits: int | None = None
    fp_measured: float | None = None
    fp_expected: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def bytes_per_url(self) -> float | None:
        return None if self.bytes is None else self.bytes / self.n

    @property
    def bits_per_url(self) -> float | None:
        if self.bits is not None:
            return self.bits / self.n
        return None if self.bytes is None else 8 * self.bytes / self.n


def timed_median(
    repeats: int,
    make: Callable[[], Any],
    run: Callable[[Any], int],
) -> tuple[float, int, Any]:
    """Median adds/s over ``repeats`` fresh structures; returns (rate, items timed, last)."""
    rates = []
    last: Any = None
    count = 0
    for _ in range(repeats):
        last = None  # let the previous structure go before building the next
        gc.collect()
        obj = make()
        start = time.perf_counter()
        count = run(obj)
        elapsed = time.perf_counter() - start
        rates.append(count / elapsed)
        last = obj
    return statistics.median(rates), count, last


def fp_rate(hits: int, probes: int) -> float:
    return hits / probes if probes else 0.0


# -- the measurements --------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.repeats: int = args.repeats
        self.batch: int = args.batch
        self.sample: int = args.sample
        self.rows: list[Row] = []
        self.info: dict[str, Any] = {}

    def run(self) -> None:
        sizes = self.args.sizes
        top = max(sizes)
        progress(f"generating {top:,} URLs and {self.args.probes:,} never-added probes")
        urls_all = make_urls(top)
        probes = make_urls(self.args.probes, family="archive/")
        for url in urls_all[:1000] + probes[:1000]:
            assert canonicalise(url) == url, f"not canonical: {url}"
        assert not set(probes[:100_000]).intersection(urls_all[:100_000])
        self.info["url_example"] = urls_all[:5]
        self.info["url_mean_length"] = round(
            statistics.fmean(len(u) for u in urls_all[: min(top, 100_000)]), 1
        )
        progress("digesting inputs (digest_canonical)")
        digests_all = [digest_canonical(u) for u in urls_all]
        probe_digests = [digest_canonical(u) for u in probes]
        gc.freeze()  # the inputs are permanent: keep the collector off them
        for n in sizes:
            urls = urls_all if n == top else urls_all[:n]
            digests = digests_all if n == top else digests_all[:n]
            self.measure_size(n, urls, digests, probes, probe_digests)

    def one_by_one_items(self, urls: list[str]) -> list[str]:
        return urls if len(urls) <= self.sample else urls[: self.sample]

    def sample_note(self, n: int) -> str | None:
        if n <= self.sample:
            return None
        return f"timed on the first {self.sample:,} of {n:,} adds, then filled to {n:,}"

    def measure_size(
        self,
        n: int,
        urls: list[str],
        digests: list[bytes],
        probes: list[str],
        probe_digests: list[bytes],
    ) -> None:
        repeats, size = self.repeats, self.batch
        url_batches = batches(urls, size)
        sampled = self.one_by_one_items(urls)
        sample_note = self.sample_note(n)

        # digest cost alone, for reference
        progress(f"n={n:,}: digest_canonical alone")

        def digest_only(_: object) -> int:
            for url in urls:
                digest_canonical(url)
            return n

        rate, count, _ = timed_median(repeats, lambda: None, digest_only)
        self.info.setdefault("digest_canonical_per_s", {})[n] = rate

        # set() of URL strings
        progress(f"n={n:,}: set() of URL strings")

        def set_add(seen: set[str]) -> int:
            add = seen.add
            for url in urls:
                add(url)
            return n

        rate, count, seen = timed_median(repeats, set, set_add)
        size_bytes = sys.getsizeof(seen) + sum(map(sys.getsizeof, urls))
        self.rows.append(
            Row(
                n,
                None,
                "set() of URL strings",
                "one by one",
                "canonical URL",
                rate,
                count,
                size_bytes,
                fp_measured=0.0,
                fp_expected=0.0,
                notes=["bytes: sys.getsizeof(set) + Σ sys.getsizeof(url)"],
            )
        )
        del seen

        # changewatch memory: (exact set of digests)
        progress(f"n={n:,}: changewatch memory: one by one")

        def mem_one(seen: Any) -> int:
            add = seen.add
            for url in sampled:
                add(url)
            return len(sampled)

        rate_one, count_one, _ = timed_median(repeats, lambda: open_seen_set("memory:"), mem_one)
        progress(f"n={n:,}: changewatch memory: batched")
        mem_sampled_batches = batches(sampled, size)

        def mem_many(seen: Any) -> int:
            for chunk in mem_sampled_batches:
                seen.add_many(chunk)
            return len(sampled)

        rate_many, count_many, seen = timed_median(
            repeats, lambda: open_seen_set("memory:"), mem_many
        )
        if len(sampled) < n:
            for chunk in batches(digests[len(sampled) :], size):
                seen.add_many(chunk)
        items = getattr(seen, "_items", None)
        if isinstance(items, set) and len(items) == n:
            size_bytes = sys.getsizeof(items) + sum(map(sys.getsizeof, items))
            how = "sys.getsizeof(set) + Σ sys.getsizeof(digest)"
        else:
            size_bytes = int(seen.stats()["bytes"])
            how = "stats()['bytes'] estimate"
        del seen, items
        notes = ["input is the raw URL: add() canonicalises then digests", f"bytes: {how}"]
        if sample_note:
            notes.append(sample_note)
        for mode, rate, count in (
            ("one by one", rate_one, count_one),
            ("batched", rate_many, count_many),
        ):
            self.rows.append(
                Row(
                    n,
                    None,
                    "changewatch memory:",
                    mode,
                    "URL → canonicalise → digest",
                    rate,
                    count,
                    size_bytes,
                    fp_measured=0.0,
                    fp_expected=0.0,
                    notes=list(notes),
                )
            )

        for p in RATES:
            self.measure_bloom(n, p, urls, digests, url_batches, probes, probe_digests)

    def measure_bloom(
        self,
        n: int,
        p: float,
        urls: list[str],
        digests: list[bytes],
        url_batches: list[Sequence[str]],
        probes: list[str],
        probe_digests: list[bytes],
    ) -> None:
        repeats, size = self.repeats, self.batch
        sampled = self.one_by_one_items(urls)
        sample_note = self.sample_note(n)
        probe_count = len(probes)

        # changewatch BloomFilter, one by one
        progress(f"n={n:,} p={p}: changewatch BloomFilter one by one")

        def ours_one(bloom: BloomFilter) -> int:
            add = bloom.add
            for url in sampled:
                add(digest_canonical(url))
            return len(sampled)

        rate_one, count_one, _ = timed_median(repeats, lambda: BloomFilter(n, p), ours_one)

        # changewatch BloomFilter, batched
        progress(f"n={n:,} p={p}: changewatch BloomFilter batched")

        def ours_many(bloom: BloomFilter) -> int:
            add_many = bloom.add_many
            for chunk in url_batches:
                add_many([digest_canonical(url) for url in chunk])
            return n

        rate_many, count_many, bloom = timed_median(repeats, lambda: BloomFilter(n, p), ours_many)
        hits = 0
        for chunk in batches(probe_digests, 100_000):
            hits += sum(bloom.contains_many(chunk))
        fp = fp_rate(hits, probe_count)
        expected = bloom.estimated_error_rate()
        extra = {"k": bloom.hashes, "estimated_error_rate": expected}
        for mode, rate, count, note in (
            ("one by one", rate_one, count_one, sample_note),
            ("batched", rate_many, count_many, None),
        ):
            self.rows.append(
                Row(
                    n,
                    p,
                    "changewatch BloomFilter",
                    mode,
                    "canonical URL → digest_canonical",
                    rate,
                    count,
                    bloom.nbytes,
                    bloom.bits,
                    fp,
                    p,
                    dict(extra),
                    [note] if note else [],
                )
            )
        del bloom
        self.measure_generations(n, p, url_batches, probe_digests)

        # changewatch file: Bloom seen-set, batched from URL strings
        progress(f"n={n:,} p={p}: changewatch file: Bloom seen-set batched")
        with tempfile.TemporaryDirectory(prefix="cw-seen-bench-") as tmp:
            path = os.path.join(tmp, "seen.bloom")
            saves: list[float] = []

            def make_file() -> Any:
                for leftover in (path, path + ".lock"):
                    if os.path.exists(leftover):
                        os.unlink(leftover)
                return open_seen_set(f"file:{path}?kind=bloom&capacity={n}&error_rate={p}")

            file_batches = batches(sampled, size)

            def file_many(seen: Any) -> int:
                for chunk in file_batches:
                    seen.add_many(chunk)
                return len(sampled)

            rates = []
            stats: dict[str, Any] = {}
            count = len(sampled)
            for _ in range(repeats):
                gc.collect()
                seen = make_file()
                start = time.perf_counter()
                file_many(seen)
                rates.append(count / (time.perf_counter() - start))
                stats = dict(seen.stats())
                start = time.perf_counter()
                seen.close()
                saves.append(time.perf_counter() - start)
                file_size = os.path.getsize(path)
            notes = [
                "input is the raw URL: add_many() canonicalises then digests",
                "default checkpoint (a full atomic save every 10,000 additions) included",
                "fp: same digests and bits as the BloomFilter rows",
            ]
            if sample_note:
                notes.append(
                    f"timed on the first {self.sample:,} of {n:,} adds (the save cost per "
                    "checkpoint depends on the filter's size, not its fill)"
                )
            self.rows.append(
                Row(
                    n,
                    p,
                    "changewatch file: Bloom",
                    "batched",
                    "URL → canonicalise → digest",
                    statistics.median(rates),
                    count,
                    int(stats["bytes"]),
                    int(stats["bits"]),
                    None,
                    p,
                    {
                        "save_on_close_s": statistics.median(saves),
                        "file_bytes": file_size,
                    },
                    notes,
                )
            )

        # pybloom-live: one by one only
        if pybloom_live is not None:
            progress(f"n={n:,} p={p}: pybloom_live.BloomFilter one by one")

            def py_one(bloom: Any) -> int:
                add = bloom.add
                for url in sampled:
                    add(url)
                return len(sampled)

            rate, count, pyb = timed_median(
                repeats, lambda: pybloom_live.BloomFilter(capacity=n, error_rate=p), py_one
            )
            if len(sampled) < n:
                progress(f"n={n:,} p={p}: pybloom_live filling to capacity (untimed)")
                add = pyb.add
                for url in urls[len(sampled) :]:
                    add(url)
            progress(f"n={n:,} p={p}: pybloom_live false positives")
            hits = sum(1 for url in probes if url in pyb)
            notes = ["no batch add: one by one only"]
            if sample_note:
                notes.append(sample_note)
            self.rows.append(
                Row(
                    n,
                    p,
                    "pybloom_live.BloomFilter",
                    "one by one",
                    "canonical URL (its own xxh128/sha hashes)",
                    rate,
                    count,
                    (pyb.num_bits + 7) // 8,
                    pyb.num_bits,
                    fp_rate(hits, probe_count),
                    p,
                    {"k": pyb.num_slices},
                    notes,
                )
            )
            del pyb

        # rbloom with a stable blake2b hash: one by one and batched (update)
        if rbloom is not None:
            progress(f"n={n:,} p={p}: rbloom.Bloom one by one")

            def make_rbloom() -> Any:
                return rbloom.Bloom(n, p, hash_func=stable_hash)

            def rb_one(bloom: Any) -> int:
                add = bloom.add
                for url in sampled:
                    add(url)
                return len(sampled)

            rate_one, count_one, _ = timed_median(repeats, make_rbloom, rb_one)
            progress(f"n={n:,} p={p}: rbloom.Bloom batched (update)")

            def rb_many(bloom: Any) -> int:
                update = bloom.update
                for chunk in url_batches:
                    update(chunk)
                return n

            rate_many, count_many, rbf = timed_median(repeats, make_rbloom, rb_many)
            hits = sum(1 for url in probes if url in rbf)
            fp = fp_rate(hits, probe_count)
            for mode, rate, count, note in (
                ("one by one", rate_one, count_one, sample_note),
                ("batched", rate_many, count_many, None),
            ):
                self.rows.append(
                    Row(
                        n,
                        p,
                        "rbloom.Bloom (blake2b hash)",
                        mode,
                        "canonical URL → blake2b-128 int",
                        rate,
                        count,
                        rbf.size_in_bits // 8,
                        rbf.size_in_bits,
                        fp,
                        p,
                        {},
                        [note] if note else [],
                    )
                )
            del rbf

    def measure_generations(
        self,
        n: int,
        p: float,
        url_batches: list[Sequence[str]],
        probe_digests: list[bytes],
    ) -> None:
        """n URLs into 4 live generations of n/4 each, batched, digest time included."""
        progress(f"n={n:,} p={p}: changewatch BloomGenerations ({GENERATIONS} live) batched")
        per_generation = max(1, n // GENERATIONS)

        def gens_many(gens: BloomGenerations) -> int:
            added = 0
            for chunk in url_batches:
                gens.add_many([digest_canonical(u) for u in chunk], added // per_generation)
                added += len(chunk)
            return added

        def make() -> BloomGenerations:
            return BloomGenerations(per_generation, p, GENERATIONS)

        rate, count, gens = timed_median(self.repeats, make, gens_many)
        hits = 0
        for chunk in batches(probe_digests, 100_000):
            hits += sum(gens.contains_many(chunk))
        filters = gens.filters()
        bits = sum(f.bits for f in filters)
        self.rows.append(
            Row(
                n,
                p,
                f"changewatch BloomGenerations ({GENERATIONS} live)",
                "batched",
                "canonical URL → digest_canonical",
                rate,
                count,
                sum(f.nbytes for f in filters),
                bits,
                fp_rate(hits, len(probe_digests)),
                p,
                {
                    "k": gens.hashes,
                    "filters": len(filters),
                    "estimated_error_rate": gens.estimated_error_rate(),
                },
                [
                    f"{GENERATIONS} generations of n/{GENERATIONS} URLs, each filter at "
                    f"1 − (1 − p)^(1/{GENERATIONS}); fp measured with all {GENERATIONS} live"
                ],
            )
        )

    # -- reporting ---------------------------------------------------------------------

    def peer(self, n: int, p: float | None, name: str, mode: str) -> Row | None:
        for row in self.rows:
            if (row.n, row.p, row.name, row.mode) == (n, p, name, mode):
                return row
        return None

    def ratios(self, row: Row) -> tuple[float | None, float | None]:
        """adds/s relative to pybloom-live (one by one) and rbloom (same mode), same n and p.

        Exact sets have no p: they are compared with the p=0.01 peers.
        """
        p = row.p if row.p is not None else RATES[0]
        out: list[float | None] = []
        for name, mode in (
            ("pybloom_live.BloomFilter", "one by one"),
            ("rbloom.Bloom (blake2b hash)", row.mode),
        ):
            peer = self.peer(row.n, p, name, mode)
            if peer is None or not peer.adds_per_s or row.adds_per_s is None:
                out.append(None)
            else:
                out.append(row.adds_per_s / peer.adds_per_s)
        return out[0], out[1]

    def targets(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for n in self.args.sizes:
            for p in RATES:
                ours = self.peer(n, p, "changewatch BloomFilter", "batched")
                if ours is None:
                    continue
                optimum = -math.log(p) / LN2_SQUARED
                bits = ours.bits_per_url or 0.0
                off = 100 * (bits / optimum - 1)
                out.append(
                    {
                        "n": n,
                        "p": p,
                        "target": "bits per URL within 2% of −ln p/(ln 2)²",
                        "value": f"{bits:.4f} vs {optimum:.4f} ({off:+.2f}%)",
                        "pass": abs(bits / optimum - 1) <= 0.02,
                    }
                )
                fp = ours.fp_measured or 0.0
                sigma = math.sqrt(p * (1 - p) / self.args.probes)
                out.append(
                    {
                        "n": n,
                        "p": p,
                        "target": "measured fp at capacity within ±15% of p",
                        "value": (
                            f"{fp:.5f} vs {p} ({100 * (fp / p - 1):+.1f}%; 1σ of the "
                            f"measurement {100 * sigma / p:.1f}%)"
                        ),
                        "pass": abs(fp / p - 1) <= 0.15,
                    }
                )
                pyb = self.peer(n, p, "pybloom_live.BloomFilter", "one by one")
                if pyb is not None and pyb.adds_per_s and ours.adds_per_s:
                    ratio = ours.adds_per_s / pyb.adds_per_s
                    out.append(
                        {
                            "n": n,
                            "p": p,
                            "target": "batched adds ≥ 3× pybloom-live",
                            "value": f"{ours.adds_per_s:,.0f}/s = {ratio:.2f}× "
                            f"({pyb.adds_per_s:,.0f}/s)",
                            "pass": ratio >= 3.0,
                        }
                    )
                out.extend(self.generation_targets(n, p, ours))
                rbf = self.peer(n, p, "rbloom.Bloom (blake2b hash)", "batched")
                if rbf is not None and rbf.adds_per_s and ours.adds_per_s:
                    ratio = ours.adds_per_s / rbf.adds_per_s
                    out.append(
                        {
                            "n": n,
                            "p": p,
                            "target": "batched adds ≥ rbloom (update, blake2b hash)",
                            "value": f"{ours.adds_per_s:,.0f}/s = {ratio:.2f}× "
                            f"({rbf.adds_per_s:,.0f}/s)",
                            "pass": ratio >= 1.0,
                        }
                    )
        return out

    def generation_targets(self, n: int, p: float, single: Row) -> list[dict[str, Any]]:
        """Issue 18: 4 live generations against the single filter of the same n and p."""
        gens = self.peer(n, p, f"changewatch BloomGenerations ({GENERATIONS} live)", "batched")
        if gens is None or not gens.adds_per_s or not single.adds_per_s:
            return []
        ratio = gens.adds_per_s / single.adds_per_s
        fp = gens.fp_measured or 0.0
        sigma = math.sqrt(p * (1 - p) / self.args.probes)
        return [
            {
                "n": n,
                "p": p,
                "target": f"{GENERATIONS} live generations: adds ≥ 0.5× a single filter",
                "value": f"{gens.adds_per_s:,.0f}/s = {ratio:.2f}× ({single.adds_per_s:,.0f}/s)",
                "pass": ratio >= 0.5,
            },
            {
                "n": n,
                "p": p,
                "target": f"{GENERATIONS} live generations: fp at capacity within ±15% of p",
                "value": (
                    f"{fp:.5f} vs {p} ({100 * (fp / p - 1):+.1f}%; 1σ {100 * sigma / p:.1f}%); "
                    f"{gens.bits_per_url or 0:.2f} bits/URL vs {single.bits_per_url or 0:.2f}"
                ),
                "pass": abs(fp / p - 1) <= 0.15,
            },
        ]

    def as_json(self) -> dict[str, Any]:
        rows = []
        for row in self.rows:
            data = asdict(row)
            data["bytes_per_url"] = row.bytes_per_url
            data["bits_per_url"] = row.bits_per_url
            data["x_pybloom_live"], data["x_rbloom"] = self.ratios(row)
            rows.append(data)
        return {
            "settings": {
                "sizes": self.args.sizes,
                "repeats": self.repeats,
                "batch": self.batch,
                "sample": self.sample,
                "probes": self.args.probes,
                "python": sys.version.split()[0],
                "cpus": os.cpu_count(),
                "pybloom_live": _version("pybloom-live"),
                "rbloom": _version("rbloom"),
            },
            "info": self.info,
            "rows": rows,
            "targets": self.targets(),
        }

    def markdown(self) -> str:
        lines = [
            "# Seen-set benchmark",
            "",
            f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; pybloom-live "
            f"{_version('pybloom-live')}, rbloom {_version('rbloom')}. Rates are medians of "
            f"{self.repeats} runs (adds per second, each into a fresh structure); batches of "
            f"{self.batch:,}; false-positive rates measured on {self.args.probes:,} never-added "
            "URLs with the filter filled to capacity.",
            "",
            f"Inputs: deterministic canonical URLs, mean length "
            f"{self.info['url_mean_length']} characters, e.g. `{self.info['url_example'][0]}`, "
            f"`{self.info['url_example'][2]}`.",
            "",
        ]
        for n in self.args.sizes:
            digest_rate = self.info.get("digest_canonical_per_s", {}).get(n)
            lines.append(f"## {n:,} URLs")
            lines.append("")
            if digest_rate:
                lines.append(
                    f"`digest_canonical` alone: {digest_rate:,.0f} URLs/s (included in every "
                    "changewatch and rbloom rate below)."
                )
                lines.append("")
            notes: list[str] = []
            lines.append(
                "| p | structure | mode | input | adds/s | × pybloom-live | × rbloom | "
                "bytes/URL | bits/URL | fp measured | notes |"
            )
            lines.append("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|")
            for row in (r for r in self.rows if r.n == n):
                x_py, x_rb = self.ratios(row)
                marks = []
                for note in row.notes:
                    if note not in notes:
                        notes.append(note)
                    marks.append(str(notes.index(note) + 1))
                parts = []
                if "save_on_close_s" in row.extra:
                    parts.append(
                        f"save on close {row.extra['save_on_close_s'] * 1000:.0f} ms, "
                        f"file {row.extra['file_bytes']:,} bytes"
                    )
                if "k" in row.extra:
                    parts.append(f"k={row.extra['k']}")
                if marks:
                    parts.append("see " + ", ".join(marks))
                fp = (
                    "—"
                    if row.fp_measured is None
                    else ("0 (exact)" if row.p is None else f"{row.fp_measured:.5f}")
                )
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            "exact" if row.p is None else str(row.p),
                            row.name,
                            row.mode,
                            row.input,
                            _fmt(row.adds_per_s, ",.0f"),
                            _fmt(x_py, ".2f", "×"),
                            _fmt(x_rb, ".2f", "×"),
                            _fmt(row.bytes_per_url, ".2f"),
                            _fmt(row.bits_per_url, ".2f") if row.p is not None else "—",
                            fp,
                            "; ".join(parts),
                        ]
                    )
                    + " |"
                )
            lines.append("")
            for index, note in enumerate(notes, 1):
                lines.append(f"{index}. {note}")
            lines.append("")
        lines.append(
            "Ratios: adds/s over pybloom-live's one-by-one rate (it has no batch add) and over "
            "rbloom's rate in the same mode (`add` or `update`), same n and p; exact sets are "
            "compared with the p=0.01 peers. Optimum bits per URL: "
            + ", ".join(f"p={p}: {-math.log(p) / LN2_SQUARED:.4f}" for p in RATES)
            + "."
        )
        lines.append("")
        lines.append("## Targets (issues 2 and 18)")
        lines.append("")
        lines.append("| n | p | target | measured | result |")
        lines.append("|---:|---|---|---|---|")
        for target in self.targets():
            lines.append(
                f"| {target['n']:,} | {target['p']} | {target['target']} | {target['value']} | "
                f"{'PASS' if target['pass'] else 'FAIL'} |"
            )
        if self.args.quick:
            lines.append("")
            lines.append(
                "(--quick: tiny sizes and few probes; the figures are a smoke test, not a result.)"
            )
        return "\n".join(lines)


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="1000000,10000000",
        help="comma-separated numbers of URLs (default 1000000,10000000)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--batch", type=int, default=10_000, help="batch size (default 10,000)")
    parser.add_argument(
        "--probes", type=int, default=1_000_000, help="never-added URLs for the fp rate"
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=1_000_000,
        help="one-by-one and URL-canonicalising rows are timed on at most this many adds "
        "(then filled to capacity untimed); default 1,000,000",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = "20000"
        args.probes = min(args.probes, 20_000)
        args.sample = min(args.sample, 20_000)
    args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if not args.sizes or min(args.sizes) <= 0 or args.repeats <= 0 or args.batch <= 0:
        parser.error("sizes, --repeats and --batch must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    bench = Bench(args)
    bench.run()
    progress("done")
    if args.json:
        print(json.dumps(bench.as_json(), indent=2, ensure_ascii=False))
    else:
        print(bench.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
