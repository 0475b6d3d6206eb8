"""The Redis seen-set classes, their Lua scripts, and the one place redis errors are translated."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import redis
import redis.exceptions as rx
from redis.cluster import RedisCluster

from changewatch.bloom import estimated_error
from changewatch.errors import SeenSetError, SeenSetUnavailableError
from changewatch.seen.digests import DIGEST_SIZE, to_digest, to_digests
from changewatch.seen.redis.layout import (
    DEFAULT_BLOOM_CAPACITY,
    DEFAULT_BLOOM_ERROR_RATE,
    LAYOUT_VERSION,
    block_positions,
    block_tags,
    bloom_block_layout,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_KEY",
    "DEFAULT_READ_TIMEOUT_S",
    "RedisBloomSeenSet",
    "RedisSeenSet",
]

logger = logging.getLogger("changewatch")
DEFAULT_KEY = "changewatch:seen"
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_READ_TIMEOUT_S = 10.0
_SCRIPT_URLS = 2_000  # digests per script call (a few ms of server time each)
_PIPELINE_URLS = 50_000  # digests per pipeline round trip
_NEW = ord("1")


# --- server-side scripts ----------------------------------------------------------------


class _Script:
    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()


# KEYS[1]: a set. ARGV[1]: 16-byte digests back to back. One byte per digest: "1" if new.
_SET_ADD = _Script("""
local key, data, out = KEYS[1], ARGV[1], {}
for u = 1, #data / 16 do
  local at = (u - 1) * 16
  out[u] = redis.call('SADD', key, string.sub(data, at + 1, at + 16))
end
return table.concat(out)
""")

# KEYS[1]: one block. ARGV[1]: k; ARGV[2]: k big-endian uint32 bit positions per digest.
# Sets every digest's bits in order; "1" for a digest one of whose bits was still 0 (new).
_BLOOM_ADD = _Script("""
local key, k, data = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local fmt, args, out, at = '>' .. string.rep('I4', k), {}, {}, 1
for i = 1, k do args[4 * i - 3] = 'SET'; args[4 * i - 2] = 'u1'; args[4 * i] = 1 end
for u = 1, #data / (4 * k) do
  local values = {struct.unpack(fmt, data, at)}
  at = values[k + 1]
  for i = 1, k do args[4 * i - 1] = values[i] end
  local old, new = redis.call('BITFIELD', key, unpack(args)), '0'
  for i = 1, k do if old[i] == 0 then new = '1'; break end end
  out[u] = new
end
return table.concat(out)
""")

# As _BLOOM_ADD, reading only: "1" for a digest whose bits are all set (maybe present).
_BLOOM_CHECK = _Script("""
local key, k, data = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local fmt, args, out, at = '>' .. string.rep('I4', k), {}, {}, 1
for i = 1, k do args[3 * i - 2] = 'GET'; args[3 * i - 1] = 'u1' end
for u = 1, #data / (4 * k) do
  local values = {struct.unpack(fmt, data, at)}
  at = values[k + 1]
  for i = 1, k do args[3 * i] = values[i] end
  local bits, found = redis.call('BITFIELD_RO', key, unpack(args)), '1'
  for i = 1, k do if bits[i] == 0 then found = '0'; break end end
  out[u] = found
end
return table.concat(out)
""")

# KEYS[1]: the meta hash. ARGV[1]: ttl (0: none); then field, value pairs, written only when
# the hash holds no layout yet (the first opener wins, atomically). Returns what is stored.
_BLOOM_META = _Script("""
local meta, ttl = KEYS[1], tonumber(ARGV[1])
if redis.call('HEXISTS', meta, 'layout') == 0 then
  redis.call('HSET', meta, unpack(ARGV, 2))
