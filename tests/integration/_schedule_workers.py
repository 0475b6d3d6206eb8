"""Worker for test_schedule_race, run in spawned processes (kept free of pytest imports)."""

from __future__ import annotations

import random
import traceback
from typing import Any

from changewatch import ChangeWatch

from ._pages import page, words

TIMEOUT_S = 90
PAGES = 20


def urls() -> list[str]:
    """The shared pages every worker fetches."""
    return [f"https://race.example/p{i}" for i in range(PAGES)]


def body(i: int, variant: int) -> str:
    """Page ``i`` in one of three contents."""
    return page(words(i * 10 + variant, 80))


def mixed_worker(database_url: str, seed: int, rounds: int, barrier: Any, results: Any) -> None:
    """Fetch random pages: bodies with validators, 304s and batches; report the calls made."""
    try:
        rng = random.Random(seed)
        calls: list[str] = []
        with ChangeWatch(database_url=database_url, seen_url="memory:", store_text=True) as w:
            barrier.wait(timeout=TIMEOUT_S)
            for _ in range(rounds):
                i = rng.randrange(PAGES)
                url = urls()[i]
                choice = rng.random()
                if choice < 0.3:
                    w.should_parse(url, None, status=304, headers={"ETag": f'"{seed}"'})
                    calls.append(url)
                elif choice < 0.7:
                    headers = {"ETag": f'"{seed}-{i}"'}
                    w.should_parse(url, body(i, rng.randrange(3)), headers=headers)
                    calls.append(url)
                else:
                    picks = rng.sample(range(PAGES), 4)
                    w.should_parse_many(
                        [(urls()[j], body(j, rng.randrange(3)), {"etag": '"b"'}) for j in picks]
                    )
                    calls.extend(urls()[j] for j in picks)
        results.put(("ok", calls))
    except BaseException:
        results.put(("error", traceback.format_exc()))
