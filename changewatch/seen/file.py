"""An exact seen-set persisted to a file, saved atomically.

File format (all integers big-endian)::

    offset  size  field
    0       8     magic  b"CWSEEN\\r\\n"
    8       2     format version (1)
    10      1     kind (1 = exact set of 16-byte blake2b URL digests)
    11      5     reserved, zero
    16      8     number of digests n
    24      32    SHA-256 of the body
    56      16·n  body: the digests, sorted

A file that is truncated, corrupt (checksum), of another format or version raises
:class:`~changewatch.errors.SeenSetError` naming the problem; it is never read as an empty
set. Saves write a temporary file beside the target, ``fsync`` it, rename it over the target
and ``fsync`` the directory, so a crash leaves the old or the new file. One process at a time
may hold a file open (an exclusive ``flock`` on ``PATH.lock``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from changewatch.errors import SeenSetError
from changewatch.seen.digests import DIGEST_SIZE, check_digest

__all__ = ["DEFAULT_CHECKPOINT_ITEMS", "FileExactSeenSet"]

MAGIC = b"CWSEEN\r\n"
FORMAT_VERSION = 1
KIND_EXACT = 1
_HEADER = struct.Struct(">8sHB5sQ32s")

#: Additions between automatic saves.
DEFAULT_CHECKPOINT_ITEMS = 10_000


class FileExactSeenSet:
    """Exact seen-set kept in memory and persisted to ``path``. Thread-safe."""

    def __init__(
        self, path: str | os.PathLike[str], *, checkpoint_items: int = DEFAULT_CHECKPOINT_ITEMS
    ) -> None:
        self.path = Path(path)
        self._checkpoint_items = checkpoint_items
        self._lock = threading.Lock()
        self._unsaved = 0
        self._closed = False
        self._lock_file = self._acquire_lock()
        try:
            self._items = self._load()
        except BaseException:
            self._release_lock()
            raise

    def _acquire_lock(self) -> int:
        lock_path = f"{self.path}.lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SeenSetError(f"cannot open lock file {lock_path}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SeenSetError(
                f"seen-set file {self.path} is already open in another process "
                "(one writer at a time; use a redis:// seen-set to share one across workers)"
            ) from None
        return fd

    def _release_lock(self) -> None:
        fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        os.close(self._lock_file)

    def _load(self) -> set[bytes]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return set()
        except OSError as exc:
            raise SeenSetError(f"cannot read seen-set file {self.path}: {exc.strerror}") from exc
        return set(decode(data, str(self.path)))

    def add(self, digest: bytes) -> bool:
        check_digest(digest)
        with self._lock:
            self._check_open()
            if digest in self._items:
                return False
            self._items.add(digest)
            self._added(1)
            return True

    def add_many(self, digests: Iterable[bytes]) -> list[bool]:
        # Check the whole batch first: a bad digest must not leave half the batch added
        # (and, in a file, added in memory but never counted for saving).
        batch = list(digests)
        for digest in batch:
            check_digest(digest)
        out = []
        with self._lock:
            self._check_open()
            items = self._items
            for digest in batch:
                if digest in items:
                    out.append(False)
                else:
                    items.add(digest)
                    out.append(True)
            self._added(sum(out))
        return out

    def __contains__(self, digest: object) -> bool:
        return digest in self._items

    def __len__(self) -> int:
        return len(self._items)

    def _check_open(self) -> None:
        if self._closed:
            raise SeenSetError(f"seen-set {self.path} is closed")

    def _added(self, count: int) -> None:
        self._unsaved += count
        if self._unsaved >= self._checkpoint_items:
            self._save()

    def save(self) -> None:
        """Write the set to its file now (atomically)."""
        with self._lock:
            self._check_open()
            self._save()

    def _save(self) -> None:
        data = encode(self._items)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise SeenSetError(
                f"cannot save seen-set file {self.path}: {exc.strerror}; the previous file "
                "is intact"
            ) from exc
        self._unsaved = 0

    def stats(self) -> Mapping[str, Any]:
        n = len(self._items)
        return {
            "kind": "file-exact",
            "path": str(self.path),
            "items": n,
            "capacity": None,
            "bytes": _HEADER.size + n * DIGEST_SIZE,
            "error_rate": 0.0,
            "estimated_error_rate": 0.0,
            "unsaved": self._unsaved,
        }

    def close(self) -> None:
        """Save and release the file; later calls do nothing."""
        with self._lock:
            if self._closed:
                return
            try:
                if self._unsaved or not self.path.exists():
                    self._save()
            finally:
                self._closed = True
                self._release_lock()


def encode(items: Iterable[bytes]) -> bytes:
    """The file image of a set of digests."""
    body = b"".join(sorted(items))
    header = _HEADER.pack(
        MAGIC,
        FORMAT_VERSION,
        KIND_EXACT,
        b"\0" * 5,
        len(body) // DIGEST_SIZE,
        hashlib.sha256(body).digest(),
    )
    return header + body


def decode(data: bytes, name: str) -> list[bytes]:
    """The digests in a file image; :class:`SeenSetError` naming any problem."""
    if len(data) < _HEADER.size:
        if not data.startswith(MAGIC[: len(data)]) or not data:
            raise SeenSetError(
                f"{name} is not a changewatch seen-set file"
                + (" (it is empty)" if not data else "")
            )
        raise SeenSetError(f"{name} is truncated: {len(data)} bytes, shorter than its header")
    magic, version, kind, _reserved, count, checksum = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise SeenSetError(f"{name} is not a changewatch seen-set file (bad magic bytes)")
    if version != FORMAT_VERSION:
        raise SeenSetError(
            f"{name} has format version {version}; this changewatch reads version {FORMAT_VERSION}"
        )
    if kind != KIND_EXACT:
        raise SeenSetError(f"{name} holds seen-set kind {kind}, not an exact set")
    body = memoryview(data)[_HEADER.size :]
    expected = count * DIGEST_SIZE
    if len(body) < expected:
        raise SeenSetError(f"{name} is truncated: {len(body)} of {expected} body bytes")
    if len(body) > expected:
        raise SeenSetError(f"{name} has {len(body) - expected} unexpected trailing bytes")
    if hashlib.sha256(body).digest() != checksum:
        raise SeenSetError(f"{name} is corrupt: its checksum does not match")
    raw = bytes(body)
    return [raw[i : i + DIGEST_SIZE] for i in range(0, expected, DIGEST_SIZE)]