end
if ttl > 0 then redis.call('EXPIRE', meta, ttl, 'NX') end
return redis.call('HGETALL', meta)
""")

_SCRIPTS = (_SET_ADD, _BLOOM_ADD, _BLOOM_CHECK, _BLOOM_META)

_UNAVAILABLE = (
    rx.ConnectionError,  # BusyLoadingError is one
    rx.TimeoutError,
    rx.ClusterError,  # ClusterDownError, MasterDownError
    rx.TryAgainError,
)

Command = tuple[Any, ...]


@contextmanager
def _translated(where: str, secret: str | None = None) -> Iterator[None]:
    """Turn redis-py's exceptions into ours (``from exc``): the one place that catches them.

    Unreachable, timed out, loading or a cluster in failover → :class:`SeenSetUnavailableError`
    (retryable); anything else → :class:`SeenSetError`. Messages name ``host:port``, never the
    password.
    """

    def text(exc: BaseException) -> str:
        message = f"{type(exc).__name__}: {exc}"
        return message.replace(secret, "***") if secret else message

    try:
        yield
    except rx.AuthenticationError as exc:
        raise SeenSetError(
            f"Redis seen-set at {where}: authentication failed: {text(exc)}"
        ) from exc
    except _UNAVAILABLE as exc:
        raise SeenSetUnavailableError(
            f"Redis seen-set at {where} is unavailable: {text(exc)}"
        ) from exc
    except rx.RedisClusterException as exc:  # not a RedisError; wraps a failed connect
        if isinstance(exc.__cause__, _UNAVAILABLE):
            raise SeenSetUnavailableError(
                f"Redis seen-set at {where} is unavailable: {text(exc)}"
            ) from exc
        raise SeenSetError(f"Redis seen-set at {where}: {text(exc)}") from exc
    except rx.RedisError as exc:
        raise SeenSetError(f"Redis seen-set at {where}: {text(exc)}") from exc


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _flags(answers: Iterable[bytes]) -> np.ndarray:
    """The scripts' answers, one ``b"0"``/``b"1"`` byte per digest, as booleans."""
    flags: np.ndarray = np.frombuffer(b"".join(answers), dtype=np.uint8) == ord("1")
    return flags


# --- the backends -----------------------------------------------------------------------


