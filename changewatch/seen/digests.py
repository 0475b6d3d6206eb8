"""Inputs of every seen-set: URLs or their 16-byte digests, checked before anything is added."""

from __future__ import annotations

from collections.abc import Iterable

from changewatch.urls import url_digest

__all__ = ["DIGEST_SIZE", "add_to_set", "check_digest", "set_contains", "to_digest", "to_digests"]

DIGEST_SIZE = 16


def check_digest(digest: object) -> None:
    """Refuse anything but a 16-byte URL digest."""
    if not isinstance(digest, bytes) or len(digest) != DIGEST_SIZE:
        raise TypeError(
            f"seen-sets hold URLs (str) or 16-byte URL digests, got {type(digest).__name__}"
            + (f" of {len(digest)} bytes" if isinstance(digest, bytes) else "")
        )


def to_digest(item: str | bytes) -> bytes:
    """A URL's digest (:func:`changewatch.urls.url_digest`), or a digest as it is.

    Raises ``InvalidURLError`` for a URL that cannot be canonicalised and ``TypeError`` for
    anything but ``str`` or 16 ``bytes``.
    """
    if isinstance(item, str):
        return url_digest(item)
    check_digest(item)
    return item


def to_digests(items: Iterable[str | bytes]) -> list[bytes]:
    """``to_digest`` for a batch: every item is checked before any is added."""
    return [to_digest(item) for item in items]


def add_to_set(found: set[bytes], batch: list[bytes]) -> list[bool]:
    """Add digests to an exact set; True for each one not there before (repeats: once)."""
    out = []
    for digest in batch:
        if digest in found:
            out.append(False)
        else:
            found.add(digest)
            out.append(True)
    return out


def set_contains(found: set[bytes], item: object) -> bool:
    """Membership of a URL (``str``, canonicalised) or a digest in an exact set."""
    if isinstance(item, str):
        item = to_digest(item)
    return item in found
