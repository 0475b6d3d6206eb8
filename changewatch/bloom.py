"""Bloom filters over 16-byte URL digests — sizing maths, the bit array, its file format.

Pure code: values in, values out; no files, no clocks (the seen-set adapters do the I/O).

The maths first (Bloom 1970; Broder & Mitzenmacher, "Network applications of Bloom
filters", 2004):

* bits for ``n`` items at false-positive rate ``p``: ``m = ⌈−n·ln p / (ln 2)²⌉``;
* hash functions: ``k = round((m / n)·ln 2)`` (at least 1);
* false-positive rate after ``n`` insertions: ``(1 − e^(−k·n/m))^k``;
* estimated from the real fill (fraction ``f`` of bits set): ``f^k``;
* several filters queried together (generations, sub-filters) answer "maybe" wrongly at
  ``1 − Π(1 − pᵢ)``; ``L`` equal filters compound to ``P`` when each has
  ``p = 1 − (1 − P)^(1/L)`` (about ``P/L``).

Bit positions come from the digest itself — it already is a uniform blake2b-128 hash — by
Kirsch–Mitzenmacher double hashing ("Less hashing, same performance", 2006):
``position_i = (h1 + i·h2) mod m`` with ``h1``, ``h2`` the digest's two big-endian 64-bit
halves (``h2`` forced odd). Never Python's ``hash()``, which is salted per process.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from changewatch.errors import SeenSetError

__all__ = [
    "DEFAULT_BLOOM_CAPACITY",
    "DEFAULT_BLOOM_ERROR_RATE",
    "BloomFilter",
    "BloomGenerations",
    "actual_error",
    "bloom_size",
    "compound_error_rate",
    "estimated_error",
    "generation_error_rate",
    "positions",
]

#: Capacity and error rate of a Bloom seen-set whose URL names none (file, memory or Redis).
DEFAULT_BLOOM_CAPACITY = 1_000_000
DEFAULT_BLOOM_ERROR_RATE = 0.001

_LN2_SQUARED = math.log(2) ** 2
_MASK64 = (1 << 64) - 1


def bloom_size(n: int, p: float) -> tuple[int, int, int]:
    """Bits, hash functions and bytes for ``n`` items at false-positive rate ``p``.

    ``m = ⌈−n·ln p / (ln 2)²⌉``, ``k = round((m/n)·ln 2)``, bytes ``= ⌈m/8⌉``.

    >>> bloom_size(1_000_000, 0.01)
    (9585059, 7, 1198133)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"capacity must be a positive integer, got {n!r}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"error rate must be between 0 and 1 (exclusive), got {p!r}")
    bits = math.ceil(-n * math.log(p) / _LN2_SQUARED)
    hashes = max(1, round(bits / n * math.log(2)))
    return bits, hashes, (bits + 7) // 8


def actual_error(bits: int, hashes: int, n: int) -> float:
    """Expected false-positive rate after ``n`` insertions: ``(1 − e^(−k·n/m))^k``.

    >>> round(actual_error(9585059, 7, 1_000_000), 4)
    0.01
    """
    if n <= 0:
        return 0.0
    return float((1.0 - math.exp(-hashes * n / bits)) ** hashes)


def estimated_error(fill: float, hashes: int) -> float:
    """False-positive rate estimated from the fraction of bits set: ``fill^k``.

    >>> estimated_error(0.5, 7)
    0.0078125
    """
    return float(fill**hashes)


def compound_error_rate(rates: Iterable[float]) -> float:
    """False-positive rate of filters queried together: ``1 − Π(1 − pᵢ)``.

    Computed as ``−expm1(Σ log1p(−pᵢ))``, so tiny rates do not round to zero.

    >>> round(compound_error_rate([0.001] * 4), 7)
    0.003994
    """
    return max(0.0, -math.expm1(sum(math.log1p(-min(p, 1.0 - 1e-16)) for p in rates)))


def generation_error_rate(total: float, live: int) -> float:
    """Each filter's rate so that ``live`` full filters compound to ``total``.

    ``p = 1 − (1 − P)^(1/L)``.

    >>> round(generation_error_rate(0.001, 4), 9)
    0.000250094
    >>> round(compound_error_rate([generation_error_rate(0.01, 5)] * 5), 12)
    0.01
    """
    if not 0.0 < total < 1.0:
        raise ValueError(f"error rate must be between 0 and 1 (exclusive), got {total!r}")
    if live < 1:
        raise ValueError(f"live generations must be at least 1, got {live!r}")
    return -math.expm1(math.log1p(-total) / live)


