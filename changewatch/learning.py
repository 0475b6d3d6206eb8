"""Learning each host's noise from consecutive fetches of its pages — orchestration.

``ChangeWatch(learn_noise=True)`` keeps, per page, the blocks of its last parsed fetch
(:class:`~changewatch.fingerprint.Block`: key, shape and text hash, never the text) in a
bounded in-process map, and after each decided batch adds what each step from those blocks
to the new ones shows to the host's rules in the store (``host_noise``,
:func:`~changewatch.fingerprint.noise.noise_observations`). A rule that has been seen in
``min_observations`` steps and changed in ``min_share`` of them is learned, and every later
fingerprint of the host's pages leaves its blocks out of both hashes (``volatile_blocks``).

Learned noise never hides a change to main content: only *learnable* blocks are counted and
excluded (never a block of prose, never a block inside an explicit main marker), and a step
whose prose changed is not counted at all. The first fetch of a page after a rule is learned
can be a change once (its stored hash still holds the block); it is stable after that.
The last blocks live in memory: a restarted process starts each page's steps afresh, while
the counts in the store carry on. ``changewatch noise list`` / ``reset`` read and forget them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from datetime import datetime

from changewatch.batch import Fetched
from changewatch.errors import ConfigError
from changewatch.fingerprint import FINGERPRINT_VERSION, Block
from changewatch.fingerprint.noise import (
    DEFAULT_MIN_NOISE_OBSERVATIONS,
    DEFAULT_MIN_NOISE_SHARE,
    noise_observations,
)
from changewatch.store import StorePort
from changewatch.urls import url_host

__all__ = ["DEFAULT_NOISE_PAGES", "NoiseLearner"]

#: Pages whose last blocks are kept in memory (least recently fetched forgotten first).
DEFAULT_NOISE_PAGES = 100_000


class NoiseLearner:
    """The per-host noise rules of one ``ChangeWatch``: read from the store (cached per host,
    read again after the host's counts change) and fed with each batch's steps."""

    def __init__(
        self,
        store: StorePort,
        *,
        min_observations: int = DEFAULT_MIN_NOISE_OBSERVATIONS,
        min_share: float = DEFAULT_MIN_NOISE_SHARE,
        max_pages: int = DEFAULT_NOISE_PAGES,
    ) -> None:
        if isinstance(min_observations, bool) or not isinstance(min_observations, int):
            raise ConfigError(f"min_observations must be an integer, got {min_observations!r}")
        if min_observations < 1 or not 0 < min_share <= 1 or max_pages < 1:
            raise ConfigError(
                "noise learning needs min_observations >= 1, min_share in (0, 1] and "
                f"max_pages >= 1, got {min_observations!r}, {min_share!r}, {max_pages!r}"
            )
        self.store = store
        self.min_observations = min_observations
        self.min_share = min_share
        self.max_pages = max_pages
        self._last: OrderedDict[bytes, tuple[Block, ...]] = OrderedDict()
        self._rules: dict[str, frozenset[bytes]] = {}
        self._lock = threading.Lock()

    def volatile_blocks(self, url: str) -> frozenset[bytes]:
        """The keys and shapes learned as noise for the host of the canonical ``url``."""
        host = url_host(url)
        with self._lock:
            rules = self._rules.get(host)
        if rules is None:
            rules = self.store.learned_noise(host, FINGERPRINT_VERSION)
            with self._lock:
                self._rules[host] = rules
        return rules

    def observe(self, pages: Sequence[Fetched], now: datetime) -> None:
        """Count the steps of the parsed ``pages`` against their previous fetch, per host,
        and keep their blocks for the next step."""
        steps: dict[str, list[tuple[tuple[Block, ...], tuple[Block, ...]]]] = defaultdict(list)
        with self._lock:
            for page in pages:
                blocks = page.blocks()
                if blocks is None:
                    continue
                before = self._last.pop(page.digest, None)
                self._last[page.digest] = blocks
                if before is not None:
                    steps[url_host(page.url)].append((before, blocks))
            while len(self._last) > self.max_pages:
                self._last.popitem(last=False)
        for host, host_steps in sorted(steps.items()):
            rules = noise_observations(host_steps)
            self.store.record_noise(
                host,
                FINGERPRINT_VERSION,
                rules,
                now,
                min_observations=self.min_observations,
                min_share=self.min_share,
            )
            if rules:
                with self._lock:
                    self._rules.pop(host, None)  # read again on next use

    def forget(self, host: str) -> None:
        """Drop the cached rules of ``host`` (after ``reset``)."""
        with self._lock:
            self._rules.pop(host, None)
