"""URL seen-sets: "have we already queued this URL?", checked and set in one step.

Every backend implements :class:`SeenSet` over 16-byte URL digests
(:func:`changewatch.urls.url_digest`); :func:`open_seen_set` builds one from a URL:

``memory:``
    an exact in-process set of digests (:class:`MemorySeenSet`);
``file:PATH[?kind=exact]``
    an exact set persisted to ``PATH`` (:class:`FileExactSeenSet`), saved atomically on
    ``close()`` and every ``checkpoint=N`` additions (default 10,000).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, unquote, urlsplit

from changewatch.errors import ConfigError
from changewatch.seen.file import DEFAULT_CHECKPOINT_ITEMS, FileExactSeenSet
from changewatch.seen.memory import MemorySeenSet

__all__ = ["FileExactSeenSet", "MemorySeenSet", "SeenSet", "open_seen_set"]


@runtime_checkable
class SeenSet(Protocol):
    """A set of 16-byte URL digests with an atomic check-and-set."""

    def add(self, digest: bytes) -> bool:
        """Add a digest; True when it was not there before (enqueue the URL)."""

    def add_many(self, digests: Iterable[bytes]) -> list[bool]:
        """Add several digests; one answer each, in order (a repeat within the batch is False)."""

    def __contains__(self, digest: object) -> bool:
        """Whether a digest was added."""

    def stats(self) -> Mapping[str, Any]:
        """``kind``, ``items``, ``bytes`` and backend-specific figures."""

    def close(self) -> None:
        """Persist (where the backend does) and release resources."""


def open_seen_set(url: str) -> SeenSet:
    """Build a seen-set from its URL (``memory:`` or ``file:PATH?kind=exact``).

    >>> open_seen_set("memory:").stats()["kind"]
    'memory-exact'
    """
    if not isinstance(url, str) or ":" not in url:
        raise ConfigError(f"seen-set URL {url!r} has no scheme (expected memory: or file:)")
    scheme, _, rest = url.partition(":")
    scheme = scheme.lower()
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    kind = options.pop("kind", "exact")
    if scheme == "memory":
        _no_options(url, options)
        if kind != "exact":
            raise ConfigError(f"seen-set URL {url!r}: kind={kind!r} is not available in memory:")
        return MemorySeenSet()
    if scheme == "file":
        path = (
            unquote(parts.netloc + parts.path)
            if rest.startswith("//")
            else unquote(rest.partition("?")[0])
        )
        if not path:
            raise ConfigError(f"seen-set URL {url!r} names no file")
        if kind != "exact":
            raise ConfigError(
                f"seen-set URL {url!r}: kind={kind!r} is not supported "
                "(this version has kind=exact)"
            )
        checkpoint = _int_option(url, options, "checkpoint", DEFAULT_CHECKPOINT_ITEMS)
        _no_options(url, options)
        return FileExactSeenSet(path, checkpoint_items=checkpoint)
    raise ConfigError(
        f"seen-set URL {url!r}: unknown scheme {scheme!r} (expected memory: or file:)"
    )


def _int_option(url: str, options: dict[str, str], name: str, default: int) -> int:
    raw = options.pop(name, None)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"seen-set URL {url!r}: {name}={raw!r} is not an integer") from None
    if value <= 0:
        raise ConfigError(f"seen-set URL {url!r}: {name} must be positive")
    return value


def _no_options(url: str, options: dict[str, str]) -> None:
    if options:
        raise ConfigError(f"seen-set URL {url!r}: unknown option(s) {', '.join(sorted(options))}")
