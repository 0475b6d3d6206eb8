"""Worker functions for the SimHash-pruning race test, run in spawned processes."""

from __future__ import annotations

import random
import time
import traceback
from typing import Any

import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.store.simhashes import prune_simhashes
from changewatch.store.tables import page_simhashes, page_snapshots

from ._pages import page, words

TIMEOUT_S = 120
URLS = [f"https://h{i % 3}.example/p/{i}" for i in range(24)]

#: Pages whose SimHash has no row in page_simhashes: near-duplicate search cannot find them.
LACKING = (
    sa.select(sa.func.count())
    .select_from(page_snapshots)
    .where(~sa.exists().where(page_simhashes.c.simhash == page_snapshots.c.simhash))
)


def body(url: str, variant: int) -> str:
    """One of 3 contents a URL flips between, so SimHashes keep falling out of use and
    coming back (the moment a prune and a writer both look at the same value)."""
    seed = int(url.rsplit("/", 1)[1])
    return page(words(seed * 7 + variant, 90))


def flipping_writer(database_url: str, seed: int, rounds: int, barrier: Any, results: Any) -> None:
    """Decide ``rounds`` batches of 8 pages, each on one of its 3 contents; after every batch,
    count the pages whose SimHash is missing from page_simhashes (must stay 0)."""
    try:
        rng = random.Random(seed)
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            engine = watch.store.engine
            barrier.wait(timeout=TIMEOUT_S)
            lacking = []
            for _ in range(rounds):
                watch.should_parse_many(
                    [(u, body(u, rng.randrange(3))) for u in rng.sample(URLS, 8)]
                )
                with engine.connect() as conn:
                    lacking.append(int(conn.execute(LACKING).scalar_one()))
            results.put(("ok", lacking))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def simhash_pruner(database_url: str, seconds: float, barrier: Any, results: Any) -> None:
    """Prune unheld SimHashes (batches of 3 rows) for ``seconds``; report how many went."""
    try:
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            engine = watch.store.engine
            barrier.wait(timeout=TIMEOUT_S)
            removed = 0
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                removed += prune_simhashes(engine, batch_size=3)
            results.put(("ok", removed))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def dispatch(target: Any, args: tuple[Any, ...], barrier: Any, results: Any) -> None:
    """Run ``target(*args, barrier, results)``: lets one race mix writers and pruners."""
    target(*args, barrier, results)
