"""Worker functions for the Redis seen-set races, run in spawned processes (no pytest imports)."""

from __future__ import annotations

import hashlib
import math
import random
import time
import traceback
from typing import Any

import numpy as np

from changewatch.seen import open_seen_set

TIMEOUT_S = 120


def race_digests(total: int) -> list[bytes]:
    """The race's URL digests: blake2b-128 of each index, the same in every process."""
    return [hashlib.blake2b(i.to_bytes(8, "big"), digest_size=16).digest() for i in range(total)]


def race_sample(seed: int, total: int, sample: int) -> list[int]:
    """The shuffled indices one worker adds (``sample`` of ``total``, seeded)."""
    return random.Random(seed).sample(range(total), sample)


def add_worker(
    url: str, seed: int, total: int, sample: int, batch: int, barrier: Any, results: Any
) -> None:
    """Open the seen-set, wait for every worker, add a shuffled sample in batches.

    Puts ``("ok", new_indices_bytes)`` (int32, the indices answered new) or ``("error", tb)``.
    """
    try:
        digests = race_digests(total)
        order = race_sample(seed, total, sample)
        seen = open_seen_set(url)
        try:
            barrier.wait(timeout=TIMEOUT_S)
            new: list[int] = []
            for start in range(0, len(order), batch):
                indices = order[start : start + batch]
                answers = seen.add_many([digests[i] for i in indices])
                new.extend(i for i, is_new in zip(indices, answers, strict=True) if is_new)
        finally:
            seen.close()
        results.put(("ok", np.asarray(new, dtype=np.int32).tobytes()))
    except BaseException:
        results.put(("error", traceback.format_exc()))


def ageing_add_worker(
    url: str,
    window_s: float,
    lead_s: float,
    seed: int,
    total: int,
    sample: int,
    batch: int,
    barrier: Any,
    results: Any,
) -> None:
    """As :func:`add_worker`, with a clock that crosses a generation boundary mid-race.

    Released by the barrier, each worker shifts its clock so that a new generation starts
    ``lead_s`` later (the workers' clocks then agree to within their release skew, as real
    clocks of one machine do). Puts ``("ok", (new_indices_bytes, generations))``: the
    generations its clock went through.
    """
    try:
        digests = race_digests(total)
        order = race_sample(seed, total, sample)
        shift = [0.0]
        seen = open_seen_set(url, clock=lambda: time.time() + shift[0])
        try:
            barrier.wait(timeout=TIMEOUT_S)
            now = time.time()
            shift[0] = math.ceil(now / window_s) * window_s - lead_s - now
            first = math.floor((time.time() + shift[0]) / window_s)
            new: list[int] = []
            for start in range(0, len(order), batch):
                indices = order[start : start + batch]
                answers = seen.add_many([digests[i] for i in indices])
                new.extend(i for i, is_new in zip(indices, answers, strict=True) if is_new)
            last = math.floor((time.time() + shift[0]) / window_s)
        finally:
            seen.close()
        results.put(("ok", (np.asarray(new, dtype=np.int32).tobytes(), (first, last))))
    except BaseException:
        results.put(("error", traceback.format_exc()))
