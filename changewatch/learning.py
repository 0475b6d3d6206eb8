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

``ChangeWatch(learn_templates=True)`` (:class:`TemplateLearner`) counts, per host, on how
many distinct pages each short block stands (:mod:`changewatch.fingerprint.templates`, tables
``host_templates`` and ``host_template_pages``); a block on enough of them is the host's
template, and later fingerprints of the host's pages classify it as chrome
(``template_blocks``): its change is a chrome change. Only what a page shows anew is written
(its last values are remembered per page, bounded like the blocks above). A host's rules are
read again every minute, so what other workers learned, or a reset, reaches every worker.
``changewatch templates list`` / ``reset`` read and forget them.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime

from changewatch.batch import Fetched
from changewatch.errors import ConfigError
from changewatch.fingerprint import FINGERPRINT_VERSION, Block
from changewatch.fingerprint.noise import (
    DEFAULT_MIN_NOISE_OBSERVATIONS,
    DEFAULT_MIN_NOISE_SHARE,
    noise_observations,
)
from changewatch.fingerprint.templates import (
    DEFAULT_MIN_TEMPLATE_PAGES,
    DEFAULT_MIN_TEMPLATE_SHARE,
    TemplateValue,
    template_values,
)
from changewatch.store import StorePort, WriteConflict
from changewatch.urls import url_host

__all__ = ["DEFAULT_NOISE_PAGES", "DEFAULT_TEMPLATE_REFRESH_S", "NoiseLearner", "TemplateLearner"]

log = logging.getLogger("changewatch")

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
        return _cached(self._rules, self._lock, url_host(url), self.store.learned_noise)

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


def _cached(
    cache: dict[str, frozenset[bytes]],
    lock: threading.Lock,
    host: str,
    read: Callable[[str, int], frozenset[bytes]],
) -> frozenset[bytes]:
    """A host's rules from ``cache``, read from the store (``read(host, version)``) on a miss."""
    with lock:
        rules = cache.get(host)
    if rules is None:
        rules = read(host, FINGERPRINT_VERSION)
        with lock:
            cache[host] = rules
    return rules


#: Seconds a host's template rules are used before they are read again: what other workers
#: learned (or a reset) reaches this one within that time.
DEFAULT_TEMPLATE_REFRESH_S = 60.0

#: Attempts of one host's template counts against concurrent writers before they wait for
#: the page's next fetch (nothing is remembered as written, so it is counted then).
_TEMPLATE_ATTEMPTS = 3


class TemplateLearner:
    """The per-host template blocks of one ``ChangeWatch``: read from the store (cached per
    host, read again after this learner changed the host's counts) and fed with each batch's
    parsed pages."""

    def __init__(
        self,
        store: StorePort,
        *,
        min_pages: int = DEFAULT_MIN_TEMPLATE_PAGES,
        min_share: float = DEFAULT_MIN_TEMPLATE_SHARE,
        max_pages: int = DEFAULT_NOISE_PAGES,
        refresh_s: float = DEFAULT_TEMPLATE_REFRESH_S,
    ) -> None:
        if isinstance(min_pages, bool) or not isinstance(min_pages, int):
            raise ConfigError(f"min_pages must be an integer, got {min_pages!r}")
        if min_pages < 1 or not 0 < min_share <= 1 or max_pages < 1:
            raise ConfigError(
                "template learning needs min_pages >= 1, min_share in (0, 1] and "
                f"max_pages >= 1, got {min_pages!r}, {min_share!r}, {max_pages!r}"
            )
        self.store = store
        self.min_pages = min_pages
        self.min_share = min_share
        self.max_pages = max_pages
        self.refresh_s = refresh_s
        # Per page: its host and a digest of the values last written for it.
        self._written: OrderedDict[bytes, tuple[str, bytes]] = OrderedDict()
        self._rules: dict[str, tuple[frozenset[bytes], datetime]] = {}
        self._lock = threading.Lock()

    def template_blocks(self, url: str, now: datetime) -> frozenset[bytes]:
        """The text hashes and block keys learned as the template of the canonical
        ``url``'s host: read from the store when not read in the last
        :data:`DEFAULT_TEMPLATE_REFRESH_S` seconds, or after this learner changed its counts."""
        host = url_host(url)
        with self._lock:
            cached = self._rules.get(host)
        if cached is not None and 0 <= (now - cached[1]).total_seconds() < self.refresh_s:
            return cached[0]
        rules = self.store.learned_templates(host, FINGERPRINT_VERSION)
        with self._lock:
            self._rules[host] = (rules, now)
        return rules

    def observe(self, pages: Sequence[Fetched], now: datetime) -> None:
        """Count what the parsed ``pages`` show of their hosts' templates, writing only the
        pages whose values differ from those last written for them. Pages with an explicit
        main marker are not counted: templates never classify them, and a host's share is
        of the pages they could classify."""
        shown: dict[str, list[tuple[bytes, tuple[TemplateValue, ...], bytes]]] = defaultdict(list)
        with self._lock:
            for page in pages:
                blocks = page.blocks()
                if blocks is None or page.main_marked():
                    continue  # a marked page's blocks are classified without templates
                values = template_values(blocks, page.template_blocks)
                mark = _values_digest(values)
                host = url_host(page.url)
                if self._written.get(page.digest) == (host, mark):
                    self._written.move_to_end(page.digest)
                    continue
                shown[host].append((page.digest, values, mark))
        for host, items in sorted(shown.items()):
            changed = self._record(host, [(digest, values) for digest, values, _ in items], now)
            if changed is None:
                continue  # lost every race: counted on the pages' next fetch
            with self._lock:
                if changed:
                    self._rules.pop(host, None)  # read again on next use
                for digest, _, mark in items:
                    self._written[digest] = (host, mark)
                    self._written.move_to_end(digest)
                while len(self._written) > self.max_pages:
                    self._written.popitem(last=False)

    def _record(
        self, host: str, items: list[tuple[bytes, tuple[TemplateValue, ...]]], now: datetime
    ) -> bool | None:
        """One host's counts, tried again after a lost race (a deadlock on Postgres);
        whether a count changed, ``None`` after the last lost race."""
        for _ in range(_TEMPLATE_ATTEMPTS):
            try:
                return self.store.record_templates(
                    host,
                    FINGERPRINT_VERSION,
                    items,
                    now,
                    min_pages=self.min_pages,
                    min_share=self.min_share,
                )
            except WriteConflict:
                log.debug("template counts of %s lost a race; trying again", host)
        return None

    def forget(self, host: str) -> None:
        """Drop the cached rules of ``host`` and what was written for its pages (after
        ``reset``), so that they are counted again."""
        with self._lock:
            self._rules.pop(host, None)
            for digest in [d for d, (h, _) in self._written.items() if h == host]:
                del self._written[digest]


def _values_digest(values: Sequence[TemplateValue]) -> bytes:
    return hashlib.blake2b(b"".join(v.value for v in values), digest_size=8).digest()
