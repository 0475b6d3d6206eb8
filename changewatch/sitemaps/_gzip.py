"""Incremental gzip inflation for the sitemap parser: bounded output per call, members chained."""

from __future__ import annotations

import zlib
from typing import Final

__all__ = ["GZIP_MAGIC", "Inflater"]

#: RFC 1952 §2.3.1: ID1 ID2.
GZIP_MAGIC: Final = b"\x1f\x8b"


class Inflater:
    """Incremental gzip inflation that never produces more than asked for per call.

    Handles multi-member files (RFC 1952 §2.2) and ignores bytes after the last member, as
    gzip(1) does. Callers push small pieces, so the held input stays small.
    """

    def __init__(self) -> None:
        self._member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._pending = b""
        self._more = False
        #: Compressed bytes zlib has used so far (for the ratio check).
        self.consumed = 0

    @property
    def complete(self) -> bool:
        """The last member ended cleanly and nothing is left over."""
        return self._member.eof and not self._pending

    def push(self, data: bytes) -> None:
        self._pending += data

    def pull(self, most: int) -> bytes:
        """Up to ``most`` inflated bytes (``b""`` when it needs more input); raises zlib.error."""
        while self._pending or self._more:
            if self._member.eof:
                if not GZIP_MAGIC.startswith(self._pending[:2]):
                    self.consumed += len(self._pending)
                    self._pending = b""
                    return b""
                if len(self._pending) < 2:
                    return b""
                self._member = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = self._pending
            out = self._member.decompress(data, most)
            rest = self._member.unused_data if self._member.eof else self._member.unconsumed_tail
            self.consumed += len(data) - len(rest)
            self._pending = rest
            self._more = len(out) == most and not self._member.eof
            if out:
                return out
            if len(rest) == len(data) and not self._member.eof:
                return b""
        return b""