class _RedisBase:
    """Connection, error translation and pipelining shared by both kinds."""

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        *,
        key: str,
        ttl: int | None,
        where: str,
        password: str | None,
    ) -> None:
        self._client = client
        self.key = key
        self.ttl = ttl
        self._where = where
        self._password = password
        self._closed = False

    def _errors(self) -> AbstractContextManager[None]:
        return _translated(self._where, self._password)

    def _load_scripts(self) -> None:
        with self._errors():
            for script in _SCRIPTS:
                self._client.script_load(script.source)

    def _execute(self, commands: Sequence[Command]) -> list[Any]:
        """Run ``commands`` in one non-transactional pipeline; ``EVALSHA`` survives ``NOSCRIPT``.

        A script refused with ``NOSCRIPT`` (a restarted or failed-over server) did not run: the
        scripts are loaded again and the refused calls rerun, with the idempotent ``EXPIRE`` calls.
        """
        with self._errors():
            results = self._pipeline(commands)
            missing = [i for i, r in enumerate(results) if isinstance(r, rx.NoScriptError)]
            if missing:
                self._load_scripts()
                redo = missing + [i for i, c in enumerate(commands) if c[0] == "EXPIRE"]
                rerun = self._pipeline([commands[i] for i in redo])
                for i, result in zip(redo, rerun, strict=True):
                    results[i] = result
            for result in results:
                if isinstance(result, Exception):
                    raise result
            return results

    def _pipeline(self, commands: Sequence[Command]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        return list(pipe.execute(raise_on_error=False))

    def _expire(self, *keys: str) -> list[Command]:
        return [("EXPIRE", key, self.ttl, "NX") for key in keys] if self.ttl else []

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            item = to_digest(item)
        if not isinstance(item, bytes) or len(item) != DIGEST_SIZE:
            return False
        return self.contains_many([item])[0]

    def contains_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """``item in self`` for a batch, pipelined."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        if not self._closed:
            self._closed = True
            self._client.close()


class RedisSeenSet(_RedisBase):
    """Exact: a Redis set of 16-byte digests at ``key``, shared by every worker.

    Batches run as one script call per 2,000 digests (each ``SADD``s them in order and answers
    one byte each), pipelined: atomic per call, and a repeat is new only the first time.
    """

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        *,
        key: str = DEFAULT_KEY,
        ttl: int | None = None,
        where: str = "redis",
        password: str | None = None,
    ) -> None:
        super().__init__(client, key=key, ttl=ttl, where=where, password=password)
        try:
            held, bloom_meta = self._execute([("TYPE", key), ("EXISTS", f"{key}:meta")])
            if _text(held) not in ("none", "set") or bloom_meta:
                what = "a kind=bloom seen-set" if bloom_meta else f"a Redis {_text(held)}"
                raise SeenSetError(f"Redis key {key!r} at {where} holds {what}, not a set")
            self._load_scripts()
        except BaseException:
            self.close()
            raise

    def add(self, item: str | bytes) -> bool:
        added, *_ = self._execute([("SADD", self.key, to_digest(item)), *self._expire(self.key)])
        return bool(added)

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)  # every item checked before any is added
        answers: list[bytes] = []
        for start in range(0, len(digests), _PIPELINE_URLS):
            batch = digests[start : start + _PIPELINE_URLS]
            calls: list[Command] = [
                ("EVALSHA", _SET_ADD.sha, 1, self.key, b"".join(batch[i : i + _SCRIPT_URLS]))
                for i in range(0, len(batch), _SCRIPT_URLS)
            ]
            answers += self._execute(calls + self._expire(self.key))[: len(calls)]
        return _flags(answers).tolist()  # type: ignore[no-any-return]

    def contains_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)
        found: list[int] = []
        for start in range(0, len(digests), _PIPELINE_URLS):
            batch = digests[start : start + _PIPELINE_URLS]
            (answer,) = self._execute([("SMISMEMBER", self.key, *batch)]) if batch else ([],)
            found += answer
        return [bool(x) for x in found]

    def stats(self) -> Mapping[str, Any]:
        items, memory, ttl = self._execute(
            [("SCARD", self.key), ("MEMORY USAGE", self.key), ("TTL", self.key)]
        )
        return {
            "kind": "redis-set",
            "key": self.key,
            "items": int(items),
            "capacity": None,
            "bits": None,
            "bytes": int(memory or 0),
            "error_rate": 0.0,
            "estimated_error_rate": 0.0,
            "ttl": self.ttl,
            "ttl_remaining": int(ttl) if int(ttl) >= 0 else None,
        }


class RedisBloomSeenSet(_RedisBase):
    """A Bloom filter over ``layout.blocks`` bitmap keys; each URL checked-and-set atomically.

    A batch is grouped by block, one script call per block (and per 2,000 digests), pipelined.
    ``stats()["items"]`` counts the adds answered "new" (``HINCRBY`` on the meta hash, sent
    with the next round trip): approximate, as a false positive is not counted.
    ``estimated_error_rate`` is computed from the real fill (``BITCOUNT``); once it passes
    ``error_rate`` a warning is logged, checked when the counter reaches the capacity and at
    every further tenth of it.
    """

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
    ) -> None:
        super().__init__(client, key=key, ttl=ttl, where=where, password=password)
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
        (stored,) = self._execute(
            [("EVALSHA", _BLOOM_META.sha, 1, self.meta_key, self.ttl or 0, *pairs)]
        )
        found = {_text(stored[i]): _text(stored[i + 1]) for i in range(0, len(stored), 2)}
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

    def _calls(self, script: _Script, digests: Sequence[bytes]) -> tuple[list[Command], np.ndarray]:
        """One call of ``script`` per block (and per 2,000 digests), and the digests' order."""
        blocks, bits = block_positions(digests, self.layout)
        order = np.argsort(blocks, kind="stable")  # a repeat stays after its first occurrence
        bounds = np.searchsorted(blocks[order], np.arange(self.layout.blocks + 1))
        calls: list[Command] = []
        for block in range(self.layout.blocks):
            rows = order[bounds[block] : bounds[block + 1]]
            for i in range(0, rows.size, _SCRIPT_URLS):
                data = bits[rows[i : i + _SCRIPT_URLS]].astype(">u4").tobytes()
                calls.append(
                    ("EVALSHA", script.sha, 1, self.block_keys[block], self.layout.hashes, data)
                )
        return calls, order

    def add(self, item: str | bytes) -> bool:
        return self.add_many([to_digest(item)])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)  # every item checked before any is added
        out = np.zeros(len(digests), dtype=bool)
        for start in range(0, len(digests), _PIPELINE_URLS):
            batch = digests[start : start + _PIPELINE_URLS]
            calls, order = self._calls(_BLOOM_ADD, batch)
            touched = sorted({_text(call[3]) for call in calls})
            counter = self._counter_commands()
            results = self._execute(calls + counter + self._expire(*touched))
            new = _flags(results[: len(calls)])
            out[start + order] = new
            self._counted(results[len(calls)] if counter else None, int(new.sum()))
        return out.tolist()

    def contains_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)
        out = np.zeros(len(digests), dtype=bool)
        for start in range(0, len(digests), _PIPELINE_URLS):
            calls, order = self._calls(_BLOOM_CHECK, digests[start : start + _PIPELINE_URLS])
            out[start + order] = _flags(self._execute(calls))
        return out.tolist()

    def _counter_commands(self) -> list[Command]:
        with self._lock:
            pending, self._pending_items = self._pending_items, 0
        if not pending:
            return []
        return [("HINCRBY", self.meta_key, "items", pending), *self._expire(self.meta_key)]

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
        }

    def close(self) -> None:
        """Send the pending items count (best effort), then close the connection pool."""
        if not self._closed:
            try:
                self._flush_counter()
            except SeenSetError as exc:
                logger.warning("Redis Bloom seen-set %r: items count not saved: %s", self.key, exc)
        super().close()
