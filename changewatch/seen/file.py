"""Seen-sets persisted to a file: the shared machinery, and the exact set.

The Bloom filters (:mod:`changewatch.seen.file_bloom`) and the exact set keep the set in
memory and save it atomically — a temporary file beside the target, ``fsync``, rename over
the target, ``fsync`` of the directory — on ``close()``, on ``save()``, every
``checkpoint_s`` seconds while additions arrive (default 30) and, if ``checkpoint_items`` is
given, every that many additions, so a crash at any moment leaves the old or the new file,
never a broken one. One process at a time may hold a file open (an exclusive ``flock`` on
``PATH.lock``); a second is refused with a clear error.

A path that is a symlink is resolved when the set is opened: the lock, the temporary file and
the rename are those of the file the link names, so the link stays a link and opening the
link and its target are refused alike. The lock belongs to the process that opened the set:
a child forked from it (``multiprocessing``'s fork start method, Scrapy or Celery workers)
inherits the object but may not use it — every operation there raises
:class:`~changewatch.errors.SeenSetError`, and its ``close()`` lets go of the inherited
descriptor without saving and without releasing the parent's lock. Open the seen-set in
the child, after the fork (one process at a time), or share one through ``redis://``.

Exact-set file (integers big-endian)::

    offset  size  field
    0       8     magic  b"CWSEEN\\r\\n"
    8       2     format version (1)
    10      1     kind (1 = exact set of 16-byte blake2b URL digests)
    11      5     reserved, zero
    16      8     number of digests n
    24      32    SHA-256 of the body
    56      16·n  body: the digests, sorted

An ageing exact set (``max_age=…``) is format version 2: magic, version (2), kind (1),
reserved (5), max_age and window in seconds (8 each, IEEE doubles), the newest generation
written (8, signed; −2⁶³: none), the number of generations (4), the SHA-256 of the body (32);
then per generation its number (8, signed), its count n (8) and its 16·n digests, sorted.
Opening a file with other ageing parameters than it was made with (or none) is refused.

A file that is truncated, corrupt (checksum), foreign, of another version or of the other
kind raises :class:`~changewatch.errors.SeenSetError` naming the problem — never an empty set.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from changewatch.errors import SeenSetError
from changewatch.seen.ageing import Ageing, Clock, system_clock
from changewatch.seen.digests import DIGEST_SIZE, to_digest, to_digests
from changewatch.seen.generations import ExactGenerations

__all__ = [
    "DEFAULT_CHECKPOINT_ITEMS",
    "DEFAULT_CHECKPOINT_S",
    "FileExactSeenSet",
    "decode",
    "decode_generations",
    "encode",
    "encode_generations",
]

MAGIC = b"CWSEEN\r\n"
FORMAT_VERSION = 1
AGEING_FORMAT_VERSION = 2
KIND_EXACT = 1
_HEADER = struct.Struct(">8sHB5sQ32s")
# Version 2: magic, version, kind, reserved, max_age, window, newest generation, generations.
_HEADER_V2 = struct.Struct(">8sHB5sddqI32s")
_GENERATION = struct.Struct(">qQ")  # generation number, digests in it
_NO_TOP = -(2**63)  # "no generation written yet"

BLOOM_MAGIC = b"CWBLOOMS"
BLOOM_GENERATIONS_MAGIC = b"CWBLOOMG"

#: Seconds between automatic saves while additions arrive. A time interval rather than a
#: count, because a save rewrites the whole file: 18 MB for a 10M-URL filter at p = 0.001.
DEFAULT_CHECKPOINT_S = 30.0
#: Additions between automatic saves (off unless given).
DEFAULT_CHECKPOINT_ITEMS: int | None = None


def _resolve(path: Path) -> Path:
    """The absolute path with every symlink followed (a missing file: where it will be)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        raise SeenSetError(f"cannot resolve seen-set path {path}: {exc}") from exc


