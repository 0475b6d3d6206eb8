"""In-process seen-sets: an exact set of 16-byte digests, and a Bloom filter; both may age.

``memory:`` (``kind=exact``) is :class:`MemorySeenSet`; ``memory:?kind=bloom&capacity=N&
error_rate=P`` is :class:`MemoryBloomSeenSet`, a chain of equal filters that grows when full
(:class:`changewatch.bloom.BloomGenerations`). ``max_age=A&window=W`` makes either forget an
entry between ``A`` and ``A + W`` seconds after it was added (:mod:`changewatch.seen.ageing`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from changewatch.bloom import BloomGenerations
from changewatch.errors import ForgetNotSupportedError
from changewatch.seen.ageing import Ageing, Clock, system_clock
from changewatch.seen.digests import to_digest, to_digests
from changewatch.seen.generations import ExactGenerations, generation_row

__all__ = [
    "DEFAULT_MEMORY_BLOOM_CAPACITY",
    "DEFAULT_MEMORY_BLOOM_ERROR_RATE",
    "MemoryBloomSeenSet",
    "MemorySeenSet",
    "bloom_forget_error",
    "warn_if_overfull",
]

log = logging.getLogger("changewatch")

# CPython's per-entry cost of a set slot plus a 16-byte bytes object (measured with
# sys.getsizeof: 33 + 16 bytes object, ~16-32 bytes of table slot).
_BYTES_PER_ITEM_ESTIMATE = 81
DEFAULT_MEMORY_BLOOM_CAPACITY = 1_000_000
DEFAULT_MEMORY_BLOOM_ERROR_RATE = 0.001


def bloom_forget_error(name: str) -> ForgetNotSupportedError:
    """Why a Bloom filter cannot forget, and what to use instead."""
    return ForgetNotSupportedError(
        f"{name} is a Bloom filter: it cannot forget one URL (its bits are shared with other "
        "URLs, and clearing them would make those look new). Let entries age out instead "
        "(max_age=…&window=… in the seen-set URL), keep the URLs that must be forgettable in "
        "an exact route (kind=route), or use an exact seen-set"
    )


def warn_if_overfull(name: str, estimated: float, configured: float, detail: str) -> bool:
    """Log the overfill warning when ``estimated`` passes ``configured``; True if it did."""
    if estimated <= configured:
        return False
    log.warning(
        "seen-set %s is over capacity: estimated false-positive rate %.4g exceeds the "
        "configured %.4g (%s); URLs will be wrongly skipped — use a larger capacity",
        name,
        estimated,
        configured,
        detail,
    )
    return True


class MemorySeenSet:
    """Exact, in one process, lost when it ends. Thread-safe; ages with ``ageing``."""

    exact = True

    def __init__(self, *, ageing: Ageing | None = None, clock: Clock | None = None) -> None:
        self._generations = ExactGenerations(ageing)
        self._clock = clock or system_clock
        self._lock = threading.Lock()

    @property
    def ageing(self) -> Ageing | None:
        """The ageing parameters, or None for a set that never forgets by itself."""
        return self._generations.ageing

    def add(self, item: str | bytes) -> bool:
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        batch = to_digests(items)  # every item checked before any is added
        with self._lock:
            return self._generations.add_many(batch, self._clock())

    def forget(self, item: str | bytes) -> bool:
        """Remove a URL or digest; True when it was there (the next add answers new)."""
        return self.forget_many([item])[0]

    def forget_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """``forget`` for several; every item checked before any is removed."""
        batch = to_digests(items)
        with self._lock:
            return self._generations.forget_many(batch)

    def members(self) -> set[bytes]:
        """Every digest held in a live generation (a copy)."""
        with self._lock:
            self._generations.expire(self._clock())
            return set().union(*self._generations.generations.values())

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            item = to_digest(item)
        if not isinstance(item, bytes):
            return False
        with self._lock:
            return self._generations.contains(item, self._clock())

    def __len__(self) -> int:
        with self._lock:
            self._generations.expire(self._clock())
            return len(self._generations)

    def stats(self) -> Mapping[str, Any]:
        with self._lock:
            rows = self._generations.rows(self._clock())
        n = sum(row["entries"] for row in rows)
        stats: dict[str, Any] = {
            "kind": "memory-exact",
            "items": n,
            "capacity": None,
            "bits": None,
            "bytes": n * _BYTES_PER_ITEM_ESTIMATE,
            "error_rate": 0.0,
            "estimated_error_rate": 0.0,
        }
        if self.ageing is not None:
            stats.update(_ageing_stats(self.ageing), generations=rows)
        return stats

    def close(self) -> None:
        """Nothing to persist."""


def _ageing_stats(ageing: Ageing) -> dict[str, Any]:
    return {
        "max_age_s": ageing.max_age_s,
        "window_s": ageing.window_s,
        "live_generations": ageing.live,
    }


class MemoryBloomSeenSet:
    """A Bloom filter in one process that grows when full, and ages with ``ageing``.

    ``capacity`` is per generation when ageing (the URLs first added in one window), else the
    whole filter's before it grows; ``error_rate`` is the rate of every live generation
    together at capacity. ``stats()["estimated_error_rate"]`` is the compound rate at the real
    fill, and a warning is logged once it passes ``error_rate`` after a generation grew.
    """

    exact = False

    def __init__(
        self,
        *,
        capacity: int = DEFAULT_MEMORY_BLOOM_CAPACITY,
        error_rate: float = DEFAULT_MEMORY_BLOOM_ERROR_RATE,
        ageing: Ageing | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.ageing = ageing
        self.capacity = capacity
        self.error_rate = error_rate
        self._filters = BloomGenerations(capacity, error_rate, ageing.live if ageing else 1)
        self._clock = clock or system_clock
        self._lock = threading.Lock()
        self._top: int | None = None
        self._warned = False
        self._grown = 0

    def _current(self) -> tuple[int, int]:
        """The current generation and the oldest live one; expired ones dropped."""
        if self.ageing is None:
            return 0, 0
        current = self.ageing.generation(self._clock())
        if self._top is not None:
            current = max(current, self._top)
        oldest = self.ageing.oldest(current)
        self._filters.drop_before(oldest)
        return current, oldest

    def add(self, item: str | bytes) -> bool:
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        batch = to_digests(items)  # every item checked before any is added
        with self._lock:
            current, _ = self._current()
            self._top = current
            out = self._filters.add_many(batch, current)
            grown = sum(len(chain) - 1 for chain in self._filters.generations.values())
            check = grown > self._grown and not self._warned
            self._grown = grown
            if check:
                self._warned = warn_if_overfull(
                    "memory:", self._filters.estimated_error_rate(), self.error_rate,
                    f"{len(self._filters)} live entries, capacity {self.capacity} per "
                    "generation",
                )  # fmt: skip
        return out

    def forget(self, item: str | bytes) -> bool:
        """Refused: :class:`~changewatch.errors.ForgetNotSupportedError` says why."""
        raise bloom_forget_error("memory:?kind=bloom")

    def forget_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """Refused: :class:`~changewatch.errors.ForgetNotSupportedError` says why."""
        raise bloom_forget_error("memory:?kind=bloom")

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            item = to_digest(item)
        if not isinstance(item, bytes) or len(item) != 16:
            return False
        with self._lock:
            _, oldest = self._current()
            return self._filters.contains_many([item], oldest)[0]

    def __len__(self) -> int:
        with self._lock:
            self._current()
            return len(self._filters)

    def stats(self) -> Mapping[str, Any]:
        with self._lock:
            _, oldest = self._current()
            now = self._clock()
            filters = self._filters.filters()
            rows = [
                generation_row(self.ageing, g, now, **self._filters.generation_figures(g))
                for g in sorted(self._filters.generations)
            ]
            stats: dict[str, Any] = {
                "kind": "memory-bloom",
                "items": len(self._filters),
                "capacity": self.capacity,
                "bits": sum(f.bits for f in filters),
                "hashes": self._filters.hashes,
                "filters": len(filters),
                "bytes": sum(f.nbytes for f in filters),
                "error_rate": self.error_rate,
                "estimated_error_rate": self._filters.estimated_error_rate(oldest),
                "generations": rows,
            }
        if self.ageing is not None:
            stats.update(_ageing_stats(self.ageing))
        return stats

    def close(self) -> None:
        """Nothing to persist."""
