"""Exact sets of digests in time-bucketed generations, shared by the memory and file backends.

Without ageing there is one generation, numbered 0, that never ends: the plain exact set.
With ageing (:class:`~changewatch.seen.ageing.Ageing`) each generation holds the digests first
added while it was current; a check reads every live generation; dropping the expired ones
is a matter of deleting whole sets. Not thread-safe: the backends hold their own lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from changewatch.seen.ageing import Ageing

__all__ = ["ExactGenerations", "generation_row"]


def generation_row(
    ageing: Ageing | None, generation: int, now: float, entries: int, **figures: Any
) -> dict[str, Any]:
    """One generation as ``stats()["generations"]`` lists it (the CLI prints these)."""
    row: dict[str, Any] = {"generation": generation, "entries": entries}
    if ageing is not None:
        row["age_s"] = round(ageing.age(generation, now), 3)
        row["expires_in_s"] = round(ageing.expires_in(generation, now), 3)
    row.update(figures)
    return row


class ExactGenerations:
    """Digests by generation; ``current`` is the newest generation any add has written."""

    def __init__(self, ageing: Ageing | None) -> None:
        self.ageing = ageing
        self.generations: dict[int, set[bytes]] = {}
        self.top: int | None = None

    def current(self, now: float) -> int:
        """The generation an add at ``now`` writes (never older than one already written)."""
        if self.ageing is None:
            return 0
        generation = self.ageing.generation(now)
        return generation if self.top is None else max(generation, self.top)

    def expire(self, now: float) -> int:
        """Drop the generations that are no longer live at ``now``; the entries dropped."""
        if self.ageing is None or not self.generations:
            return 0
        oldest = self.ageing.oldest(self.current(now))
        dropped = 0
        for generation in [g for g in self.generations if g < oldest]:
            dropped += len(self.generations.pop(generation))
        return dropped

    def add_many(self, batch: list[bytes], now: float) -> list[bool]:
        """Add to the current generation each digest no live generation holds."""
        self.expire(now)
        current = self.current(now)
        self.top = current
        writing = self.generations.get(current, set())
        older = [s for g, s in self.generations.items() if g != current]
        try:
            return self._add(batch, writing, older)
        finally:
            if writing and current not in self.generations:
                self.generations[current] = writing

    @staticmethod
    def _add(batch: list[bytes], writing: set[bytes], older: list[set[bytes]]) -> list[bool]:
        if not older:  # one generation (not ageing, or a fresh one): the plain set's loop
            out = []
            for digest in batch:
                if digest in writing:
                    out.append(False)
                else:
                    writing.add(digest)
                    out.append(True)
            return out
        out = []
        for digest in batch:
            if digest in writing or any(digest in s for s in older):
                out.append(False)
            else:
                writing.add(digest)
                out.append(True)
        return out

    def contains(self, digest: bytes, now: float) -> bool:
        """Whether a live generation holds ``digest``."""
        if self.ageing is not None and self.generations:
            oldest = self.ageing.oldest(self.current(now))
            return any(digest in s for g, s in self.generations.items() if g >= oldest)
        return any(digest in s for s in self.generations.values())

    def forget_many(self, batch: Iterable[bytes]) -> list[bool]:
        """Remove each digest from every generation; True where one held it."""
        out = []
        for digest in batch:
            found = False
            for held in self.generations.values():
                if digest in held:
                    held.discard(digest)
                    found = True
            out.append(found)
        return out

    def __len__(self) -> int:
        return sum(len(s) for s in self.generations.values())

    def rows(self, now: float) -> list[dict[str, Any]]:
        """Each live generation, oldest first: number, age, entries (exact: no fill, no error)."""
        self.expire(now)
        return [
            generation_row(self.ageing, g, now, len(s), fill=None, estimated_error_rate=0.0)
            for g, s in sorted(self.generations.items())
        ]

    def load(self, generations: dict[int, set[bytes]], top: int | None) -> None:
        """Take the generations read from a file."""
        self.generations = generations
        self.top = top
