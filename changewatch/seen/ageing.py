"""Ageing seen-set entries: time-bucketed generations, and the clock they are read by.

An ageing seen-set (``max_age=A&window=W`` in its URL) keeps one set or Bloom filter per
*generation*, the ``W`` seconds of wall-clock time numbered ``⌊now / W⌋``. An add writes the
current generation; a check reads the ``L = A/W + 1`` live ones (the current and the ``A/W``
before it); older generations are dropped. An entry added at ``t`` lives in generation
``g = ⌊t/W⌋`` and is dropped when generation ``g + L`` starts, at ``(g + L)·W``; as
``g·W ≤ t < (g + 1)·W``, that is after ``A`` and at most ``A + W`` seconds after ``t``:
never forgotten early, at most one window late. A re-add of an entry that is still live
answers "seen" and writes nothing, so it does not extend the entry's life.

"Now" is the caller's: every seen-set takes a ``clock`` (seconds since the epoch, default
:func:`time.time`), so tests drive time, and several workers agree on the generation as far as
their clocks agree. A seen-set never goes back a generation: once it has written generation
``g`` (in Redis: once any worker has), a slower clock reads and writes ``g`` too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Ageing", "Clock", "system_clock"]

#: Seconds since the epoch (``time.time``, or a test's own).
Clock = Callable[[], float]

#: Tolerance when checking that max_age is a whole number of windows (float seconds).
_WHOLE = 1e-9


def system_clock() -> float:
    """The wall clock, seconds since the epoch: the default ``clock`` of every seen-set."""
    return time.time()


@dataclass(frozen=True)
class Ageing:
    """``max_age_s`` and ``window_s`` of an ageing seen-set: an entry lives A to A + W seconds.

    >>> week = Ageing(max_age_s=7 * 86400, window_s=86400)
    >>> week.live, week.generation(86400 * 100.5)
    (8, 100)
    """

    max_age_s: float
    window_s: float

    def __post_init__(self) -> None:
        for name, value in (("max_age", self.max_age_s), ("window", self.window_s)):
            if not 0.0 < value < math.inf:
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        ratio = self.max_age_s / self.window_s
        if abs(ratio - round(ratio)) > _WHOLE * max(1.0, ratio) or round(ratio) < 1:
            raise ValueError(
                f"max_age ({self.max_age_s:g} s) must be a whole number of windows "
                f"(window={self.window_s:g} s): an entry then lives between max_age and "
                "max_age + window"
            )

    @property
    def live(self) -> int:
        """Generations read by a check: ``max_age / window + 1``."""
        return round(self.max_age_s / self.window_s) + 1

    def generation(self, now: float) -> int:
        """The generation that ``now`` falls in: ``⌊now / window⌋``."""
        return math.floor(now / self.window_s)

    def oldest(self, current: int) -> int:
        """The oldest generation still live when ``current`` is the newest."""
        return current - self.live + 1

    def age(self, generation: int, now: float) -> float:
        """Seconds since ``generation`` started."""
        return now - generation * self.window_s

    def expires_in(self, generation: int, now: float) -> float:
        """Seconds until ``generation`` stops being live (it is dropped then)."""
        return (generation + self.live) * self.window_s - now

    def describe(self) -> str:
        """``max_age=…s window=…s`` for messages."""
        return f"max_age={self.max_age_s:g}s window={self.window_s:g}s"
