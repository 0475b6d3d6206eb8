"""URL seen-sets: "have we already queued this URL?", checked and set in one step.

Every backend implements :class:`SeenSet` over 16-byte URL digests
(:func:`changewatch.urls.url_digest`; a ``str`` given instead is canonicalised and digested).
:func:`open_seen_set` builds one from a URL:

``memory:`` (``kind=exact``)
    an exact in-process set (:class:`MemorySeenSet`);
``memory:?kind=bloom&capacity=N&error_rate=P``
    an in-process Bloom filter that grows by equal filters when full (:class:`MemoryBloomSeenSet`);
``file:PATH?kind=exact``
    an exact set persisted to ``PATH`` (:class:`FileExactSeenSet`);
``file:PATH?kind=bloom&capacity=N&error_rate=P[&scalable=1]``
    a Bloom filter persisted to ``PATH`` (:class:`FileBloomSeenSet`); ``scalable=1`` chains
    sub-filters past the capacity instead of letting the error rate grow;
``redis://host:port/db?kind=set|bloom&key=NAME&capacity=N&error_rate=P&ttl=SECONDS``
    shared by every worker (:mod:`changewatch.seen.redis`, needs the ``redis`` extra; also
    ``timeout``, ``blocks``, ``replay_s``);
``…?kind=route&exact_hosts=H1,.domain&…`` or ``…?kind=route&policy=PATH.toml``
    on any of them: listed hosts to an exact set, the rest to a Bloom filter
    (:mod:`changewatch.seen.routed`).

On every backend ``max_age=DURATION&window=DURATION`` (``7d``, ``12h``, ``90``…; ``window``
defaults to ``max_age / 4`` and must divide it) forgets each entry between ``max_age`` and
``max_age + window`` after it was added (:mod:`changewatch.seen.ageing`); "now" is
``open_seen_set(url, clock=…)``'s clock. File options: ``checkpoint_s=SECONDS`` saves at most
that long after an addition (default 30); ``checkpoint=N`` also saves every N additions; and
``close()`` always saves. Exact sets also ``forget(item)`` / ``forget_many(items)``; Bloom
filters raise :class:`~changewatch.errors.ForgetNotSupportedError` there. A malformed option
raises :class:`~changewatch.errors.ConfigError` naming it. docs/seen-sets.md has the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable
from urllib.parse import unquote

from changewatch.seen.ageing import Ageing, Clock
from changewatch.seen.file import (
    DEFAULT_CHECKPOINT_ITEMS,
    DEFAULT_CHECKPOINT_S,
    FileExactSeenSet,
)
from changewatch.seen.file_bloom import (
    DEFAULT_BLOOM_CAPACITY,
    DEFAULT_BLOOM_ERROR_RATE,
    FileBloomSeenSet,
)
from changewatch.seen.memory import (
    DEFAULT_MEMORY_BLOOM_CAPACITY,
    DEFAULT_MEMORY_BLOOM_ERROR_RATE,
    MemoryBloomSeenSet,
    MemorySeenSet,
)
from changewatch.seen.options import SeenURL
from changewatch.seen.routed import RoutedSeenSet, RoutePolicy, open_routed

_SCHEMES = ("memory", "file", "redis", "rediss", "redis+cluster")

__all__ = [
    "Ageing",
    "Clock",
    "FileBloomSeenSet",
    "FileExactSeenSet",
    "MemoryBloomSeenSet",
    "MemorySeenSet",
    "RoutePolicy",
    "RoutedSeenSet",
    "SeenSet",
    "check_seen_url",
    "open_seen_set",
]


@runtime_checkable
class SeenSet(Protocol):
    """A set of URL digests with an atomic check-and-set."""

    def add(self, item: str | bytes) -> bool:
        """Add a URL or digest; True when it was not there before (enqueue the URL)."""

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """Add several; one answer each, in order (a repeat within the batch is False)."""

    def __contains__(self, item: object) -> bool:
        """Whether a URL or digest was added (Bloom filters: maybe, never a false no)."""

    def stats(self) -> Mapping[str, Any]:
        """``kind``, ``capacity``, ``items``, ``bits``, ``bytes``, ``error_rate`` (configured)
        and ``estimated_error_rate`` (at the current fill), plus backend figures; an ageing
        set adds ``max_age_s``, ``window_s``, ``live_generations`` and ``generations``."""

    def close(self) -> None:
        """Persist (where the backend does) and release resources."""


def open_seen_set(url: str, *, clock: Clock | None = None) -> SeenSet:
    """Build a seen-set from its URL; :class:`~changewatch.errors.ConfigError` if malformed.

    ``clock`` (seconds since the epoch; default :func:`time.time`) is what an ageing seen-set
    reads "now" from.

    >>> open_seen_set("memory:").stats()["kind"]
    'memory-exact'
    """
    parsed = SeenURL(url)
    if parsed.options.get("kind") == "route" and parsed.scheme in _SCHEMES:
        return open_routed(parsed, clock, open_seen_set)
    if parsed.scheme == "memory":
        return _open_memory(parsed, clock)
    if parsed.scheme == "file":
        return _open_file(parsed, clock)
    if parsed.scheme in ("redis", "rediss", "redis+cluster"):
        try:
            from changewatch.seen.redis import open_redis_seen_set
        except ModuleNotFoundError as exc:  # the optional driver is not installed
            raise parsed.error(
                "redis:// seen-sets need the redis extra: pip install 'changewatch-crawl[redis]' "
                "(from a checkout: pip install -e '.[redis]')"
            ) from exc
        return open_redis_seen_set(parsed, clock=clock)
    raise parsed.error(f"unknown scheme {parsed.scheme!r} (expected memory:, file: or redis://)")


def check_seen_url(url: str) -> None:
    """:class:`~changewatch.errors.ConfigError` if ``url`` cannot name a seen-set: no or an
    unknown scheme, or a ``file:`` URL naming no file. Opens nothing (options are checked
    when the seen-set is opened).

    >>> check_seen_url("file:crawl.seen")
    >>> check_seen_url("bogus:thing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    changewatch.errors.ConfigError: seen-set URL 'bogus:thing': unknown scheme 'bogus' ...
    """
    parsed = SeenURL(url)
    if parsed.scheme not in _SCHEMES:
        raise parsed.error(
            f"unknown scheme {parsed.scheme!r} (expected memory:, file: or redis://)"
        )
    if parsed.scheme == "file":
        file_path(parsed)


def _open_memory(parsed: SeenURL, clock: Clock | None) -> SeenSet:
    kind = parsed.choice("kind", "exact", ("exact", "bloom"))
    ageing = parsed.ageing()
    if kind == "exact":
        parsed.done()
        return MemorySeenSet(ageing=ageing, clock=clock)
    capacity = parsed.integer("capacity", DEFAULT_MEMORY_BLOOM_CAPACITY)
    assert capacity is not None
    error_rate = parsed.rate("error_rate", DEFAULT_MEMORY_BLOOM_ERROR_RATE)
    parsed.done()
    return MemoryBloomSeenSet(capacity=capacity, error_rate=error_rate, ageing=ageing, clock=clock)


def file_path(parsed: SeenURL) -> str:
    """The path a ``file:`` URL names (``file:PATH`` or ``file://PATH``)."""
    rest = parsed.url.partition(":")[2]
    path = (
        unquote(parsed.parts.netloc + parsed.parts.path)
        if rest.startswith("//")
        else unquote(rest.partition("?")[0])
    )
    if not path:
        raise parsed.error("names no file")
    return path


def _open_file(parsed: SeenURL, clock: Clock | None) -> SeenSet:
    path = file_path(parsed)
    kind = parsed.choice("kind", "exact", ("exact", "bloom"))
    checkpoint = parsed.integer("checkpoint", DEFAULT_CHECKPOINT_ITEMS)
    checkpoint_s = parsed.seconds("checkpoint_s", DEFAULT_CHECKPOINT_S)
    ageing = parsed.ageing()
    if kind == "exact":
        parsed.done()
        return FileExactSeenSet(
            path, checkpoint_items=checkpoint, checkpoint_s=checkpoint_s, ageing=ageing, clock=clock
        )
    capacity = parsed.integer("capacity", DEFAULT_BLOOM_CAPACITY)
    assert capacity is not None
    error_rate = parsed.rate("error_rate", DEFAULT_BLOOM_ERROR_RATE)
    scalable = parsed.flag("scalable", False)
    if scalable and ageing is not None:
        raise parsed.error("scalable= does not combine with max_age= (ageing generations grow)")
    parsed.done()
    return FileBloomSeenSet(
        path,
        capacity=capacity,
        error_rate=error_rate,
        scalable=scalable,
        checkpoint_items=checkpoint,
        checkpoint_s=checkpoint_s,
        ageing=ageing,
        clock=clock,
    )