def positions(digest: bytes, bits: int, hashes: int) -> list[int]:
    """The ``hashes`` bit positions of one 16-byte digest (Kirsch–Mitzenmacher).

    >>> positions(bytes(range(16)), 1000, 3)
    [183, 750, 317]
    """
    h1 = int.from_bytes(digest[:8], "big")
    h2 = int.from_bytes(digest[8:16], "big") | 1
    return [((h1 + i * h2) & _MASK64) % bits for i in range(hashes)]


def _positions_many(digests: np.ndarray, bits: int, hashes: int) -> np.ndarray:
    """Positions for an (n, 16) uint8 array of digests: an (n, k) uint64 array."""
    halves = digests.view(">u8").astype(np.uint64)  # (n, 2), big-endian halves
    h1 = halves[:, 0:1]
    h2 = halves[:, 1:2] | np.uint64(1)
    steps = np.arange(hashes, dtype=np.uint64)[np.newaxis, :]
    with np.errstate(over="ignore"):
        combined = h1 + steps * h2  # wraps modulo 2**64, like the scalar version
    # combined % bits, as a floor division: numpy divides by a scalar with libdivide, ~2× faster
    # than its uint64 remainder.
    modulus = np.uint64(bits)
    return combined - (combined // modulus) * modulus


def _has_repeats(data: np.ndarray) -> bool:
    """Whether an (n, 16) digest array may hold a digest twice (equal first halves)."""
    first = np.sort(data[:, :8].copy().view(">u8").ravel())
    return bool((first[1:] == first[:-1]).any())


# File image: magic, format version, hash scheme, m, k, capacity, error rate, items, checksum.
_MAGIC = b"CWBLOOM\n"
_FORMAT_VERSION = 1
_HASH_SCHEME = 1  # 1 = Kirsch–Mitzenmacher over the blake2b-128 URL digest, big-endian halves
_HEADER = struct.Struct(">8sHHQIQdQ32s")


class BloomFilter:
    """A fixed-size Bloom filter over 16-byte digests, in a numpy bit array."""

    def __init__(self, capacity: int, error_rate: float) -> None:
        self.bits, self.hashes, nbytes = bloom_size(capacity, error_rate)
        self.capacity = capacity
        self.error_rate = error_rate
        self.items = 0
        self.array = np.zeros(nbytes, dtype=np.uint8)

    # -- membership -------------------------------------------------------------------

    def add(self, digest: bytes) -> bool:
        """Set the digest's bits; True when at least one was unset (the digest is new)."""
        return self._set_positions(positions(digest, self.bits, self.hashes))

    def _locate(self, digests: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n, 16) digests, and the (n, k) byte indices and bit masks of their positions."""
        data = np.frombuffer(b"".join(digests), dtype=np.uint8)
        if data.size != 16 * len(digests):
            raise ValueError("every digest must be 16 bytes")
        data = data.reshape(-1, 16)
        pos = _positions_many(data, self.bits, self.hashes)
        byte_index = (pos >> np.uint64(3)).astype(np.intp)
        masks = np.left_shift(np.uint8(1), (pos & np.uint64(7)).astype(np.uint8))
        return data, byte_index, masks

    def contains_many(self, digests: Sequence[bytes]) -> list[bool]:
        """Membership of each digest, vectorised (no false negatives)."""
        if not digests:
            return []
        if len(digests) == 1 and len(digests[0]) == 16:
            return [digests[0] in self]  # one digest: the scalar path, ~10× cheaper than numpy
        _, byte_index, masks = self._locate(digests)
        return self._hits(byte_index, masks).tolist()  # type: ignore[no-any-return]

    def add_many(self, digests: Sequence[bytes]) -> list[bool]:
        """``add`` for a batch, vectorised; a digest repeated in the batch is new only once."""
        if not digests:
            return []
        if len(digests) == 1 and len(digests[0]) == 16:
            return [self.add(digests[0])]  # one digest (a Scrapy dupefilter's call): scalar path
        data, byte_index, masks = self._locate(digests)
        return self._add_located(data, byte_index, masks).tolist()  # type: ignore[no-any-return]

    # -- located operations: the positions computed once, for filters of equal m and k ----

    def _hits(self, byte_index: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """For each row of positions, whether all its bits are set."""
        hits: np.ndarray = ((self.array[byte_index] & masks) != 0).all(axis=1)
        return hits

    def _add_located(
        self, data: np.ndarray, byte_index: np.ndarray, masks: np.ndarray
    ) -> np.ndarray:
        """Set the bits of located digests; which were new (a repeat in the rows: once)."""
        new = ~self._hits(byte_index, masks)
        if len(data) > 1 and _has_repeats(data):
            first: dict[bytes, None] = {}
            for index, row in enumerate(data):
                digest = row.tobytes()
                if digest in first:
                    new[index] = False
                else:
                    first[digest] = None
        index, bit, array = byte_index[new].ravel(), masks[new].ravel(), self.array
        # A plain scatter (~2× faster than ufunc.at) keeps one write per byte named twice in
        # the batch, from the values before it, so it never clears a bit but may miss some;
        # set those few again with ufunc.at, which allows repeats.
        array[index] |= bit
        lost = (array[index] & bit) == 0
        if lost.any():
            np.bitwise_or.at(array, index[lost], bit[lost])
        self.items += int(new.sum())
        return new

    def _has_positions(self, spots: list[int]) -> bool:
        array = self.array.data
        return all(array[p >> 3] & (1 << (p & 7)) for p in spots)

    def _set_positions(self, spots: list[int]) -> bool:
        array = self.array.data  # a memoryview: int indexing, ~30% faster than numpy
        new = False
        for position in spots:
            byte, mask = position >> 3, 1 << (position & 7)
            if not array[byte] & mask:
                array[byte] |= mask
                new = True
        if new:
            self.items += 1
        return new

    def __contains__(self, digest: object) -> bool:
        if not isinstance(digest, bytes) or len(digest) != 16:
            return False
        return self._has_positions(positions(digest, self.bits, self.hashes))

    # -- figures ----------------------------------------------------------------------

    def fill(self) -> float:
        """Fraction of bits set."""
        return int(np.bitwise_count(self.array).sum(dtype=np.int64)) / self.bits

    def estimated_error_rate(self) -> float:
        """False-positive rate at the current fill (honest past capacity)."""
        return estimated_error(self.fill(), self.hashes)

    @property
    def nbytes(self) -> int:
        """Bytes of the bit array."""
        return int(self.array.nbytes)

    # -- combining and persisting -----------------------------------------------------

    def merge(self, other: BloomFilter) -> None:
        """OR another filter into this one; both must have identical parameters."""
        if (self.bits, self.hashes, self.capacity, self.error_rate) != (
            other.bits,
            other.hashes,
            other.capacity,
            other.error_rate,
        ):
            raise ValueError(
                "cannot merge Bloom filters with different parameters: "
                f"(m={self.bits}, k={self.hashes}, n={self.capacity}, p={self.error_rate}) vs "
                f"(m={other.bits}, k={other.hashes}, n={other.capacity}, p={other.error_rate})"
            )
        np.bitwise_or(self.array, other.array, out=self.array)
        self.items = max(self.items, other.items)

    def to_bytes(self) -> bytes:
        """The versioned, checksummed file image (header, then the bit array)."""
        body = self.array.tobytes()
        header = _HEADER.pack(
            _MAGIC,
            _FORMAT_VERSION,
            _HASH_SCHEME,
            self.bits,
            self.hashes,
            self.capacity,
            self.error_rate,
            self.items,
            hashlib.sha256(body).digest(),
        )
        return header + body

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "Bloom filter") -> BloomFilter:
        """Read a file image; :class:`SeenSetError` naming any problem, never an empty filter."""
        if len(data) < _HEADER.size:
            if not data or not _MAGIC.startswith(data[: len(_MAGIC)]):
                raise SeenSetError(f"{name} is not a changewatch Bloom filter file")
            raise SeenSetError(f"{name} is truncated: {len(data)} bytes, shorter than its header")
        magic, version, scheme, bits, hashes, capacity, error_rate, items, checksum = (
            _HEADER.unpack_from(data)
        )
        if magic != _MAGIC:
            raise SeenSetError(f"{name} is not a changewatch Bloom filter file (bad magic bytes)")
        if version != _FORMAT_VERSION:
            raise SeenSetError(
                f"{name} has format version {version}; this changewatch reads "
                f"version {_FORMAT_VERSION}"
            )
        if scheme != _HASH_SCHEME:
            raise SeenSetError(
                f"{name} uses hash scheme {scheme}; this changewatch uses "
                f"{_HASH_SCHEME}: its answers would be wrong"
            )
        try:
            expected_bits, expected_hashes, nbytes = bloom_size(capacity, error_rate)
        except ValueError as exc:
            raise SeenSetError(f"{name} has an invalid header: {exc}") from None
        if (bits, hashes) != (expected_bits, expected_hashes):
            raise SeenSetError(f"{name} has an inconsistent header (m={bits}, k={hashes})")
        body = memoryview(data)[_HEADER.size :]
        if len(body) < nbytes:
            raise SeenSetError(f"{name} is truncated: {len(body)} of {nbytes} bit-array bytes")
        if len(body) > nbytes:
            raise SeenSetError(f"{name} has {len(body) - nbytes} unexpected trailing bytes")
        if hashlib.sha256(body).digest() != checksum:
            raise SeenSetError(f"{name} is corrupt: its checksum does not match")
        bloom = cls(capacity, error_rate)
        bloom.array = np.frombuffer(bytes(body), dtype=np.uint8).copy()
        bloom.items = items
        return bloom


class BloomGenerations:
    """Bloom filters in numbered generations, each a chain of equal filters that grows.

    Every filter has ``capacity`` and the rate :func:`generation_error_rate` gives for
    ``error_rate`` over ``live`` generations, so ``live`` full generations of one filter each
    answer "maybe" wrongly at ``error_rate`` together. When the writing filter of a generation
    is full, the generation grows by another filter (the answer to overfill: the rate rises by
    about ``error_rate / live`` per added filter, instead of running away in one overfull
    filter). All filters share m and k, so a digest's positions are computed once for all.
    Pure: the caller says which generation is current and which are live.
    """

    def __init__(self, capacity: int, error_rate: float, live: int) -> None:
        self.capacity = capacity
        self.error_rate = error_rate
        self.live = live
        self.filter_error_rate = generation_error_rate(error_rate, live)
        self.bits, self.hashes, _ = bloom_size(capacity, self.filter_error_rate)
        self.generations: dict[int, list[BloomFilter]] = {}

    def new_filter(self) -> BloomFilter:
        """An empty filter of this chain's parameters."""
        return BloomFilter(self.capacity, self.filter_error_rate)

    def drop_before(self, oldest: int) -> None:
        """Drop the generations older than ``oldest``."""
        for generation in [g for g in self.generations if g < oldest]:
            del self.generations[generation]

    def filters(self, oldest: int | None = None) -> list[BloomFilter]:
        """Every filter of the generations from ``oldest`` on."""
        return [
            f
            for g, chain in sorted(self.generations.items())
            if oldest is None or g >= oldest
            for f in chain
        ]

    def add_many(self, digests: Sequence[bytes], current: int) -> list[bool]:
        """Add to generation ``current`` each digest no held filter has; a repeat: new once.

        The caller has dropped the expired generations first (:meth:`drop_before`).
        """
        if not digests:
            return []
        held = self.filters()
        if len(digests) == 1 and len(digests[0]) == 16:
            spots = positions(digests[0], self.bits, self.hashes)
            if any(f._has_positions(spots) for f in held):
                return [False]
            chain = self.generations.setdefault(current, [self.new_filter()])
            new = chain[-1]._set_positions(spots)
            self._grow_if_full(chain)
            return [new]
        # Positions for the m and k every filter shares (a first filter when none is held).
        data, byte_index, masks = (held[0] if held else self.new_filter())._locate(digests)
        found = np.zeros(len(digests), dtype=bool)
        for older in held:
            found |= older._hits(byte_index, masks)
        out = np.zeros(len(digests), dtype=bool)
        pending = np.flatnonzero(~found)
        chain = self.generations.setdefault(current, []) if pending.size else []
        if pending.size and not chain:
            chain.append(self.new_filter())
        while pending.size:
            writing = chain[-1]
            room = max(1, writing.capacity - writing.items)
            chunk, pending = pending[:room], pending[room:]
            out[chunk] = writing._add_located(data[chunk], byte_index[chunk], masks[chunk])
            if self._grow_if_full(chain) and pending.size:
                pending = pending[~writing._hits(byte_index[pending], masks[pending])]
        return out.tolist()

    def _grow_if_full(self, chain: list[BloomFilter]) -> bool:
        if chain[-1].items < chain[-1].capacity:
            return False
        chain.append(self.new_filter())
        return True

    def contains_many(self, digests: Sequence[bytes], oldest: int | None = None) -> list[bool]:
        """Whether a filter of a generation from ``oldest`` on may hold each digest."""
        held = self.filters(oldest)
        if not digests or not held:
            return [False] * len(digests)
        _, byte_index, masks = held[0]._locate(digests)
        found = np.zeros(len(digests), dtype=bool)
        for bloom in held:
            found |= bloom._hits(byte_index, masks)
        return found.tolist()

    def __len__(self) -> int:
        return sum(f.items for f in self.filters())

    def overfilled(self) -> bool:
        """Whether any generation has grown past one filter."""
        return any(len(chain) > 1 for chain in self.generations.values())

    def estimated_error_rate(self, oldest: int | None = None) -> float:
        """The compound rate of every filter from ``oldest`` on, each at its real fill."""
        return compound_error_rate(f.estimated_error_rate() for f in self.filters(oldest))

    def generation_figures(self, generation: int) -> dict[str, Any]:
        """Entries, filters, bits, fill and estimated rate of one generation."""
        chain = self.generations.get(generation, [])
        bits = sum(f.bits for f in chain)
        return {
            "entries": sum(f.items for f in chain),
            "filters": len(chain),
            "bits": bits,
            "fill": sum(f.fill() * f.bits for f in chain) / bits if bits else 0.0,
            "estimated_error_rate": compound_error_rate(f.estimated_error_rate() for f in chain),
        }
