"""Seen-sets persisted to a file: an exact set, and Bloom filters (fixed or scalable).

Both keep the set in memory and save it atomically — a temporary file beside the target,
``fsync``, rename over the target, ``fsync`` of the directory — on ``close()``, on
``save()``, every ``checkpoint_s`` seconds while additions arrive (default 30) and, if
``checkpoint_items`` is given, every that many additions, so a crash at any moment leaves the old
or the new file, never a broken one. One process at a time may hold a file open (an
exclusive ``flock`` on ``PATH.lock``); a second is refused with a clear error.

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

Bloom file: ``b"CWBLOOMS"``, format version (2 bytes), scalable flag (1), reserved (5),
configured capacity (8), configured error rate (8, IEEE double), number of sub-filters (4),
SHA-256 of the rest (32), then each sub-filter as a length-prefixed (8 bytes)
:meth:`changewatch.bloom.BloomFilter.to_bytes` image, which carries its own version, hash
scheme, m, k, capacity, error rate, item count and checksum.

A file that is truncated, corrupt (checksum), foreign, of another version or of the other
kind raises :class:`~changewatch.errors.SeenSetError` naming the problem — never an empty set.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import math
import os
import struct
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from changewatch.bloom import BloomFilter
from changewatch.errors import SeenSetError
from changewatch.seen.digests import (
    DIGEST_SIZE,
    add_to_set,
    set_contains,
    to_digest,
    to_digests,
)

__all__ = [
    "DEFAULT_BLOOM_CAPACITY",
    "DEFAULT_BLOOM_ERROR_RATE",
    "DEFAULT_CHECKPOINT_ITEMS",
    "DEFAULT_CHECKPOINT_S",
    "FileBloomSeenSet",
    "FileExactSeenSet",
]

log = logging.getLogger("changewatch")

MAGIC = b"CWSEEN\r\n"
FORMAT_VERSION = 1
KIND_EXACT = 1
_HEADER = struct.Struct(">8sHB5sQ32s")

BLOOM_MAGIC = b"CWBLOOMS"
BLOOM_FORMAT_VERSION = 1
_BLOOM_HEADER = struct.Struct(">8sHB5sQdI32s")
_LENGTH = struct.Struct(">Q")

#: Seconds between automatic saves while additions arrive. A time interval rather than a
#: count, because a save rewrites the whole file: 18 MB for a 10M-URL filter at p = 0.001.
DEFAULT_CHECKPOINT_S = 30.0
#: Additions between automatic saves (off unless given).
DEFAULT_CHECKPOINT_ITEMS: int | None = None
#: Capacity and error rate of a ``file:…?kind=bloom`` filter when the URL names none.
DEFAULT_BLOOM_CAPACITY = 1_000_000
DEFAULT_BLOOM_ERROR_RATE = 0.001
#: Scalable filters (Almeida et al., "Scalable Bloom Filters", 2007): each new sub-filter
#: has GROWTH times the capacity of the last and TIGHTENING times its error rate; sub-filter
#: i gets SCALABLE_MARGIN·p·(1−r)·rⁱ, so the compound rate stays under 0.9·p — the margin
#: absorbs the rounding of k and the noise of a fill-based estimate.
SCALABLE_MARGIN = 0.9
SCALABLE_GROWTH = 2
SCALABLE_TIGHTENING = 0.5


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
    """Exact seen-set kept in memory and persisted to ``path``. Thread-safe."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        checkpoint_items: int | None = DEFAULT_CHECKPOINT_ITEMS,
        checkpoint_s: float = DEFAULT_CHECKPOINT_S,
    ) -> None:
        super().__init__(path, checkpoint_items, checkpoint_s)
        try:
            data = self._read()
            self._items = set() if data is None else set(decode(data, str(self.path)))
        except BaseException:
            self._release_lock()
            raise

    def add(self, item: str | bytes) -> bool:
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        batch = to_digests(items)  # every item checked before any is added
        with self._lock:
            self._check_open()
            out = add_to_set(self._items, batch)
            self._added(sum(out))
        return out

    def __contains__(self, item: object) -> bool:
        self._check_owner()
        return set_contains(self._items, item)

    def __len__(self) -> int:
        return len(self._items)

    def _image(self) -> bytes:
        return encode(self._items)

    def stats(self) -> Mapping[str, Any]:
        n = len(self._items)
        return {
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


class FileBloomSeenSet(_FileSeenSet):
    """A Bloom filter seen-set persisted to ``path``: fixed capacity, or scalable.

    A fixed filter keeps answering past its capacity with a growing false-positive rate:
    ``stats()["estimated_error_rate"]`` reports it from the real fill, and a warning is
    logged once it exceeds ``error_rate``. A scalable one (``scalable=True``) starts a new,
    larger and tighter sub-filter whenever the last one is full, so the compound rate stays
    under ``error_rate``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        capacity: int = DEFAULT_BLOOM_CAPACITY,
        error_rate: float = DEFAULT_BLOOM_ERROR_RATE,
        scalable: bool = False,
        checkpoint_items: int | None = DEFAULT_CHECKPOINT_ITEMS,
        checkpoint_s: float = DEFAULT_CHECKPOINT_S,
    ) -> None:
        super().__init__(path, checkpoint_items, checkpoint_s)
        self.capacity = capacity
        self.error_rate = error_rate
        self.scalable = scalable
        self._warned = False
        try:
            data = self._read()
            if data is None:
                self._filters = [BloomFilter(capacity, self._sub_rate(0))]
            else:
                self._filters = self._decode(data)
        except BaseException:
            self._release_lock()
            raise

    def _sub_rate(self, index: int) -> float:
        if not self.scalable:
            return self.error_rate
        return (
            SCALABLE_MARGIN
            * self.error_rate
            * (1 - SCALABLE_TIGHTENING)
            * SCALABLE_TIGHTENING**index
        )

    def _grow(self) -> BloomFilter:
        index = len(self._filters)
        bloom = BloomFilter(self.capacity * SCALABLE_GROWTH**index, self._sub_rate(index))
        self._filters.append(bloom)
        return bloom

    def add(self, item: str | bytes) -> bool:
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        batch = to_digests(items)  # every item checked before any is added
        with self._lock:
            self._check_open()
            out = [False] * len(batch)
            pending = list(range(len(batch)))
            checked = 0  # sub-filters before this index have been checked for every pending
            while pending:
                current = len(self._filters) - 1
                for older in self._filters[checked:current]:
                    hits = older.contains_many([batch[i] for i in pending])
                    pending = [i for i, hit in zip(pending, hits, strict=True) if not hit]
                checked = current
                bloom = self._filters[current]
                room = len(pending)
                if self.scalable:
                    room = max(1, min(room, bloom.capacity - bloom.items))
                chunk, pending = pending[:room], pending[room:]
                answers = bloom.add_many([batch[i] for i in chunk])
                for index, new in zip(chunk, answers, strict=True):
                    out[index] = new
                if self.scalable and bloom.items >= bloom.capacity:
                    self._grow()
            added = sum(out)
            self._added(added)
        if added and not self._warned:
            self._warn_if_overfull()
        return out

    def __contains__(self, item: object) -> bool:
        self._check_owner()
        if isinstance(item, str):
            item = to_digest(item)
        return any(item in bloom for bloom in self._filters)

    def __len__(self) -> int:
        return sum(bloom.items for bloom in self._filters)

    def estimated_error_rate(self) -> float:
        """The compound false-positive rate at the current fill: 1 − Π(1 − pᵢ)."""
        # -expm1(Σ log1p(-pᵢ)) keeps tiny rates from rounding to zero.
        return -math.expm1(sum(math.log1p(-b.estimated_error_rate()) for b in self._filters))

    def _warn_if_overfull(self) -> None:
        # Past capacity only: at capacity the fill-based estimate wobbles around p itself.
        if not self.scalable and len(self) <= self.capacity:
            return
        estimated = self.estimated_error_rate()
        if estimated > self.error_rate:
            self._warned = True
            log.warning(
                "seen-set %s is over capacity: estimated false-positive rate %.4g exceeds the "
                "configured %.4g (%d items for a capacity of %d); URLs will be wrongly skipped "
                "— use a larger capacity or scalable=1",
                self.path,
                estimated,
                self.error_rate,
                len(self),
                self.capacity,
            )

    def stats(self) -> Mapping[str, Any]:
        return {
            "kind": "file-bloom-scalable" if self.scalable else "file-bloom",
            "path": str(self.path),
            "items": len(self),
            "capacity": None if self.scalable else self.capacity,
            "bits": sum(bloom.bits for bloom in self._filters),
            "hashes": [bloom.hashes for bloom in self._filters],
            "filters": len(self._filters),
            "bytes": sum(bloom.nbytes for bloom in self._filters) + _BLOOM_HEADER.size,
            "error_rate": self.error_rate,
            "estimated_error_rate": self.estimated_error_rate(),
            "unsaved": self._unsaved,
        }

    def _image(self) -> bytes:
        body = b"".join(
            _LENGTH.pack(len(image)) + image for image in (b.to_bytes() for b in self._filters)
        )
        header = _BLOOM_HEADER.pack(
            BLOOM_MAGIC,
            BLOOM_FORMAT_VERSION,
            int(self.scalable),
            b"\0" * 5,
            self.capacity,
            self.error_rate,
            len(self._filters),
            hashlib.sha256(body).digest(),
        )
        return header + body

    def _decode(self, data: bytes) -> list[BloomFilter]:
        name = str(self.path)
        if len(data) < _BLOOM_HEADER.size:
            if not data or not BLOOM_MAGIC.startswith(data[: len(BLOOM_MAGIC)]):
                raise SeenSetError(
                    f"{name} is not a changewatch Bloom seen-set file"
                    + (" (it is empty)" if not data else "")
                )
            raise SeenSetError(f"{name} is truncated: {len(data)} bytes, shorter than its header")
        magic, version, scalable, _, capacity, error_rate, count, checksum = (
            _BLOOM_HEADER.unpack_from(data)
        )
        if magic != BLOOM_MAGIC:
            kind = "an exact seen-set file" if magic == MAGIC else "not a changewatch Bloom file"
            raise SeenSetError(f"{name} is {kind} (bad magic bytes for kind=bloom)")
        if version != BLOOM_FORMAT_VERSION:
            raise SeenSetError(
                f"{name} has format version {version}; this changewatch reads "
                f"version {BLOOM_FORMAT_VERSION}"
            )
        if (bool(scalable), capacity, error_rate) != (
            self.scalable,
            self.capacity,
            self.error_rate,
        ):
            raise SeenSetError(
                f"{name} was made with capacity={capacity}, error_rate={error_rate}, "
                f"scalable={int(scalable)}; it was opened with capacity={self.capacity}, "
                f"error_rate={self.error_rate}, scalable={int(self.scalable)}"
            )
        body = memoryview(data)[_BLOOM_HEADER.size :]
        if hashlib.sha256(body).digest() != checksum:
            raise SeenSetError(f"{name} is corrupt or truncated: its checksum does not match")
        filters = []
        offset = 0
        for index in range(count):
            if offset + _LENGTH.size > len(body):
                raise SeenSetError(f"{name} is truncated in sub-filter {index}")
            (length,) = _LENGTH.unpack_from(body, offset)
            offset += _LENGTH.size
            if offset + length > len(body):
                raise SeenSetError(f"{name} is truncated in sub-filter {index}")
            bloom = BloomFilter.from_bytes(
                bytes(body[offset : offset + length]), f"{name} sub-filter {index}"
            )
            expected = self.capacity * (SCALABLE_GROWTH**index if self.scalable else 1)
            if (bloom.capacity, bloom.error_rate) != (expected, self._sub_rate(index)):
                raise SeenSetError(f"{name}: sub-filter {index} has unexpected parameters")
            filters.append(bloom)
            offset += length
        if offset != len(body) or not filters:
            raise SeenSetError(f"{name} has an inconsistent sub-filter table")
        return filters


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
        kind_name = "a Bloom seen-set file" if magic == BLOOM_MAGIC else "not a changewatch file"
        raise SeenSetError(f"{name} is {kind_name} (bad magic bytes for kind=exact)")
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
