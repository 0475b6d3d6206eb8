"""Redis seen-sets, shared by every worker of a crawl: an exact set or a Bloom filter.

``redis://[[user]:password@]host:port/db?kind=set|bloom&key=NAME&…``, ``rediss://`` for TLS,
``redis+cluster://host:port?…`` for a Redis Cluster (any one node; no ``/db``). Options:

``kind=set`` (default)
    :class:`RedisSeenSet`: a Redis set of raw 16-byte digests at ``key``; exact.
``kind=bloom&capacity=N&error_rate=P[&blocks=B]``
    :class:`RedisBloomSeenSet`: a Bloom filter over ``B`` bitmap keys (layout below).
``key=NAME``
    the key prefix (default ``changewatch:seen``): one per crawl keeps crawls apart.
``ttl=SECONDS``
    every key of the seen-set expires ``SECONDS`` after the seen-set was created (its first
    add; ``EXPIRE … NX``), however busy it is since: the TTL bounds a crawl, or sets a recrawl
    cadence. The next add after expiry starts a new, empty window. Needs Redis ≥ 7.0.
``timeout=SECONDS``
    connect and read timeout of every command (default 5 s to connect, 10 s to read).
``max_age=DURATION&window=DURATION``
    ageing generations (:mod:`changewatch.seen.redis.generations`); not with ``ttl``, and the
    key may not contain braces.
``replay_s=DURATION``
    how long the server keeps each add's answers for a retry of it (default 300 s).

Check-and-set is one atomic server-side step: a Lua script per key (``EVALSHA``; loaded on
open and again after ``NOSCRIPT``) adds a whole chunk of digests and answers one byte per
digest, so two workers never both see the same URL as new, and a batch costs one round trip.
redis-py's own retries are switched off: the caller gets :class:`SeenSetUnavailableError`
(``retryable``) and decides. Each adding call runs under a token whose answers the server
keeps for ``replay_s`` (:mod:`changewatch.seen.redis.scripts`); the next add of any URL of a
call whose reply was lost sends it again under the same token, so the retry gets the answers
of the add that timed out instead of "seen".

Bloom layout (``key=K``): ``blocks`` bitmaps ``K:{TAG_b}`` of ``bits_per_block`` bits each and
a hash ``K:meta`` holding the parameters (:func:`bloom_block_layout`, :func:`block_tags`). A URL
lives in block ``h1 mod blocks`` and all of its ``k`` bits are in that block, so each URL
touches one key; the hash tags put the blocks into evenly spread cluster slots, so a cluster
shares the filter. ``K:meta`` carries no block's tag on purpose: the tags depend on ``blocks``,
and the meta hash must be found whatever parameters a client asks for. Opening a filter with
other parameters than the stored ones raises :class:`SeenSetError` naming them — never
silently wrong answers.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from changewatch.bloom import generation_error_rate
from changewatch.seen.ageing import Clock
from changewatch.seen.options import SeenURL
from changewatch.seen.redis.backends import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_KEY,
    DEFAULT_READ_TIMEOUT_S,
    DEFAULT_REPLAY_S,
    RedisSeenSet,
    _translated,
)
from changewatch.seen.redis.bloom import RedisBloomSeenSet
from changewatch.seen.redis.generations import RedisAgeingBloomSeenSet, RedisAgeingSeenSet
from changewatch.seen.redis.layout import (
    DEFAULT_BLOOM_CAPACITY,
    DEFAULT_BLOOM_ERROR_RATE,
    BlockLayout,
    block_positions,
    block_tags,
    bloom_block_layout,
)

SeenSets = RedisSeenSet | RedisBloomSeenSet | RedisAgeingSeenSet | RedisAgeingBloomSeenSet

__all__ = [
    "DEFAULT_BLOOM_CAPACITY",
    "DEFAULT_BLOOM_ERROR_RATE",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_KEY",
    "DEFAULT_READ_TIMEOUT_S",
    "DEFAULT_REPLAY_S",
    "BlockLayout",
    "RedisAgeingBloomSeenSet",
    "RedisAgeingSeenSet",
    "RedisBloomSeenSet",
    "RedisSeenSet",
    "block_positions",
    "block_tags",
    "bloom_block_layout",
    "open_redis_seen_set",
]

# --- opening from a URL -----------------------------------------------------------------


def open_redis_seen_set(parsed: SeenURL, *, clock: Clock | None = None) -> SeenSets:
    """Build a Redis seen-set from a parsed ``redis://``, ``rediss://`` or ``redis+cluster://``
    URL; :class:`~changewatch.errors.ConfigError` for a malformed one, before connecting."""
    kind = parsed.choice("kind", "set", ("set", "bloom"))
    key = parsed.text("key", DEFAULT_KEY)
    if not key:
        raise parsed.error("key= must not be empty")
    ttl = parsed.integer("ttl", None)
    timeout = parsed.seconds("timeout", 0.0) or None
    replay_s = parsed.duration("replay_s", DEFAULT_REPLAY_S)
    assert replay_s is not None
    ageing = parsed.ageing()
    if ageing is not None and ttl is not None:
        raise parsed.error("ttl= does not combine with max_age= (generations expire by themselves)")
    if ageing is not None and ("{" in key or "}" in key):
        raise parsed.error("an ageing seen-set's key must not contain { or } (it adds hash tags)")
    common: dict[str, Any] = {"key": key, "replay_s": replay_s}
    if kind == "set":
        extra = sorted({"capacity", "error_rate", "blocks"} & parsed.options.keys())
        if extra:
            raise parsed.error(f"{', '.join(extra)} only apply to kind=bloom")
        parsed.done()
        client, where, password = _connect(parsed, timeout)
        if ageing is not None:
            return RedisAgeingSeenSet(
                client, ageing=ageing, clock=clock, where=where, password=password, **common
            )
        return RedisSeenSet(client, ttl=ttl, where=where, password=password, **common)
    if "{" in key or "}" in key:
        raise parsed.error("a kind=bloom key must not contain { or } (it adds hash tags)")
    capacity = parsed.integer("capacity", DEFAULT_BLOOM_CAPACITY)
    assert capacity is not None
    error_rate = parsed.rate("error_rate", DEFAULT_BLOOM_ERROR_RATE)
    blocks = parsed.integer("blocks", None)
    parsed.done()
    rate = error_rate if ageing is None else generation_error_rate(error_rate, ageing.live)
    try:
        bloom_block_layout(capacity, rate, blocks)
    except ValueError as exc:
        raise parsed.error(str(exc)) from None
    client, where, password = _connect(parsed, timeout)
    bloom: dict[str, Any] = {"capacity": capacity, "error_rate": error_rate, "blocks": blocks}
    if ageing is not None:
        return RedisAgeingBloomSeenSet(
            client, ageing=ageing, clock=clock, where=where, password=password, **common, **bloom
        )
    return RedisBloomSeenSet(client, ttl=ttl, where=where, password=password, **common, **bloom)


def _connect(
    parsed: SeenURL, timeout: float | None
) -> tuple[redis.Redis | RedisCluster, str, str | None]:
    """The client (not yet connected, except a cluster's), ``host:port`` and the password."""
    parts = parsed.parts
    try:
        host, port = parts.hostname or "localhost", parts.port or 6379
    except ValueError as exc:
        raise parsed.error(f"bad port: {exc}") from None
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "username": username,
        "password": password,
        "socket_connect_timeout": timeout or DEFAULT_CONNECT_TIMEOUT_S,
        "socket_timeout": timeout or DEFAULT_READ_TIMEOUT_S,
        "retry": Retry(NoBackoff(), 0),
    }
    path = parts.path.strip("/")
    if parsed.scheme == "redis+cluster":
        if path not in ("", "0"):
            raise parsed.error("a Redis Cluster has no databases: drop the /db")
        with _translated(where, password):  # a cluster client connects on construction
            return RedisCluster(**options), where, password
    if path and not path.isdigit():
        raise parsed.error(f"database {path!r} is not a number (redis://host:port/DB)")
    client = redis.Redis(db=int(path or 0), ssl=parsed.scheme == "rediss", **options)
    return client, where, password
