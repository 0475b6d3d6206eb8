"""Simulate recrawl schedules on pages with known change rates, under one fetch budget.

Pure simulation (no database): ``--pages`` pages change as Poisson processes whose rates are
spread log-uniformly from hourly (24/day) to monthly (1/30 per day). Every page is fetched
once at time 0; then, hour by hour, each strategy spends the same budget (``--budget`` fetches
per page per day, on average) on the pages it chooses:

* ``fixed interval`` — round robin: the page fetched longest ago first (every page every
  1/budget days);
* ``Nutch adaptive`` — Nutch's AdaptiveFetchSchedule: each page has an interval, ×1.4 after a
  fetch that saw no change and ×0.8 after one that did, kept within Nutch's bounds (60 s to
  365 days), starting at the fixed interval; the pages whose next fetch time is earliest go
  first (so the budget is always spent, as for the others);
* ``changewatch due`` — the library's own code: :func:`changewatch.schedule.change_rate` on
  the counters the store keeps; per :func:`changewatch.schedule.rate_band`, the pages fetched
  longest ago (as :func:`changewatch.store.schedule.due` reads them), ranked by
  :func:`changewatch.schedule.rank_due`;
* ``changewatch, full ranking`` — the same estimate, every page ranked (what a full scan gives);
* ``½ round robin + ½ changewatch due`` — half of each hour's fetches by the fixed-interval
  rule, the rest by ``due``;
* ``oracle rates`` — the same ranking with the true rates: the ceiling for this ordering.

Reported over the days after a warm-up: changes caught per fetch (fetches that found the page
changed), freshness (time-averaged share of pages whose copy is current) and mean staleness
(time-averaged hours since the stored copy went out of date, 0 while fresh; Cho &
Garcia-Molina's "age"). Seeded and deterministic.

    python benchmarks/scheduling.py [--quick] [--pages 2000] [--days 60] [--budget 0.25]
        [--seed 1] [--json]
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import json
import math
import random
from argparse import ArgumentParser
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from changewatch.schedule import change_rate, rank_due, rate_band

MIN_RATE, MAX_RATE = 1 / 30, 24.0  # changes per day: monthly … hourly
TICKS_PER_DAY = 24
NUTCH_INC, NUTCH_DEC = 0.4, 0.2  # db.fetch.schedule.adaptive.inc_rate / dec_rate
NUTCH_MIN_DAYS, NUTCH_MAX_DAYS = 60 / 86_400, 365.0  # adaptive.min_interval / max_interval
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class Page:
    """What a crawler knows of a page: the counters changewatch's store keeps."""

    last_fetch: float = 0.0
    fetches: int = 1
    changes: int = 0
    interval: float = 1.0  # Nutch only
    next_fetch: float = 0.0  # Nutch only


Strategy = Callable[[list[Page], float, int], list[int]]


def _estimate(p: Page) -> float:
    return change_rate(p.fetches - 1, p.changes, p.last_fetch)


def fixed_interval(pages: list[Page], now: float, k: int) -> list[int]:
    """The k pages fetched longest ago."""
    return heapq.nsmallest(k, range(len(pages)), key=lambda i: (pages[i].last_fetch, i))


def nutch_adaptive(pages: list[Page], now: float, k: int) -> list[int]:
    """The k pages with the earliest next fetch time."""
    return heapq.nsmallest(k, range(len(pages)), key=lambda i: (pages[i].next_fetch, i))


def _rank(pages: list[Page], now: float, k: int, ids: list[int], rates: list[float]) -> list[int]:
    rows = [
        (None, i.to_bytes(4, "big"), "h", EPOCH + timedelta(days=pages[i].last_fetch), r)
        for i, r in zip(ids, rates, strict=True)
    ]
    ranked = rank_due(rows, EPOCH + timedelta(days=now), k)
    return [int.from_bytes(p.url_digest, "big") for p in ranked]


def changewatch_due(pages: list[Page], now: float, k: int) -> list[int]:
    """Per rate band the k pages fetched longest ago, ranked by probability: what ``due`` does."""
    rates = [_estimate(p) for p in pages]
    bands: dict[int, list[int]] = {}
    for i, r in enumerate(rates):
        bands.setdefault(rate_band(r), []).append(i)
    ids = [
        i
        for members in bands.values()
        for i in heapq.nsmallest(k, members, key=lambda i: (pages[i].last_fetch, i))
    ]
    return _rank(pages, now, k, ids, [rates[i] for i in ids])


def changewatch_full(pages: list[Page], now: float, k: int) -> list[int]:
    """Every page ranked by the estimated probability of a change."""
    ids = list(range(len(pages)))
    return _rank(pages, now, k, ids, [_estimate(p) for p in pages])


