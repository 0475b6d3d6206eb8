"""The Redis connection base (pipelines, replayed calls), the exact set, and the one place redis
errors are translated. The Bloom filter is in :mod:`changewatch.seen.redis.bloom`."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import redis
import redis.exceptions as rx
from redis.cluster import RedisCluster

from changewatch.errors import SeenSetError, SeenSetUnavailableError
from changewatch.redact import scrub
from changewatch.seen.digests import DIGEST_SIZE, to_digest, to_digests
from changewatch.seen.redis.scripts import (
    SCRIPTS,
    SET_ADD,
    SET_FORGET,
    Script,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_KEY",
    "DEFAULT_READ_TIMEOUT_S",
    "DEFAULT_REPLAY_S",
    "RedisSeenSet",
]

logger = logging.getLogger("changewatch")
DEFAULT_KEY = "changewatch:seen"
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_READ_TIMEOUT_S = 10.0
#: How long the server keeps each add's answers for a retry of it (``replay_s``): a retry
#: within this time gets the answers of a call whose reply was lost.
DEFAULT_REPLAY_S = 300.0
_SCRIPT_URLS = 2_000  # digests per script call (a few ms of server time each)
_PIPELINE_URLS = 50_000  # digests per pipeline round trip
#: Digests of calls with lost replies kept for replay, at most (the oldest calls go first).
MAX_LOST_DIGESTS = 1_000_000


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
        return scrub(message, [secret])

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


def reply_key(key: str, token: str) -> str:
    """Where a call on ``key`` keeps its answers: under ``key``, in ``key``'s cluster slot.

    ``key`` with a hash tag (``a:{t}``) → ``a:{t}:r:TOKEN``; without one, the whole key is
    its slot's tag → ``key:{key}:r:TOKEN``.

    >>> reply_key("crawl:{crawl:3}", "ab"), reply_key("crawl", "ab")
    ('crawl:{crawl:3}:r:ab', 'crawl:{crawl}:r:ab')
    """
    opening = key.find("{")
    if opening >= 0 and key.find("}", opening + 2) > opening:
        return f"{key}:r:{token}"
    return f"{key}:{{{key}}}:r:{token}"


@dataclass
class Call:
    """One replayable script call: its token, its command and the digests it answers."""

    token: str
    command: Command
    digests: list[bytes]


# --- the backends -----------------------------------------------------------------------


class _RedisBase:
    """Connection, error translation, pipelining and replay of lost replies, for every kind.

    An add whose reply is lost (``SeenSetUnavailableError``: a timeout or a cut connection,
    after the server may have run it) is remembered with its token. The next add of any of its
    digests sends it again first, under the same token: the server answers with the kept reply
    (or runs it, if it never did), and a digest that call found new is answered new by this
    add — once. At most :data:`MAX_LOST_DIGESTS` digests are remembered so.
    """

    exact = True

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        *,
        key: str,
        ttl: int | None,
        where: str,
        password: str | None,
        replay_s: float = DEFAULT_REPLAY_S,
    ) -> None:
        self._client = client
        self.key = key
        self.ttl = ttl
        self.replay_s = replay_s
        self._where = where
        self._password = password
        self._closed = False
        self._replay_lock = threading.Lock()
        self._lost: dict[str, Call] = {}
        self._lost_by_digest: dict[bytes, set[str]] = {}
        self._lost_digests = 0
        self._owed: set[bytes] = set()

    def _errors(self) -> AbstractContextManager[None]:
        return _translated(self._where, self._password)

    def _load_scripts(self) -> None:
        with self._errors():
            for script in SCRIPTS:
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

    # -- replayable calls ------------------------------------------------------------------

    def _call(
        self, script: Script, keys: Sequence[str], args: Sequence[Any], digests: list[bytes]
    ) -> Call:
        """A call of ``script`` over ``keys`` (the first names the slot) with a fresh token.

        The script takes its reply key last among its keys and ``args`` as its arguments, the
        reply lifetime (ms) placed where ``args`` holds ``None``.
        """
        token = os.urandom(8).hex()
        replay_s = min(self.replay_s, self.ttl) if self.ttl else self.replay_s
        reply_ms = max(1, round(replay_s * 1000))
        filled = [reply_ms if a is None else a for a in args]
        command = ("EVALSHA", script.sha, len(keys) + 1, *keys, reply_key(keys[0], token), *filled)
        return Call(token, command, digests)

    def _run(self, calls: list[Call], extra: Sequence[Command] = ()) -> list[Any]:
        """Run adding ``calls`` (then ``extra``), after replaying lost calls of their digests.

        Returns the replies of ``calls`` and ``extra``. On ``SeenSetUnavailableError`` the
        calls are remembered as lost (their replies may have been kept by the server).
        """
        replays = self._replays_for(d for call in calls for d in call.digests)
        commands = [c.command for c in replays] + [c.command for c in calls] + list(extra)
        try:
            results = self._execute(commands)
        except SeenSetUnavailableError:
            self._remember(calls)
            raise
        self._settle(replays, results[: len(replays)])
        return results[len(replays) :]

    def _replays_for(self, digests: Iterable[bytes]) -> list[Call]:
        with self._replay_lock:
            if not self._lost:
                return []
            tokens: set[str] = set()
            for digest in digests:
                tokens |= self._lost_by_digest.get(digest, set())
            return [self._lost[t] for t in self._lost if t in tokens]

    def _remember(self, calls: list[Call]) -> None:
        with self._replay_lock:
            for call in calls:
                self._lost[call.token] = call
                self._lost_digests += len(call.digests)
                for digest in call.digests:
                    self._lost_by_digest.setdefault(digest, set()).add(call.token)
            while self._lost_digests > MAX_LOST_DIGESTS and len(self._lost) > 1:
                oldest = next(iter(self._lost))
                self._drop_lost(oldest)
                logger.warning(
                    "Redis seen-set %r: too many adds with lost replies; the answers of the "
                    "oldest can no longer be replayed (their URLs may be answered seen)",
                    self.key,
                )

    def _drop_lost(self, token: str) -> Call:
        call = self._lost.pop(token)
        self._lost_digests -= len(call.digests)
        for digest in call.digests:
            tokens = self._lost_by_digest.get(digest)
            if tokens is not None:
                tokens.discard(token)
                if not tokens:
                    del self._lost_by_digest[digest]
        return call

    def _settle(self, replays: list[Call], replies: list[Any]) -> None:
        """Record what replayed calls answered new: owed to the caller, once each."""
        with self._replay_lock:
            for call, reply in zip(replays, replies, strict=True):
                if call.token in self._lost:
                    self._drop_lost(call.token)
                flags = _flags([reply])
                self._owed.update(d for d, new in zip(call.digests, flags, strict=True) if new)

    def _pay_owed(self, digests: Sequence[bytes], out: np.ndarray) -> None:
        """Answer new the first occurrence of each digest a replayed call found new."""
        with self._replay_lock:
            if not self._owed:
                return
            for index, digest in enumerate(digests):
                if digest in self._owed:
                    self._owed.discard(digest)
                    out[index] = True

    # -- the protocol ----------------------------------------------------------------------

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
        replay_s: float = DEFAULT_REPLAY_S,
    ) -> None:
        super().__init__(
            client, key=key, ttl=ttl, where=where, password=password, replay_s=replay_s
        )
        try:
            held, bloom_meta, ageing_meta = self._execute(
                [("TYPE", key), ("EXISTS", f"{key}:meta"), ("EXISTS", f"{key}:{{{key}}}:meta")]
            )
            if _text(held) not in ("none", "set") or bloom_meta or ageing_meta:
                what = (
                    "a kind=bloom seen-set"
                    if bloom_meta
                    else "an ageing seen-set (made with max_age)"
                    if ageing_meta
                    else f"a Redis {_text(held)}"
                )
                raise SeenSetError(f"Redis key {key!r} at {where} holds {what}, not a set")
            self._load_scripts()
        except BaseException:
            self.close()
            raise

    def add(self, item: str | bytes) -> bool:
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        digests = to_digests(items)  # every item checked before any is added
        answers: list[bytes] = []
        for start in range(0, len(digests), _PIPELINE_URLS):
            batch = digests[start : start + _PIPELINE_URLS]
            calls = [
                self._call(SET_ADD, [self.key], [b"".join(chunk), None], chunk)
                for chunk in (
                    batch[i : i + _SCRIPT_URLS] for i in range(0, len(batch), _SCRIPT_URLS)
                )
            ]
            answers += self._run(calls, self._expire(self.key))[: len(calls)]
        out = _flags(answers)
        self._pay_owed(digests, out)
        return out.tolist()  # type: ignore[no-any-return]

    def forget(self, item: str | bytes) -> bool:
        """Remove a URL or digest; True when it was there (the next add answers new)."""
        return self.forget_many([item])[0]

    def forget_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """``forget`` for several, one script call per 2,000 (atomic per call)."""
        digests = to_digests(items)
        calls: list[Command] = [
            ("EVALSHA", SET_FORGET.sha, 1, self.key, b"".join(digests[i : i + _SCRIPT_URLS]))
            for i in range(0, len(digests), _SCRIPT_URLS)
        ]
        return _flags(self._execute(calls)).tolist() if calls else []

    def members(self) -> set[bytes]:
        """Every digest in the set (``SSCAN``; meant for small sets, such as a retry set)."""
        with self._errors():
            return {bytes(d) for d in self._client.sscan_iter(self.key, count=1000)}

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
            "replay_s": self.replay_s,
        }
