"""The Redis Bloom filter seen-set (not ageing): bitmap blocks spread over cluster slots."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import redis
from redis.cluster import RedisCluster

from changewatch.bloom import estimated_error
from changewatch.errors import SeenSetError
from changewatch.seen.digests import to_digest, to_digests
from changewatch.seen.memory import bloom_forget_error
from changewatch.seen.redis.backends import (
    _PIPELINE_URLS,
    _SCRIPT_URLS,
    DEFAULT_KEY,
    DEFAULT_REPLAY_S,
    Command,
    _flags,
    _RedisBase,
    _text,
)
from changewatch.seen.redis.layout import (
    DEFAULT_BLOOM_CAPACITY,
    DEFAULT_BLOOM_ERROR_RATE,
    LAYOUT_VERSION,
    block_positions,
    block_tags,
    bloom_block_layout,
)
from changewatch.seen.redis.scripts import BLOOM_ADD, BLOOM_CHECK, META

__all__ = ["RedisBloomSeenSet"]

logger = logging.getLogger("changewatch")


class RedisBloomSeenSet(_RedisBase):
    """A Bloom filter over ``layout.blocks`` bitmap keys; each URL checked-and-set atomically.

    A batch is grouped by block, one script call per block (and per 2,000 digests), pipelined.
    ``stats()["items"]`` counts the adds answered "new" (``HINCRBY`` on the meta hash, sent
    with the next round trip): approximate, as a false positive is not counted.
    ``estimated_error_rate`` is computed from the real fill (``BITCOUNT``); once it passes
    ``error_rate`` a warning is logged, checked when the counter reaches the capacity and at
    every further tenth of it.
    """

    exact = False

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        *,
        key: str = DEFAULT_KEY,
        capacity: int = DEFAULT_BLOOM_CAPACITY,
        error_rate: float = DEFAULT_BLOOM_ERROR_RATE,
        blocks: int | None = None,
        ttl: int | None = None,
        where: str = "redis",
        password: str | None = None,
        replay_s: float = DEFAULT_REPLAY_S,
    ) -> None:
        super().__init__(
            client, key=key, ttl=ttl, where=where, password=password, replay_s=replay_s
        )
        self.capacity = capacity
        self.error_rate = error_rate
        self.meta_key = f"{key}:meta"
        self._lock = threading.Lock()
        self._pending_items = 0
        self._items = 0
        self._next_fill_check = capacity
        self._warned = False
        try:
            if "{" in key or "}" in key:
                raise SeenSetError(f"Bloom seen-set key {key!r} must not contain braces")
            try:
                self.layout = bloom_block_layout(capacity, error_rate, blocks)
            except ValueError as exc:
                raise SeenSetError(f"Redis Bloom seen-set {key!r}: {exc}") from None
            self.block_keys = [f"{key}:{{{tag}}}" for tag in block_tags(key, self.layout.blocks)]
            self._open()
        except BaseException:
            super().close()
            raise

    def _parameters(self) -> dict[str, str]:
        return {
            "layout": LAYOUT_VERSION,
            "blocks": str(self.layout.blocks),
            "bits_per_block": str(self.layout.bits_per_block),
            "hashes": str(self.layout.hashes),
            "capacity": str(self.capacity),
            "error_rate": repr(self.error_rate),
        }

    def _open(self) -> None:
        (held,) = self._execute([("TYPE", self.key)])
        if _text(held) != "none":
            raise SeenSetError(
                f"Redis key {self.key!r} at {self._where} holds a Redis {_text(held)} (a "
                "kind=set seen-set?); a kind=bloom seen-set cannot share its key"
            )
        self._load_scripts()
        wanted = self._parameters()
        pairs = [x for item in wanted.items() for x in item]
        (stored,) = self._execute([("EVALSHA", META.sha, 1, self.meta_key, self.ttl or 0, *pairs)])
        found = {_text(stored[i]): _text(stored[i + 1]) for i in range(0, len(stored), 2)}
        if "max_age" in found:
            raise SeenSetError(
                f"Redis Bloom seen-set {self.key!r} at {self._where} is an ageing one "
                f"(max_age={found['max_age']}s, window={found.get('window')}s): open it with "
                "the same max_age and window, or use another key"
            )
        mismatched = [name for name in wanted if found.get(name) != wanted[name]]
        if mismatched:
            theirs = ", ".join(f"{name}={found.get(name)}" for name in mismatched)
            ours = ", ".join(f"{name}={wanted[name]}" for name in mismatched)
            raise SeenSetError(
                f"Redis Bloom seen-set {self.key!r} at {self._where} was created with {theirs}; "
                f"this one asks for {ours}: open it with the same capacity, error_rate and "
                "blocks, or use another key"
            )
        self._items = int(found.get("items", 0))
        if self.ttl:  # create every block now, so that the whole filter shares one window
            self._execute(
                [("APPEND", key, b"") for key in self.block_keys] + self._expire(*self.block_keys)
            )

    def _by_block(self, digests: Sequence[bytes]) -> list[tuple[int, np.ndarray, bytes]]:
        """Digests grouped by block (2,000 a group): block, their indices, their positions."""
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

    def add(self, item: str | bytes) -> bool:
        return self.add_many([to_digest(item)])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)  # every item checked before any is added
        out = np.zeros(len(digests), dtype=bool)
        for start in range(0, len(digests), _PIPELINE_URLS):
            batch = digests[start : start + _PIPELINE_URLS]
            groups = self._by_block(batch)
            calls = [
                self._call(
                    BLOOM_ADD,
                    [self.block_keys[block]],
                    [self.layout.hashes, data, None],
                    [batch[i] for i in rows],
                )
                for block, rows, data in groups
            ]
            touched = sorted({self.block_keys[block] for block, _, _ in groups})
            counter = self._counter_commands()
            try:
                results = self._run(calls, counter + self._expire(*touched))
            except SeenSetError:
                self._restore_counter(counter)
                raise
            for (_, rows, _), reply in zip(groups, results, strict=False):
                out[start + rows] = _flags([reply])
            self._counted(results[len(calls)] if counter else None, int(out[start:].sum()))
        self._pay_owed(digests, out)
        return out.tolist()

    def forget(self, item: str | bytes) -> bool:
        """Refused: :class:`~changewatch.errors.ForgetNotSupportedError` says why."""
        raise bloom_forget_error(f"Redis seen-set {self.key!r}")

    def forget_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """Refused: :class:`~changewatch.errors.ForgetNotSupportedError` says why."""
        raise bloom_forget_error(f"Redis seen-set {self.key!r}")

    def contains_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)
        out = np.zeros(len(digests), dtype=bool)
        for start in range(0, len(digests), _PIPELINE_URLS):
            groups = self._by_block(digests[start : start + _PIPELINE_URLS])
            calls: list[Command] = [
                ("EVALSHA", BLOOM_CHECK.sha, 1, self.block_keys[b], self.layout.hashes, data)
                for b, _, data in groups
            ]
            for (_, rows, _), reply in zip(groups, self._execute(calls), strict=True):
                out[start + rows] = _flags([reply])
        return out.tolist()

    def _counter_commands(self) -> list[Command]:
        with self._lock:
            pending, self._pending_items = self._pending_items, 0
        if not pending:
            return []
        return [("HINCRBY", self.meta_key, "items", pending), *self._expire(self.meta_key)]

    def _restore_counter(self, counter: list[Command]) -> None:
        """Keep the items a failed round trip was to send for the next one."""
        if counter:
            with self._lock:
                self._pending_items += int(counter[0][3])

    def _counted(self, total: int | None, new: int) -> None:
        with self._lock:
            self._pending_items += new
            if total is not None:
                self._items = int(total)
            estimate = self._items + self._pending_items
            due = not self._warned and estimate >= self._next_fill_check
            if due:
                self._next_fill_check = estimate + max(1, self.capacity // 10)
        if due:
            self.estimated_error_rate()

    def _flush_counter(self) -> None:
        counter = self._counter_commands()
        if counter:
            self._counted(self._execute(counter)[0], 0)

    def fill(self) -> float:
        """Fraction of the filter's bits that are set (``BITCOUNT`` over every block)."""
        counts = self._execute([("BITCOUNT", key) for key in self.block_keys])
        return sum(int(c) for c in counts) / self.layout.bits

    def estimated_error_rate(self) -> float:
        """False-positive rate at the real fill, ``fill^k``; warns once past ``error_rate``."""
        estimate = estimated_error(self.fill(), self.layout.hashes)
        if estimate > self.error_rate and not self._warned:
            self._warned = True
            logger.warning(
                "Redis Bloom seen-set %r is overfull: its estimated false-positive rate %.3g is "
                "over the configured %.3g (capacity %d), so new URLs are being taken for seen",
                self.key,
                estimate,
                self.error_rate,
                self.capacity,
            )
        return estimate

    def stats(self) -> Mapping[str, Any]:
        counter = self._counter_commands() or [("HGET", self.meta_key, "items")]
        self._counted(int(self._execute(counter)[0] or 0), 0)
        estimate = self.estimated_error_rate()
        memory = self._execute([("MEMORY USAGE", k) for k in [*self.block_keys, self.meta_key]])
        return {
            "kind": "redis-bloom",
            "key": self.key,
            "items": self._items,
            "capacity": self.capacity,
            "bits": self.layout.bits,
            "bytes": self.layout.nbytes,
            "memory_usage": sum(int(m or 0) for m in memory),
            "hashes": self.layout.hashes,
            "blocks": self.layout.blocks,
            "error_rate": self.error_rate,
            "estimated_error_rate": estimate,
            "ttl": self.ttl,
            "replay_s": self.replay_s,
        }

    def close(self) -> None:
        """Send the pending items count (best effort), then close the connection pool."""
        if not self._closed:
            try:
                self._flush_counter()
            except SeenSetError as exc:
                logger.warning("Redis Bloom seen-set %r: items count not saved: %s", self.key, exc)
        super().close()