def half_round_robin(pages: list[Page], now: float, k: int) -> list[int]:
    """Half the budget round robin (longest since fetched), half by ``due``."""
    first = fixed_interval(pages, now, k // 2)
    taken = set(first)
    rest = [i for i in changewatch_due(pages, now, k) if i not in taken]
    return first + rest[: k - len(first)]


def oracle(true_rates: list[float]) -> Strategy:
    """Every page ranked by the probability of a change under its true rate."""

    def pick(pages: list[Page], now: float, k: int) -> list[int]:
        ids = list(range(len(pages)))
        return _rank(pages, now, k, ids, true_rates)

    return pick


def simulate(
    strategy: Strategy,
    changes: list[list[float]],
    days: int,
    budget: float,
    warmup: float,
    nutch: bool = False,
) -> dict[str, float]:
    """Run one strategy; return its figures over the days after ``warmup``."""
    n = len(changes)
    pages = [Page() for _ in range(n)]
    fixed = 1 / budget
    for p in pages:
        p.interval, p.next_fetch = fixed, fixed
    fetch_times: list[list[float]] = [[0.0] for _ in range(n)]
    fetches = caught = 0
    owed = 0.0
    for tick in range(1, days * TICKS_PER_DAY + 1):
        now = tick / TICKS_PER_DAY
        owed += budget * n / TICKS_PER_DAY
        k = int(owed)
        owed -= k
        for i in strategy(pages, now, k):
            p = pages[i]
            seen = bisect.bisect_right(changes[i], now) - bisect.bisect_right(
                changes[i], p.last_fetch
            )
            changed = seen > 0
            if now > warmup:
                fetches += 1
                caught += changed
            p.fetches += 1
            p.changes += changed
            p.last_fetch = now
            if nutch:
                factor = 1 - NUTCH_DEC if changed else 1 + NUTCH_INC
                p.interval = min(max(p.interval * factor, NUTCH_MIN_DAYS), NUTCH_MAX_DAYS)
                p.next_fetch = now + p.interval
            fetch_times[i].append(now)
    fresh, age = _freshness(changes, fetch_times, warmup, float(days))
    span = n * (days - warmup)
    return {
        "fetches": fetches,
        "caught_per_fetch": caught / fetches if fetches else 0.0,
        "freshness": fresh / span,
        "staleness_h": age / span * 24,
    }


def _freshness(
    changes: list[list[float]], fetch_times: list[list[float]], start: float, end: float
) -> tuple[float, float]:
    """Total fresh page-days, and the integral of age (days × days), over [start, end]."""
    fresh = age = 0.0
    for times, fetched in zip(changes, fetch_times, strict=True):
        bounds = [*fetched, end]
        for a, b in itertools.pairwise(bounds):
            lo, hi = max(a, start), b
            if hi <= lo:
                continue
            j = bisect.bisect_right(times, a)
            stale_from = times[j] if j < len(times) else math.inf  # first change after fetch a
            fresh += max(0.0, min(stale_from, hi) - lo)
            if stale_from < hi:
                s = max(stale_from, lo)
                age += ((hi - stale_from) ** 2 - (s - stale_from) ** 2) / 2
    return fresh, age


def main() -> None:
    """Parse the options, simulate each strategy, print a markdown table."""
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 pages, 14 days")
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--budget", type=float, default=0.25, help="fetches per page per day")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.pages, args.days = 300, 14
    rng = random.Random(args.seed)
    rates = [
        math.exp(rng.uniform(math.log(MIN_RATE), math.log(MAX_RATE))) for _ in range(args.pages)
    ]
    changes = []
    for rate in rates:
        t, events = 0.0, []
        while True:
            t += rng.expovariate(rate)
            if t > args.days:
                break
            events.append(t)
        changes.append(events)
    warmup = args.days / 4
    strategies: list[tuple[str, Strategy, bool]] = [
        ("fixed interval", fixed_interval, False),
        ("Nutch adaptive (+40% / −20%)", nutch_adaptive, True),
        ("changewatch due", changewatch_due, False),
        ("changewatch, full ranking", changewatch_full, False),
        ("½ round robin + ½ changewatch due", half_round_robin, False),
        ("oracle rates (ceiling)", oracle(rates), False),
    ]
    results = {
        name: simulate(pick, changes, args.days, args.budget, warmup, nutch)
        for name, pick, nutch in strategies
    }
    base = results["fixed interval"]["caught_per_fetch"]
    if args.json:
        print(json.dumps({"args": vars(args), "results": results}, indent=2))
        return
    print(
        f"{args.pages} pages, rates log-uniform {MIN_RATE:.3f}–{MAX_RATE:.0f}/day, "
        f"{args.budget} fetches/page/day, {args.days} days (first {warmup:g} warm-up), "
        f"seed {args.seed}\n"
    )
    print(
        "| strategy | fetches | changes caught per fetch | vs fixed | freshness | mean staleness |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(
            f"| {name} | {r['fetches']:,} | {r['caught_per_fetch']:.3f} | "
            f"{r['caught_per_fetch'] / base:.2f}× | {r['freshness']:.3f} | "
            f"{r['staleness_h']:.1f} h |"
        )


if __name__ == "__main__":
    main()