class _FileSeenSet:
    """The lock, atomic saves and checkpoints shared by the file backends."""

    kind = "file"

    def __init__(
        self, path: str | os.PathLike[str], checkpoint_items: int | None, checkpoint_s: float
    ) -> None:
        self.path = _resolve(Path(path))
        self._owner_pid = os.getpid()
        self._checkpoint_items = checkpoint_items
        self._checkpoint_s = checkpoint_s
        self._last_save = time.monotonic()
        self._lock = threading.Lock()
        self._unsaved = 0
        self._closed = False
        self._lock_fd = self._acquire_lock()

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
                f"seen-set file {self.path} is already open for writing (by another process "
                "or another handle in this one); use a redis:// seen-set to share one"
            ) from None
        return fd

    def _release_lock(self) -> None:
        if os.getpid() == self._owner_pid:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        # In a forked child only the inherited descriptor goes: the parent's lock stays.
        os.close(self._lock_fd)

    def _check_owner(self) -> None:
        """Refuse a forked child: its copy of the set and of the lock are the parent's."""
        if os.getpid() != self._owner_pid:
            raise SeenSetError(
                f"seen-set file {self.path} was opened by process {self._owner_pid}; this "
                f"process ({os.getpid()}) is a fork of it and may not use it (its adds would "
                "be lost, and its saves would overwrite the parent's): open the seen-set in "
                "this process after the fork, or share one through a redis:// seen-set"
            )

    def _read(self) -> bytes | None:
        """The file's bytes, or None when it does not exist yet."""
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SeenSetError(f"cannot read seen-set file {self.path}: {exc.strerror}") from exc

    def _check_open(self) -> None:
        self._check_owner()
        if self._closed:
            raise SeenSetError(f"seen-set {self.path} is closed")

    def _added(self, count: int) -> None:
        self._unsaved += count
        if not self._unsaved:
            return
        if (self._checkpoint_items is not None and self._unsaved >= self._checkpoint_items) or (
            time.monotonic() - self._last_save >= self._checkpoint_s
        ):
            self._save()

    def _image(self) -> bytes:
        raise NotImplementedError

    def _save(self) -> None:
        data = self._image()
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
        self._last_save = time.monotonic()

    def save(self) -> None:
        """Write the set to its file now (atomically)."""
        with self._lock:
            self._check_open()
            self._save()

    def close(self) -> None:
        """Save and release the file; later calls do nothing.

        In a process forked from the one that opened it: only drop the inherited descriptor.
        """
        if os.getpid() != self._owner_pid:
            if not self._closed:
                self._closed = True
                os.close(self._lock_fd)
            return
        with self._lock:
            if self._closed:
                return
            try:
                if self._unsaved or not self.path.exists():
                    self._save()
            finally:
                self._closed = True
                self._release_lock()


class FileExactSeenSet(_FileSeenSet):
    """Exact seen-set kept in memory and persisted to ``path``. Thread-safe; may age."""

    exact = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        checkpoint_items: int | None = DEFAULT_CHECKPOINT_ITEMS,
        checkpoint_s: float = DEFAULT_CHECKPOINT_S,
        ageing: Ageing | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(path, checkpoint_items, checkpoint_s)
        self._clock = clock or system_clock
        self._generations = ExactGenerations(ageing)
        try:
            data = self._read()
            if data is not None:
                self._generations.load(*decode_generations(data, str(self.path), ageing))
        except BaseException:
            self._release_lock()
            raise

    @property
    def ageing(self) -> Ageing | None:
        """The ageing parameters, or None for a set that never forgets by itself."""
        return self._generations.ageing

    @property
    def _items(self) -> set[bytes]:
        """Every digest held (one set; a copy when ageing spreads them over generations)."""
        held = self._generations.generations
        if len(held) == 1:
            return next(iter(held.values()))
        return set().union(*held.values())

    def add(self, item: str | bytes) -> bool:
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        batch = to_digests(items)  # every item checked before any is added
        with self._lock:
            self._check_open()
            dropped = self._generations.expire(self._clock())
            out = self._generations.add_many(batch, self._clock())
            self._added(sum(out) + dropped)
        return out

    def forget(self, item: str | bytes) -> bool:
        """Remove a URL or digest; True when it was there (the next add answers new)."""
        return self.forget_many([item])[0]

    def forget_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """``forget`` for several; every item checked before any is removed; saved as adds are."""
        batch = to_digests(items)
        with self._lock:
            self._check_open()
            out = self._generations.forget_many(batch)
            self._added(sum(out))
        return out

    def members(self) -> set[bytes]:
        """Every digest held in a live generation (a copy)."""
        self._check_owner()
        with self._lock:
            self._generations.expire(self._clock())
            return set(self._items)

    def __contains__(self, item: object) -> bool:
        self._check_owner()
        if isinstance(item, str):
            item = to_digest(item)
        if not isinstance(item, bytes):
            return False
        with self._lock:
            return self._generations.contains(item, self._clock())

    def __len__(self) -> int:
        with self._lock:
            self._generations.expire(self._clock())
            return len(self._generations)

    def _image(self) -> bytes:
        ageing = self._generations.ageing
        if ageing is None:
            return encode(self._items)
        return encode_generations(ageing, self._generations.generations, self._generations.top)

    def stats(self) -> Mapping[str, Any]:
        self._check_owner()
        with self._lock:
            rows = self._generations.rows(self._clock())
        n = sum(row["entries"] for row in rows)
        stats: dict[str, Any] = {
            "kind": "file-exact",
            "path": str(self.path),
            "items": n,
            "capacity": None,
            "bits": None,
            "bytes": _HEADER.size + n * DIGEST_SIZE,
            "error_rate": 0.0,
            "estimated_error_rate": 0.0,
            "unsaved": self._unsaved,
        }
        ageing = self._generations.ageing
        if ageing is not None:
            stats.update(
                max_age_s=ageing.max_age_s,
                window_s=ageing.window_s,
                live_generations=ageing.live,
                generations=rows,
            )
        return stats


