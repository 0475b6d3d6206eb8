"""Bloom filter seen-sets persisted to a file: fixed, scalable, or ageing in generations.

Saved as :mod:`changewatch.seen.file` saves (atomically, under the same lock and fork rules).

Bloom file: ``b"CWBLOOMS"``, format version (2 bytes), scalable flag (1), reserved (5),
configured capacity (8), configured error rate (8, IEEE double), number of sub-filters (4),
SHA-256 of the rest (32), then each sub-filter as a length-prefixed (8 bytes)
:meth:`changewatch.bloom.BloomFilter.to_bytes` image, which carries its own version, hash
scheme, m, k, capacity, error rate, item count and checksum.

An ageing Bloom file (``max_age=…``): ``b"CWBLOOMG"``, format version (2), reserved (6),
capacity per generation (8), configured error rate (8, double), max_age and window in seconds
(8 each, doubles), the newest generation written (8, signed; −2⁶³: none), the number of
generations (4), SHA-256 of the rest (32); then per generation its number (8, signed) and
its number of filters (4), followed by each filter as a length-prefixed image as above. Every
filter of the generations has ``capacity`` and the rate
:func:`changewatch.bloom.generation_error_rate` gives for ``error_rate`` over the live
generations.

A file that is truncated, corrupt (checksum), foreign, of another version, of the other kind
or made with other parameters raises :class:`~changewatch.errors.SeenSetError` naming the
problem — never an empty filter.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from changewatch.bloom import (
    DEFAULT_BLOOM_CAPACITY,
    DEFAULT_BLOOM_ERROR_RATE,
    BloomFilter,
    BloomGenerations,
    compound_error_rate,
)
from changewatch.errors import SeenSetError
from changewatch.seen.ageing import Ageing, Clock, system_clock
from changewatch.seen.digests import to_digest, to_digests
from changewatch.seen.file import (
    DEFAULT_CHECKPOINT_ITEMS,
    DEFAULT_CHECKPOINT_S,
    MAGIC,
    _FileSeenSet,
)
from changewatch.seen.generations import generation_row
from changewatch.seen.memory import bloom_forget_error, warn_if_overfull

__all__ = [
    "DEFAULT_BLOOM_CAPACITY",
    "DEFAULT_BLOOM_ERROR_RATE",
    "FileBloomSeenSet",
]

log = logging.getLogger("changewatch")

BLOOM_MAGIC = b"CWBLOOMS"
BLOOM_FORMAT_VERSION = 1
_BLOOM_HEADER = struct.Struct(">8sHB5sQdI32s")
BLOOM_GENERATIONS_MAGIC = b"CWBLOOMG"
_GENERATIONS_HEADER = struct.Struct(">8sH6sQdddqI32s")
_GENERATION = struct.Struct(">qI")  # generation number, filters in it
_LENGTH = struct.Struct(">Q")
_NO_TOP = -(2**63)

#: Scalable filters (Almeida et al., "Scalable Bloom Filters", 2007): each new sub-filter
#: has GROWTH times the capacity of the last and TIGHTENING times its error rate; sub-filter
#: i gets SCALABLE_MARGIN·p·(1−r)·rⁱ, so the compound rate stays under 0.9·p — the margin
#: absorbs the rounding of k and the noise of a fill-based estimate.
SCALABLE_MARGIN = 0.9
SCALABLE_GROWTH = 2
SCALABLE_TIGHTENING = 0.5


class FileBloomSeenSet(_FileSeenSet):
    """A Bloom filter seen-set persisted to ``path``: fixed capacity, or scalable.

    A fixed filter keeps answering past its capacity with a growing false-positive rate:
    ``stats()["estimated_error_rate"]`` reports it from the real fill, and a warning is
    logged once it exceeds ``error_rate``. A scalable one (``scalable=True``) starts a new,
    larger and tighter sub-filter whenever the last one is full, so the compound rate stays
    under ``error_rate``. An ageing one (``ageing=``) keeps one chain of equal filters per
    generation (:class:`~changewatch.bloom.BloomGenerations`): ``capacity`` is then the
    URLs of one window, ``error_rate`` the rate of all live generations together.
    """

    exact = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        capacity: int = DEFAULT_BLOOM_CAPACITY,
        error_rate: float = DEFAULT_BLOOM_ERROR_RATE,
        scalable: bool = False,
        checkpoint_items: int | None = DEFAULT_CHECKPOINT_ITEMS,
        checkpoint_s: float = DEFAULT_CHECKPOINT_S,
        ageing: Ageing | None = None,
        clock: Clock | None = None,
    ) -> None:
        if ageing is not None and scalable:
            raise ValueError("scalable and ageing do not combine: ageing generations grow")
        super().__init__(path, checkpoint_items, checkpoint_s)
        self.capacity = capacity
        self.error_rate = error_rate
        self.scalable = scalable
        self.ageing = ageing
        self._clock = clock or system_clock
        self._warned = False
        self._top: int | None = None
        self._generations: BloomGenerations | None = None
        self._filters: list[BloomFilter] = []
        try:
            data = self._read()
            if ageing is not None:
                self._generations = BloomGenerations(capacity, error_rate, ageing.live)
                if data is not None:
                    self._decode_generations(data, ageing)
            elif data is None:
                self._filters = [BloomFilter(capacity, self._sub_rate(0))]
            else:
                self._filters = self._decode(data)
        except BaseException:
            self._release_lock()
            raise

    def _current(self, generations: BloomGenerations, ageing: Ageing) -> tuple[int, int]:
        """The current and the oldest live generation; the expired ones dropped."""
        current = ageing.generation(self._clock())
        if self._top is not None:
            current = max(current, self._top)
        oldest = ageing.oldest(current)
        if any(g < oldest for g in generations.generations):
            generations.drop_before(oldest)
            self._unsaved += 1  # dropping a generation changes the file
        return current, oldest

    def _add_ageing(self, batch: list[bytes]) -> list[bool]:
        generations, ageing = self._generations, self.ageing
        assert generations is not None
        assert ageing is not None
        current, _ = self._current(generations, ageing)
        self._top = current
        before = sum(len(chain) for chain in generations.generations.values())
        out = generations.add_many(batch, current)
        grew = sum(len(chain) for chain in generations.generations.values()) > before
        if grew and not self._warned:
            self._warned = warn_if_overfull(
                str(self.path), generations.estimated_error_rate(), self.error_rate,
                f"{len(generations)} live entries, capacity {self.capacity} per generation",
            )  # fmt: skip
        return out

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
            if self._generations is not None:
                out = self._add_ageing(batch)
                self._added(sum(out))
                return out
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

    def forget(self, item: str | bytes) -> bool:
        """Refused: :class:`~changewatch.errors.ForgetNotSupportedError` says why."""
        raise bloom_forget_error(f"seen-set {self.path}")

    def forget_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """Refused: :class:`~changewatch.errors.ForgetNotSupportedError` says why."""
        raise bloom_forget_error(f"seen-set {self.path}")

    def __contains__(self, item: object) -> bool:
        self._check_owner()
        if isinstance(item, str):
            item = to_digest(item)
        if not isinstance(item, bytes) or len(item) != 16:
            return False
        with self._lock:
            if self._generations is not None:
                assert self.ageing is not None
                _, oldest = self._current(self._generations, self.ageing)
                return self._generations.contains_many([item], oldest)[0]
            return any(item in bloom for bloom in self._filters)

    def __len__(self) -> int:
        if self._generations is not None:
            return len(self._generations)
        return sum(bloom.items for bloom in self._filters)

    def estimated_error_rate(self) -> float:
        """The compound false-positive rate at the current fill: 1 − Π(1 − pᵢ)."""
        if self._generations is not None:
            return self._generations.estimated_error_rate()
        return compound_error_rate(b.estimated_error_rate() for b in self._filters)

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
        self._check_owner()
        if self._generations is not None:
            return self._ageing_stats(self._generations)
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

    def _ageing_stats(self, generations: BloomGenerations) -> dict[str, Any]:
        assert self.ageing is not None
        with self._lock:
            _, oldest = self._current(generations, self.ageing)
            now = self._clock()
            filters = generations.filters()
            rows = [
                generation_row(self.ageing, g, now, **generations.generation_figures(g))
                for g in sorted(generations.generations)
            ]
            return {
                "kind": "file-bloom",
                "path": str(self.path),
                "items": len(generations),
                "capacity": self.capacity,
                "bits": sum(f.bits for f in filters),
                "hashes": generations.hashes,
                "filters": len(filters),
                "bytes": sum(f.nbytes for f in filters) + _GENERATIONS_HEADER.size,
                "error_rate": self.error_rate,
                "estimated_error_rate": generations.estimated_error_rate(oldest),
                "unsaved": self._unsaved,
                "max_age_s": self.ageing.max_age_s,
                "window_s": self.ageing.window_s,
                "live_generations": self.ageing.live,
                "generations": rows,
            }

    def _image(self) -> bytes:
        if self._generations is not None:
            return self._generations_image(self._generations)
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

    def _generations_image(self, generations: BloomGenerations) -> bytes:
        assert self.ageing is not None
        parts = []
        for g, chain in sorted(generations.generations.items()):
            parts.append(_GENERATION.pack(g, len(chain)))
            parts.extend(_LENGTH.pack(len(i)) + i for i in (f.to_bytes() for f in chain))
        body = b"".join(parts)
        header = _GENERATIONS_HEADER.pack(
            BLOOM_GENERATIONS_MAGIC,
            BLOOM_FORMAT_VERSION,
            b"\0" * 6,
            self.capacity,
            self.error_rate,
            self.ageing.max_age_s,
            self.ageing.window_s,
            _NO_TOP if self._top is None else self._top,
            len(generations.generations),
            hashlib.sha256(body).digest(),
        )
        return header + body

    def _decode_generations(self, data: bytes, ageing: Ageing) -> None:
        """Read an ageing file into ``self._generations``; refuse any other kind of file."""
        name = str(self.path)
        generations = self._generations
        assert generations is not None
        if data[:8] != BLOOM_GENERATIONS_MAGIC:
            if data[:8] == BLOOM_MAGIC:
                raise SeenSetError(
                    f"{name} is a Bloom seen-set made without max_age (it never ages); open "
                    "it without max_age= and window=, or start a new file"
                )
            self._decode(data)  # names what the file is instead
            raise SeenSetError(f"{name} is not an ageing Bloom seen-set file")
        if len(data) < _GENERATIONS_HEADER.size:
            raise SeenSetError(f"{name} is truncated: {len(data)} bytes, shorter than its header")
        _, version, _, capacity, error_rate, max_age, window, top, count, checksum = (
            _GENERATIONS_HEADER.unpack_from(data)
        )
        if version != BLOOM_FORMAT_VERSION:
            raise SeenSetError(f"{name} has format version {version}; this changewatch reads 1")
        made = (capacity, error_rate, max_age, window)
        asked = (self.capacity, self.error_rate, ageing.max_age_s, ageing.window_s)
        if made != asked:
            raise SeenSetError(
                f"{name} was made with capacity={capacity}, error_rate={error_rate}, "
                f"max_age={max_age:g}s, window={window:g}s; it was opened with "
                f"capacity={self.capacity}, error_rate={self.error_rate}, {ageing.describe()}"
            )
        body = memoryview(data)[_GENERATIONS_HEADER.size :]
        if hashlib.sha256(body).digest() != checksum:
            raise SeenSetError(f"{name} is corrupt or truncated: its checksum does not match")
        offset = 0
        for _ in range(count):
            if offset + _GENERATION.size > len(body):
                raise SeenSetError(f"{name} is truncated in its generation table")
            g, filters = _GENERATION.unpack_from(body, offset)
            offset += _GENERATION.size
            chain = []
            for index in range(filters):
                bloom, offset = _read_filter(body, offset, f"{name} generation {g} filter {index}")
                if (bloom.capacity, bloom.error_rate) != (capacity, generations.filter_error_rate):
                    raise SeenSetError(f"{name}: generation {g} has a filter of other parameters")
                chain.append(bloom)
            if not chain:
                raise SeenSetError(f"{name}: generation {g} has no filter")
            generations.generations[g] = chain
        if offset != len(body):
            raise SeenSetError(f"{name} has {len(body) - offset} unexpected trailing bytes")
        self._top = None if top == _NO_TOP else top

    def _decode(self, data: bytes) -> list[BloomFilter]:
        name = str(self.path)
        if data[:8] == BLOOM_GENERATIONS_MAGIC:
            raise SeenSetError(
                f"{name} is an ageing Bloom seen-set (made with max_age); open it with the "
                "same max_age, window, capacity and error_rate"
            )
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


def _read_filter(body: memoryview, offset: int, name: str) -> tuple[BloomFilter, int]:
    """One length-prefixed filter image at ``offset``, and the offset after it."""
    if offset + _LENGTH.size > len(body):
        raise SeenSetError(f"{name} is truncated")
    (length,) = _LENGTH.unpack_from(body, offset)
    offset += _LENGTH.size
    if offset + length > len(body):
        raise SeenSetError(f"{name} is truncated")
    return BloomFilter.from_bytes(bytes(body[offset : offset + length]), name), offset + length
