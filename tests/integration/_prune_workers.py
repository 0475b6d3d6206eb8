"""Worker functions for the retention race test, run in spawned processes."""

from __future__ import annotations

import random
import time
import traceback
from datetime import timedelta
from typing import Any

from changewatch import ChangeWatch

from ._pages import page, words

TIMEOUT_S = 120


def pool_urls() -> list[str]:
    return [f"https://h{i % 4}.example/page/{i}" for i in range(40)]


def body(url: str, variant: int) -> str:
    seed = int(url.rsplit("/", 1)[1])
    return page(words(seed * 10 + variant, 120))


def writer(database_url: str, seed: int, rounds: int, barrier: Any, results: Any) -> None:
    """Decide ``rounds`` batches of 20 pages with one of 5 contents each; report the kinds."""
    try:
        rng = random.Random(seed)
        pool = pool_urls()
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            barrier.wait(timeout=TIMEOUT_S)
            seen: list[tuple[str, str]] = []
            for _ in range(rounds):
                batch = [(u, body(u, rng.randrange(5))) for u in rng.sample(pool, 20)]
                decisions = watch.should_parse_many(batch)
                seen.extend((u, d.kind) for (u, _), d in zip(batch, decisions, strict=True))
            results.put(("ok", seen))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def pruner(database_url: str, rounds: int, barrier: Any, results: Any) -> None:
    """Prune (keep 2, no age limit, batches of 7 rows) at least ``rounds`` times and until
    something was removed (for at most 15 s); report rows removed."""
    try:
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            barrier.wait(timeout=TIMEOUT_S)
            removed, done = 0, 0
            deadline = time.monotonic() + 15
            while (done < rounds or not removed) and time.monotonic() < deadline:
                removed += watch.store.prune(2, timedelta(0), watch._clock(), batch_size=7).removed
                done += 1
                time.sleep(0.01)
            results.put(("ok", removed))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def dispatch(target: Any, args: tuple[Any, ...], barrier: Any, results: Any) -> None:
    """Run ``target(*args, barrier, results)``: lets one race mix writers and pruners."""
    target(*args, barrier, results)


def counting_writer(database_url: str, seed: int, rounds: int, barrier: Any, results: Any) -> None:
    """``writer``'s batches, reporting how many times a batch lost its race (the batch
    module's "lost a race" debug records)."""
    import logging

    class Count(logging.Handler):
        lost = 0

        def emit(self, record: logging.LogRecord) -> None:
            Count.lost += "lost a race" in record.getMessage()

    logger = logging.getLogger("changewatch")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Count())
    try:
        rng = random.Random(seed)
        pool = pool_urls()
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            barrier.wait(timeout=TIMEOUT_S)
            for _ in range(rounds):
                watch.should_parse_many(
                    [(u, body(u, rng.randrange(5))) for u in rng.sample(pool, 20)]
                )
        results.put(("ok", Count.lost))
    except BaseException:
        results.put(("error", traceback.format_exc()))
