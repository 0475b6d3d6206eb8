"""Ageing Redis seen-sets: generations of sets or Bloom bitmaps, checked and set in one script.

``max_age=A&window=W`` (:mod:`changewatch.seen.ageing`). Keys, for ``key=K``:

exact (:class:`RedisAgeingSeenSet`)
    ``K:{K}:g<G>`` one set per generation, ``K:{K}:top`` the newest generation written,
    ``K:{K}:meta`` the parameters; all in one cluster slot (the hash tag ``{K}``).
Bloom (:class:`RedisAgeingBloomSeenSet`)
    per block ``b`` (:func:`~changewatch.seen.redis.layout.block_tags`): ``K:{TAG_b}:g<G>``, the
    block's bitmap of generation G, a chain of equal filters of ``bits_per_block`` bits each,
    and ``K:{TAG_b}:h``, a hash of the block's newest generation and each generation's filters
    and entries; ``K:meta`` the parameters.

An add sends, with the caller's generation ``g``, the keys of generations ``g − L + 1`` to
``g + 1`` (``L`` live ones, and the next, for a worker whose clock is ahead); the script
(:data:`~changewatch.seen.redis.scripts.AGEING_SET`, ``AGEING_BLOOM``) uses the newer of ``g``
and the newest generation any worker wrote, checks every live generation and writes the
current one — one atomic step per key group, so no two workers both see a URL as new within
its max age. A generation's keys expire (``PEXPIRE``) one window after it stops being live.
In a Bloom block whose writing filter holds ``⌈capacity / blocks⌉`` entries the generation
grows by one filter: the compound rate rises, ``stats()`` reports it, and a warning is logged.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import redis
from redis.cluster import RedisCluster

from changewatch.bloom import compound_error_rate, estimated_error, generation_error_rate
from changewatch.errors import SeenSetError
from changewatch.seen.ageing import Ageing, Clock, system_clock
from changewatch.seen.digests import to_digests
from changewatch.seen.generations import generation_row
from changewatch.seen.memory import bloom_forget_error, warn_if_overfull
from changewatch.seen.redis.backends import (
    _PIPELINE_URLS,
    _SCRIPT_URLS,
    DEFAULT_KEY,
    DEFAULT_REPLAY_S,
    Command,
    _flags,
    _RedisBase,
    _text,
    reply_key,
)
from changewatch.seen.redis.layout import (
    DEFAULT_BLOOM_CAPACITY,
    DEFAULT_BLOOM_ERROR_RATE,
    MAX_BLOCK_BITS,
    block_positions,
    block_tags,
    bloom_block_layout,
)
from changewatch.seen.redis.scripts import AGEING_BLOOM, AGEING_SET, META

__all__ = ["RedisAgeingBloomSeenSet", "RedisAgeingSeenSet"]

logger = logging.getLogger("changewatch")
AGEING_SET_LAYOUT = "ageing-set-1"
AGEING_BLOOM_LAYOUT = "ageing-bloom-1"
#: Most filters one generation of one block may grow to (and never past 512 MB a key).
MAX_FILTERS = 256


class _Ageing(_RedisBase):
    """The generation arithmetic and the parameter check of both ageing kinds."""

    def _setup_ageing(self, ageing: Ageing, clock: Clock | None) -> None:
        self.ageing = ageing
        self._clock = clock or system_clock
        self._window_ms = round(ageing.window_s * 1000)
        if self._window_ms < 1:
            raise SeenSetError("a Redis ageing seen-set needs a window of at least 1 ms")

    def _now(self) -> tuple[float, int, int]:
        """Now (s), its generation, and the first generation whose keys are sent."""
        now = self._clock()
        g = self.ageing.generation(now)
        return now, g, g - self.ageing.live + 1

    def _arguments(self, now: float, g: int, g0: int) -> list[Any]:
        return [g0, g, self.ageing.live, self._window_ms, round(now * 1000)]

    def _check_meta(self, meta_key: str, wanted: dict[str, str]) -> dict[str, str]:
        """Store ``wanted`` in ``meta_key`` if empty; refuse other stored parameters."""
        pairs = [x for item in wanted.items() for x in item]
        (stored,) = self._execute([("EVALSHA", META.sha, 1, meta_key, 0, *pairs)])
        found = {_text(stored[i]): _text(stored[i + 1]) for i in range(0, len(stored), 2)}
        if found.get("layout") != wanted["layout"]:
            raise SeenSetError(
                f"Redis key {self.key!r} at {self._where} holds a seen-set of another kind "
                f"(layout {found.get('layout')}); an ageing one ({wanted['layout']}) cannot "
                "share its key"
            )
        mismatched = [name for name in wanted if found.get(name) != wanted[name]]
        if mismatched:
            theirs = ", ".join(f"{name}={found.get(name)}" for name in mismatched)
            ours = ", ".join(f"{name}={wanted[name]}" for name in mismatched)
            raise SeenSetError(
                f"Redis seen-set {self.key!r} at {self._where} was created with {theirs}; this "
                f"one asks for {ours}: open it with the same parameters, or use another key"
            )
        return found

    def _ageing_stats(self) -> dict[str, Any]:
        return {
            "max_age_s": self.ageing.max_age_s,
            "window_s": self.ageing.window_s,
            "live_generations": self.ageing.live,
            "replay_s": self.replay_s,
        }


class RedisAgeingSeenSet(_Ageing):
    """Exact and ageing: one Redis set per generation, all in the slot of the tag ``{key}``."""

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        *,
        ageing: Ageing,
        key: str = DEFAULT_KEY,
        clock: Clock | None = None,
        where: str = "redis",
        password: str | None = None,
        replay_s: float = DEFAULT_REPLAY_S,
    ) -> None:
        super().__init__(
            client, key=key, ttl=None, where=where, password=password, replay_s=replay_s
        )
        try:
            self._setup_ageing(ageing, clock)
            held, bloom_meta = self._execute([("TYPE", key), ("EXISTS", f"{key}:meta")])
            if _text(held) != "none" or bloom_meta:
                what = "a kind=bloom seen-set" if bloom_meta else "a seen-set without max_age"
                raise SeenSetError(
                    f"Redis key {key!r} at {where} holds {what}; an ageing set cannot share it"
                )
            self._load_scripts()
            self._check_meta(
                f"{key}:{{{key}}}:meta",
                {
                    "layout": AGEING_SET_LAYOUT,
                    "max_age": repr(ageing.max_age_s),
                    "window": repr(ageing.window_s),
                },
            )
        except BaseException:
            self.close()
            raise

    def _generation_key(self, generation: int) -> str:
        return f"{self.key}:{{{self.key}}}:g{generation}"

    def _keys(self, g0: int) -> list[str]:
        """The sent generations' keys (``g0`` to the caller's next) and the top key."""
        gens = [self._generation_key(g0 + i) for i in range(self.ageing.live + 1)]
        return [*gens, f"{self.key}:{{{self.key}}}:top"]

    def add(self, item: str | bytes) -> bool:
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)  # every item checked before any is added
        answers: list[bytes] = []
        for start in range(0, len(digests), _PIPELINE_URLS):
            batch = digests[start : start + _PIPELINE_URLS]
            now, g, g0 = self._now()
            keys, extra = self._keys(g0), self._arguments(now, g, g0)
            calls = [
                self._call(AGEING_SET, keys, [b"".join(chunk), None, *extra, "add"], chunk)
                for chunk in (
                    batch[i : i + _SCRIPT_URLS] for i in range(0, len(batch), _SCRIPT_URLS)
                )
            ]
            answers += self._run(calls)
        out = _flags(answers)
        self._pay_owed(digests, out)
        return out.tolist()  # type: ignore[no-any-return]

    def _plain(self, mode: str, digests: Sequence[bytes]) -> list[bool]:
        """A check or a forget over every sent generation (not replayed: idempotent)."""
        out: list[bool] = []
        for start in range(0, len(digests), _SCRIPT_URLS):
            chunk = digests[start : start + _SCRIPT_URLS]
            now, g, g0 = self._now()
            keys = self._keys(g0)
            command: Command = (
                "EVALSHA", AGEING_SET.sha, len(keys) + 1, *keys, reply_key(keys[0], "unused"),
                b"".join(chunk), 1, *self._arguments(now, g, g0), mode,
            )  # fmt: skip
            out += _flags(self._execute([command])).tolist()
        return out

    def contains_many(self, items: Iterable[str | bytes]) -> list[bool]:
        return self._plain("check", to_digests(items))

    def forget(self, item: str | bytes) -> bool:
        """Remove a URL or digest from every generation; True when one held it."""
        return self.forget_many([item])[0]

    def forget_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """``forget`` for several, 2,000 a script call."""
        return self._plain("forget", to_digests(items))

    def stats(self) -> Mapping[str, Any]:
        now, g, _ = self._now()
        (top,) = self._execute([("GET", f"{self.key}:{{{self.key}}}:top")])
        current = max(g, int(top)) if top is not None else g
        gens = list(range(self.ageing.oldest(current), current + 1))
        counts = self._execute([("SCARD", self._generation_key(x)) for x in gens])
        memory = self._execute([("MEMORY USAGE", self._generation_key(x)) for x in gens])
        rows = [
            generation_row(self.ageing, x, now, int(n), fill=None, estimated_error_rate=0.0)
            for x, n in zip(gens, counts, strict=True)
            if int(n)
        ]
        return {
            "kind": "redis-set",
            "key": self.key,
            "items": sum(row["entries"] for row in rows),
            "capacity": None,
            "bits": None,
            "bytes": sum(int(m or 0) for m in memory),
            "error_rate": 0.0,
            "estimated_error_rate": 0.0,
            "ttl": None,
            "generations": rows,
            **self._ageing_stats(),
        }


class RedisAgeingBloomSeenSet(_Ageing):
    """Bloom and ageing: per block, one bitmap per generation (a chain of equal filters).

    ``capacity`` is the URLs one generation takes before it grows; ``error_rate`` the rate of
    all live generations together at capacity (each filter gets
    :func:`~changewatch.bloom.generation_error_rate`).
    """

    exact = False

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        *,
        ageing: Ageing,
        key: str = DEFAULT_KEY,
        capacity: int = DEFAULT_BLOOM_CAPACITY,
        error_rate: float = DEFAULT_BLOOM_ERROR_RATE,
        blocks: int | None = None,
        clock: Clock | None = None,
        where: str = "redis",
        password: str | None = None,
        replay_s: float = DEFAULT_REPLAY_S,
    ) -> None:
        super().__init__(
            client, key=key, ttl=None, where=where, password=password, replay_s=replay_s
        )
        self.capacity = capacity
        self.error_rate = error_rate
        self.meta_key = f"{key}:meta"
        self._warned = False
        self._lock = threading.Lock()
        self._new_since_check = 0
        try:
            self._setup_ageing(ageing, clock)
            if "{" in key or "}" in key:
                raise SeenSetError(f"Bloom seen-set key {key!r} must not contain braces")
            self.filter_error_rate = generation_error_rate(error_rate, ageing.live)
            try:
                self.layout = bloom_block_layout(capacity, self.filter_error_rate, blocks)
            except ValueError as exc:
                raise SeenSetError(f"Redis Bloom seen-set {key!r}: {exc}") from None
            self.block_capacity = -(-capacity // self.layout.blocks)
            self.max_filters = max(
                1, min(MAX_FILTERS, MAX_BLOCK_BITS // self.layout.bits_per_block)
            )
            tags = block_tags(key, self.layout.blocks)
            self._block_prefixes = [f"{key}:{{{tag}}}" for tag in tags]
            (held,) = self._execute([("TYPE", key)])
            if _text(held) != "none":
                raise SeenSetError(
                    f"Redis key {key!r} at {where} holds a Redis {_text(held)}; a kind=bloom "
                    "seen-set cannot share its key"
                )
            self._load_scripts()
            self._check_meta(self.meta_key, self._parameters())
        except BaseException:
            super().close()
            raise

    def _parameters(self) -> dict[str, str]:
        return {
            "layout": AGEING_BLOOM_LAYOUT,
            "blocks": str(self.layout.blocks),
            "bits_per_block": str(self.layout.bits_per_block),
            "hashes": str(self.layout.hashes),
            "capacity": str(self.capacity),
            "error_rate": repr(self.error_rate),
            "max_age": repr(self.ageing.max_age_s),
            "window": repr(self.ageing.window_s),
        }

    def _keys(self, block: int, g0: int) -> list[str]:
        prefix = self._block_prefixes[block]
        gens = [f"{prefix}:g{g0 + i}" for i in range(self.ageing.live + 1)]
        return [*gens, f"{prefix}:h"]

    def _groups(self, digests: Sequence[bytes]) -> list[tuple[int, np.ndarray, bytes]]:
        blocks, bits = block_positions(digests, self.layout)
        order = np.argsort(blocks, kind="stable")  # a repeat stays after its first occurrence
        bounds = np.searchsorted(blocks[order], np.arange(self.layout.blocks + 1))
        groups = []
        for block in range(self.layout.blocks):
            rows = order[bounds[block] : bounds[block + 1]]
            for i in range(0, rows.size, _SCRIPT_URLS):
                chunk = rows[i : i + _SCRIPT_URLS]
                groups.append((block, chunk, bits[chunk].astype(">u4").tobytes()))
        return groups

    def _tail(self) -> list[Any]:
        return [self.layout.bits_per_block, self.block_capacity, self.max_filters]

    def add(self, item: str | bytes) -> bool:
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)  # every item checked before any is added
        out = np.zeros(len(digests), dtype=bool)
        for start in range(0, len(digests), _PIPELINE_URLS):
            batch = digests[start : start + _PIPELINE_URLS]
            now, g, g0 = self._now()
            head, groups = [self.layout.hashes], self._groups(batch)
            extra = [*self._arguments(now, g, g0), "add", *self._tail()]
            calls = [
                self._call(
                    AGEING_BLOOM,
                    self._keys(block, g0),
                    [*head, data, None, *extra],
                    [batch[i] for i in rows],
                )
                for block, rows, data in groups
            ]
            for (_, rows, _), reply in zip(groups, self._run(calls), strict=True):
                out[start + rows] = _flags([reply])
        self._pay_owed(digests, out)
        self._check_overfill(int(out.sum()))
        return out.tolist()

    def _check_overfill(self, new: int) -> None:
        """Every tenth of a generation's capacity: warn if a generation grew past its rate."""
        with self._lock:
            self._new_since_check += new
            due = not self._warned and self._new_since_check >= max(1, self.capacity // 10)
            if due:
                self._new_since_check = 0
        if due:
            self.stats()  # warns, once, when the compound rate passed error_rate

    def contains_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)
        out = np.zeros(len(digests), dtype=bool)
        for start in range(0, len(digests), _PIPELINE_URLS):
            batch = digests[start : start + _PIPELINE_URLS]
            now, g, g0 = self._now()
            extra = [*self._arguments(now, g, g0), "check", *self._tail()]
            commands: list[Command] = []
            groups = self._groups(batch)
            for block, _, data in groups:
                keys = self._keys(block, g0)
                commands.append(
                    ("EVALSHA", AGEING_BLOOM.sha, len(keys) + 1, *keys,
                     reply_key(keys[0], "unused"), self.layout.hashes, data, 1, *extra)
                )  # fmt: skip
            for (_, rows, _), reply in zip(groups, self._execute(commands), strict=True):
                out[start + rows] = _flags([reply])
        return out.tolist()

    def forget(self, item: str | bytes) -> bool:
        """Refused: :class:`~changewatch.errors.ForgetNotSupportedError` says why."""
        raise bloom_forget_error(f"Redis seen-set {self.key!r}")

    def forget_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """Refused: :class:`~changewatch.errors.ForgetNotSupportedError` says why."""
        raise bloom_forget_error(f"Redis seen-set {self.key!r}")

    def _block_figures(self, gens: list[int]) -> dict[int, list[tuple[int, list[float]]]]:
        """Per generation, per block: entries and each filter's fill."""
        blocks = range(self.layout.blocks)
        fields = [f for x in gens for f in (f"f:{x}", f"n:{x}")]
        hashes = self._execute([("HMGET", f"{self._block_prefixes[b]}:h", *fields) for b in blocks])
        width = self.layout.bits_per_block
        counts: list[Command] = []
        shape: list[tuple[int, int, int]] = []  # (generation, block, entries) per filter run
        for b, values in zip(blocks, hashes, strict=True):
            for i, x in enumerate(gens):
                filters, entries = int(values[2 * i] or 0), int(values[2 * i + 1] or 0)
                for s in range(filters):
                    key = f"{self._block_prefixes[b]}:g{x}"
                    counts.append(("BITCOUNT", key, s * width, (s + 1) * width - 1, "BIT"))
                shape.append((x, entries, filters))
        set_bits = iter(self._execute(counts) if counts else [])
        figures: dict[int, list[tuple[int, list[float]]]] = {x: [] for x in gens}
        for x, entries, filters in shape:
            figures[x].append((entries, [int(next(set_bits)) / width for _ in range(filters)]))
        return figures

    def stats(self) -> Mapping[str, Any]:
        now, g, _ = self._now()
        tops = self._execute([("HGET", f"{p}:h", "top") for p in self._block_prefixes])
        current = max([g, *(int(t) for t in tops if t is not None)])
        gens = list(range(self.ageing.oldest(current), current + 1))
        figures = self._block_figures(gens)
        k, blocks = self.layout.hashes, self.layout.blocks
        rows, per_block = [], [0.0] * blocks
        for x in gens:
            cells = figures[x]
            entries = sum(e for e, _ in cells)
            filters = [f for _, fills in cells for f in fills]
            if not entries and not filters:
                continue
            rates = [
                compound_error_rate(estimated_error(f, k) for f in fills) for _, fills in cells
            ]
            for b, rate in enumerate(rates):
                per_block[b] = 1 - (1 - per_block[b]) * (1 - rate)
            rows.append(
                generation_row(
                    self.ageing, x, now, entries,
                    filters=max(len(fills) for _, fills in cells),
                    bits=len(filters) * self.layout.bits_per_block,
                    fill=sum(filters) / len(filters) if filters else 0.0,
                    estimated_error_rate=sum(rates) / blocks,
                )
            )  # fmt: skip
        estimate = sum(per_block) / blocks
        grown = any(row["filters"] > 1 for row in rows)
        if grown and not self._warned:
            detail = f"capacity {self.capacity} per generation"
            self._warned = warn_if_overfull(repr(self.key), estimate, self.error_rate, detail)
        return {
            "kind": "redis-bloom",
            "key": self.key,
            "items": sum(row["entries"] for row in rows),
            "capacity": self.capacity,
            "bits": sum(row["bits"] for row in rows),
            "bytes": math.ceil(sum(row["bits"] for row in rows) / 8),
            "hashes": k,
            "blocks": blocks,
            "error_rate": self.error_rate,
            "estimated_error_rate": estimate,
            "ttl": None,
            "generations": rows,
            **self._ageing_stats(),
        }
