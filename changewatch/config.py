"""Settings, and the only reader of ``os.environ`` in changewatch.

``CHANGEWATCH_DATABASE_URL``
    the snapshot store, ``sqlite:///PATH`` or ``postgresql+psycopg://…``;
    default ``sqlite:///changewatch.db`` (a file in the working directory)
``CHANGEWATCH_SEEN_URL``
    the seen-set, ``memory:`` or ``file:PATH``; default ``file:changewatch.seen``
``CHANGEWATCH_MINOR_DISTANCE``
    SimHash bits at or under which a change is ``minor``; default ``3``
``CHANGEWATCH_MAX_PAGE_BYTES``
    pages larger than this are refused before parsing; default ``10485760`` (10 MiB)
``CHANGEWATCH_URL_POLICY``
    what of a URL the store keeps: ``full``, ``no-query`` or ``none``; default ``full``
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast

from changewatch.errors import ConfigError

__all__ = [
    "DEFAULT_DATABASE_URL",
    "DEFAULT_MAX_PAGE_BYTES",
    "DEFAULT_MINOR_DISTANCE",
    "DEFAULT_SEEN_URL",
    "URL_POLICIES",
    "Settings",
    "UrlPolicy",
    "load_settings",
]

DEFAULT_DATABASE_URL = "sqlite:///changewatch.db"
DEFAULT_SEEN_URL = "file:changewatch.seen"
DEFAULT_MINOR_DISTANCE = 3
DEFAULT_MAX_PAGE_BYTES = 10 * 1024 * 1024
UrlPolicy = Literal["full", "no-query", "none"]
URL_POLICIES: tuple[UrlPolicy, ...] = ("full", "no-query", "none")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything changewatch reads from its environment, validated."""

    database_url: str = DEFAULT_DATABASE_URL
    seen_url: str = DEFAULT_SEEN_URL
    minor_distance: int = DEFAULT_MINOR_DISTANCE
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES
    url_policy: UrlPolicy = "full"

    def __post_init__(self) -> None:
        check_settings(self.minor_distance, self.max_page_bytes, self.url_policy)


def check_settings(minor_distance: int, max_page_bytes: int, url_policy: str) -> None:
    """Raise :class:`ConfigError` naming the first invalid setting."""
    if (
        isinstance(minor_distance, bool)
        or not isinstance(minor_distance, int)
        or not (0 <= minor_distance <= 64)
    ):
        raise ConfigError(f"minor_distance must be an integer from 0 to 64, got {minor_distance!r}")
    if (
        isinstance(max_page_bytes, bool)
        or not isinstance(max_page_bytes, int)
        or (max_page_bytes <= 0)
    ):
        raise ConfigError(f"max_page_bytes must be a positive integer, got {max_page_bytes!r}")
    if url_policy not in URL_POLICIES:
        raise ConfigError(
            f"url_policy must be one of {', '.join(URL_POLICIES)}, got {url_policy!r}"
        )


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read ``CHANGEWATCH_*`` variables (from ``os.environ`` unless given)."""
    env = os.environ if environ is None else environ
    return Settings(
        database_url=env.get("CHANGEWATCH_DATABASE_URL") or DEFAULT_DATABASE_URL,
        seen_url=env.get("CHANGEWATCH_SEEN_URL") or DEFAULT_SEEN_URL,
        minor_distance=_int(env, "CHANGEWATCH_MINOR_DISTANCE", DEFAULT_MINOR_DISTANCE),
        max_page_bytes=_int(env, "CHANGEWATCH_MAX_PAGE_BYTES", DEFAULT_MAX_PAGE_BYTES),
        url_policy=cast(UrlPolicy, env.get("CHANGEWATCH_URL_POLICY") or "full"),
    )


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        return int(raw.replace("_", ""))
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