def encode(items: Iterable[bytes]) -> bytes:
    """The file image of a set of digests (format version 1: no generations)."""
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


def encode_generations(
    ageing: Ageing, generations: Mapping[int, set[bytes]], top: int | None
) -> bytes:
    """The file image of an ageing set (format version 2): each generation's digests, sorted."""
    body = b"".join(
        _GENERATION.pack(g, len(held)) + b"".join(sorted(held))
        for g, held in sorted(generations.items())
    )
    header = _HEADER_V2.pack(
        MAGIC,
        AGEING_FORMAT_VERSION,
        KIND_EXACT,
        b"\0" * 5,
        ageing.max_age_s,
        ageing.window_s,
        _NO_TOP if top is None else top,
        len(generations),
        hashlib.sha256(body).digest(),
    )
    return header + body


def decode_generations(
    data: bytes, name: str, ageing: Ageing | None
) -> tuple[dict[int, set[bytes]], int | None]:
    """The generations of a file image, checked against the ``ageing`` asked for."""
    version = _check_magic(data, name)
    if version == FORMAT_VERSION:
        if ageing is not None:
            raise SeenSetError(
                f"{name} was made without max_age (its entries never age); open it without "
                "max_age= and window=, or start a new file for an ageing seen-set"
            )
        return {0: set(decode(data, name))}, None
    if len(data) < _HEADER_V2.size:
        raise SeenSetError(f"{name} is truncated: {len(data)} bytes, shorter than its header")
    _, _, kind, _, max_age, window, top, count, checksum = _HEADER_V2.unpack_from(data)
    if kind != KIND_EXACT:
        raise SeenSetError(f"{name} holds seen-set kind {kind}, not an exact set")
    if ageing is None or (max_age, window) != (ageing.max_age_s, ageing.window_s):
        asked = "without max_age" if ageing is None else f"with {ageing.describe()}"
        raise SeenSetError(
            f"{name} has format version 2, an ageing seen-set made with max_age={max_age:g}s "
            f"window={window:g}s; it was opened {asked}: open it with the same max_age and "
            "window, or start a new file"
        )
    body = memoryview(data)[_HEADER_V2.size :]
    if hashlib.sha256(body).digest() != checksum:
        raise SeenSetError(f"{name} is corrupt or truncated: its checksum does not match")
    generations: dict[int, set[bytes]] = {}
    offset = 0
    for _ in range(count):
        if offset + _GENERATION.size > len(body):
            raise SeenSetError(f"{name} is truncated in its generation table")
        generation, n = _GENERATION.unpack_from(body, offset)
        offset += _GENERATION.size
        raw = bytes(body[offset : offset + n * DIGEST_SIZE])
        if len(raw) != n * DIGEST_SIZE:
            raise SeenSetError(f"{name} is truncated in generation {generation}")
        generations[generation] = {raw[i : i + DIGEST_SIZE] for i in range(0, len(raw), 16)}
        offset += len(raw)
    if offset != len(body):
        raise SeenSetError(f"{name} has {len(body) - offset} unexpected trailing bytes")
    return generations, None if top == _NO_TOP else top


def _check_magic(data: bytes, name: str) -> int:
    """The format version of an exact-set image whose magic bytes are right."""
    if len(data) < _HEADER.size:
        if not data.startswith(MAGIC[: len(data)]) or not data:
            raise SeenSetError(
                f"{name} is not a changewatch seen-set file"
                + (" (it is empty)" if not data else "")
            )
        raise SeenSetError(f"{name} is truncated: {len(data)} bytes, shorter than its header")
    magic, version = struct.unpack_from(">8sH", data)
    if magic != MAGIC:
        bloom = magic in (BLOOM_MAGIC, BLOOM_GENERATIONS_MAGIC)
        kind_name = "a Bloom seen-set file" if bloom else "not a changewatch file"
        raise SeenSetError(f"{name} is {kind_name} (bad magic bytes for kind=exact)")
    if version not in (FORMAT_VERSION, AGEING_FORMAT_VERSION):
        raise SeenSetError(
            f"{name} has format version {version}; this changewatch reads versions "
            f"{FORMAT_VERSION} and {AGEING_FORMAT_VERSION}"
        )
    return int(version)


def decode(data: bytes, name: str) -> list[bytes]:
    """The digests in a format-1 file image; :class:`SeenSetError` naming any problem."""
    if _check_magic(data, name) != FORMAT_VERSION:
        raise SeenSetError(f"{name} has format version 2 (an ageing seen-set)")
    _, _, kind, _reserved, count, checksum = _HEADER.unpack_from(data)
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
