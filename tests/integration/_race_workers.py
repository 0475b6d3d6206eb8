"""Worker functions for test_race, run in spawned processes (kept free of pytest imports)."""

from __future__ import annotations

import multiprocessing
import random
import traceback
from collections.abc import Callable
from typing import Any

from changewatch import ChangeWatch

from ._pages import long_page, page, words

URL = "https://example.com/race"
TIMEOUT_S = 90


def run_processes(
    target: Callable[..., None],
    args_per_worker: list[tuple[Any, ...]],
    timeout_s: float = TIMEOUT_S,
) -> list[Any]:
    """Start one spawned process per argument tuple, released together by a barrier.

    ``target(*args, barrier, results)`` puts ``("ok", detail)`` or ``("error", traceback)``
    on ``results``; any error fails the run. Returns the details, in arrival order.
    """
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(args_per_worker))
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args, barrier, results)) for args in args_per_worker]
    for proc in procs:
        proc.start()
    try:
        outcomes = [results.get(timeout=timeout_s) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=timeout_s)
            if proc.is_alive():
                proc.kill()
                proc.join()
        results.close()
        results.join_thread()
    errors = [detail for status, detail in outcomes if status != "ok"]
    assert not errors, "\n".join(errors)
    assert [proc.exitcode for proc in procs] == [0] * len(procs)
    return [detail for _, detail in outcomes]


def same_page_worker(database_url: str, barrier: Any, results: Any) -> None:
    """Open a watch, wait for every worker, then decide the same new page at once."""
    try:
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            barrier.wait(timeout=TIMEOUT_S)
            results.put(("ok", watch.should_parse(URL, long_page()).kind))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def batch_worker(database_url: str, seed: int, rounds: int, barrier: Any, results: Any) -> None:
    """Decide ``rounds`` random, overlapping batches; report (url, kind) for every page."""
    try:
        rng = random.Random(seed)
        pool = pool_urls()
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            barrier.wait(timeout=TIMEOUT_S)
            seen: list[tuple[str, str]] = []
            for _ in range(rounds):
                urls = rng.sample(pool, 50)
                batch = [(u, _variant(u, rng.randrange(3))) for u in urls]
                # A few URLs twice in one batch, with their own variant.
                batch += [(u, _variant(u, rng.randrange(3))) for u in rng.sample(urls, 3)]
                decisions = watch.should_parse_many(batch)
                seen.extend((u, d.kind) for (u, _), d in zip(batch, decisions, strict=True))
            results.put(("ok", seen))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def pool_urls() -> list[str]:
    return [f"https://example.com/pool/{i}" for i in range(70)]


def _variant(url: str, n: int) -> str:
    """Three contents per URL: the base, a one-word edit, and a rewrite."""
    seed = int(url.rsplit("/", 1)[1])
    text = words(seed, 120)
    if n == 1:
        text[60] = "zeppelin"
    elif n == 2:
        text = words(seed + 5000, 120)
    return page(text)


def noise_worker(database_url: str, rounds: int, barrier: Any, results: Any) -> None:
    """Add the same two noise rules' counts ``rounds`` times, all workers at once."""
    from datetime import UTC, datetime

    from changewatch.fingerprint import NoiseRule

    try:
        rules = [NoiseRule(b"k" * 8, "key", 2, 1, "body/div"), NoiseRule(b"s" * 8, "shape", 1, 1)]
        with ChangeWatch(database_url=database_url, seen_url="memory:") as watch:
            barrier.wait(timeout=TIMEOUT_S)
            for _ in range(rounds):
                watch.store.record_noise(
                    "race.example", 4, rules, datetime.now(UTC), min_observations=10, min_share=0.5
                )
            results.put(("ok", rounds))
    except BaseException:
        results.put(("error", traceback.format_exc()))


TEMPLATE_HOST = "race-templates.example"


def template_worker(database_url: str, worker: int, barrier: Any, results: Any) -> None:
    """Fetch the host's 30 pages twice in shuffled batches of 5, learning templates, each
    worker with its own promo line (so the workers' counts of the same pages race)."""
    try:
        rng = random.Random(worker)
        with ChangeWatch(database_url=database_url, seen_url="memory:", learn_templates=True) as w:
            barrier.wait(timeout=TIMEOUT_S)
            for round_no in range(2):
                order = list(range(30))
                rng.shuffle(order)
                promo = f"Promo {worker} round {round_no}"
                for start in range(0, 30, 5):
                    w.should_parse_many(
                        [
                            (
                                f"https://{TEMPLATE_HOST}/p/{i}",
                                f"<html><body><div>{promo}</div><div><p>Page {i} tells "
                                "a long story about oak tables and chairs.</p></div>"
                                "</body></html>",
                            )
                            for i in order[start : start + 5]
                        ]
                    )
            results.put(("ok", worker))
    except BaseException:
        results.put(("error", traceback.format_exc()))
