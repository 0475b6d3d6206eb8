"""Shared checks for seen-set inputs."""

from __future__ import annotations

__all__ = ["DIGEST_SIZE", "check_digest"]

DIGEST_SIZE = 16


def check_digest(digest: object) -> None:
    """Refuse anything but a 16-byte URL digest (pass URLs through ``url_digest`` first)."""
    if not isinstance(digest, bytes) or len(digest) != DIGEST_SIZE:
        raise TypeError(
            f"seen-sets hold 16-byte URL digests, got {type(digest).__name__}"
            + (f" of {len(digest)} bytes" if isinstance(digest, bytes) else "")
        )
