"""In-memory indexes of a reconcile run: what the store holds of a host, and the digests
its sitemaps listed — pure, no I/O.

**HostIndex.**
A reconcile run over a host of a million stored pages used to ask the store about every
listed URL, 1,000 digests a query: a million index probes on the server, competing with the
parser for the same cores. When the host is small enough (:data:`DEFAULT_MAX_ROWS`), the run
instead reads the host's pages once, as packed fixed-width rows (:data:`ROW_BYTES`) from a
server-side cursor, into the arrays of a :class:`HostIndex`, and classifies each batch of
listed URLs in numpy.

Each page costs 41 bytes (two 64-bit digest halves, three timestamps, a flag): 41 MB for a
million pages. Times are microseconds since 2000-01-01 UTC, as Postgres keeps ``timestamptz``
and sends it in binary; :data:`NO_TIME` (``-infinity``) stands for "none".

:class:`IndexBuilder` turns batches of packed rows into those arrays with one numpy copy per
batch, and refuses a row of any other width: the caller then falls back to batched lookups.

**DigestTable.** A compact, exact set of 16-byte URL digests in numpy arrays — pure, no I/O.

The reconciliation job remembers every digest a host's sitemaps listed: to skip an entry
listed twice, and to find the stored pages no sitemap listed (*vanished*). A Python ``set``
of a million 16-byte ``bytes`` objects costs about 100 MB; this table keeps each digest as
two unsigned 64-bit halves in an open-addressing hash table (linear probing), 17 bytes a
slot, at most :data:`MAX_LOAD` full: about 35 MB for a million digests, and lookups and
inserts run a batch at a time in numpy. URL digests are blake2b output, so their low 64 bits
are already uniformly spread and serve as the hash.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_MAX_ROWS",
    "MAX_LOAD",
    "NO_TIME",
    "ROW_BYTES",
    "DigestTable",
    "HostIndex",
    "IndexBuilder",
    "RowFormatError",
    "from_micros",
    "halves",
    "to_micros",
]

#: Stored pages a reconcile run holds in memory, over all its hosts: about 82 MB at 41 bytes a
#: page (plus a bucket table). Hosts that do not fit in what is left are looked up in batches.
DEFAULT_MAX_ROWS = 2_000_000
#: ``-infinity`` in Postgres' binary ``timestamptz``: "no such time".
NO_TIME = np.iinfo(np.int64).min

_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
#: Largest fraction of slots in use before a :class:`DigestTable` doubles.
MAX_LOAD = 0.7
_MIN_SLOTS = 1 << 10
_REHASH_SLICE = 1 << 16
_HALVES = np.dtype(">u8")

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
Bools = npt.NDArray[np.bool_]


def to_micros(moment: datetime | None) -> int:
    """Microseconds since 2000-01-01 UTC of an aware datetime; ``None`` → :data:`NO_TIME`.

    >>> to_micros(datetime(2000, 1, 1, 0, 0, 1, tzinfo=UTC)), to_micros(None) == NO_TIME
    (1000000, True)
    """
    if moment is None:
        return int(NO_TIME)
    return (moment - _EPOCH) // _MICRO


def from_micros(micros: int) -> datetime:
    """The aware UTC datetime of :func:`to_micros`.

    >>> from_micros(86_400_000_000)
    datetime.datetime(2000, 1, 2, 0, 0, tzinfo=datetime.timezone.utc)
    """
    return _EPOCH + timedelta(microseconds=int(micros))


# -- reading the rows ------------------------------------------------------------------------------

#: Bytes of one packed row: the 16-byte digest, then ``last_seen``, ``last_changed`` and the
#: ``last_seen`` of the previous version (:data:`NO_TIME` for a first version), each as a
#: big-endian signed 64-bit count of microseconds since 2000-01-01 UTC — what Postgres'
#: ``timestamptz_send`` gives.
ROW_BYTES = 40
_COLUMNS = ("hi", "lo", "seen", "changed", "previous")
_ROW = np.dtype([(name, ">u8" if name in ("hi", "lo") else ">i8") for name in _COLUMNS])


class RowFormatError(ValueError):
    """A packed row is not :data:`ROW_BYTES` long."""


class IndexBuilder:
    """Collects packed rows (see :data:`ROW_BYTES`) a batch at a time into a :class:`HostIndex`.

    >>> builder = IndexBuilder(expected=1)
    >>> times = (5).to_bytes(8, "big") + (3).to_bytes(8, "big")
    >>> builder.add([bytes(range(16)) + times + int(NO_TIME).to_bytes(8, "big", signed=True)])
    >>> index = builder.finish()
    >>> len(index), int(index.last_seen[0]), int(index.previous[0]) == NO_TIME
    (1, 5, True)
    >>> builder.add([bytes(39)])
    Traceback (most recent call last):
    ...
    changewatch.reconcile.index.RowFormatError: a stored row is 39 bytes, not 40
    """

    def __init__(self, expected: int = 0) -> None:
        self._size = 0
        capacity = max(expected, 1024)
        self._columns = {
            name: np.empty(capacity, dtype=_ROW[name].newbyteorder("=")) for name in _COLUMNS
        }

    def __len__(self) -> int:
        return self._size

    def add(self, packed: Sequence[bytes]) -> None:
        """Add a batch of packed rows."""
        for row in packed:
            if len(row) != ROW_BYTES:
                raise RowFormatError(f"a stored row is {len(row)} bytes, not {ROW_BYTES}")
        rows = np.frombuffer(b"".join(packed), dtype=_ROW)
        end = self._size + rows.size
        capacity = self._columns["hi"].size
        if end > capacity:
            capacity = max(end, 2 * capacity)
            for name, old in self._columns.items():
                grown = np.empty(capacity, dtype=old.dtype)
                grown[: self._size] = old[: self._size]
                self._columns[name] = grown
        for name, column in self._columns.items():
            column[self._size : end] = rows[name]
        self._size = end

    def finish(self) -> HostIndex:
        """The index of every row added (the builder must not be used after)."""
        n = self._size
        columns, self._columns = self._columns, {}
        return HostIndex(*(columns[name][:n] for name in _COLUMNS))


def _bucket_bits(rows: int) -> int:
    """log2 of the bucket count of an index of ``rows``: about one row a bucket (≤ 2**22)."""
    return min(22, max(10, rows.bit_length()))


def _permuted(array: npt.NDArray[Any], order: npt.NDArray[np.intp], dtype: type[Any]) -> Any:
    """``array`` (as ``dtype``) in ``order``, permuted in place where it can be."""
    array = np.ascontiguousarray(array, dtype=dtype)
    array[...] = array[order]
    return array


# -- the index ------------------------------------------------------------------------------------


class HostIndex:
    """A host's stored pages, sorted by digest: find a batch of digests, mark them listed.

    >>> index = HostIndex(*(np.array(v) for v in ([2, 1], [0, 9], [5, 6], [5, 6], [0, 0])))
    >>> index.find(np.array([1, 2, 3], np.uint64), np.array([9, 0, 0], np.uint64)).tolist()
    [0, 1, -1]
    >>> index.listed[0] = True
    >>> index.unlisted_digests() == (2).to_bytes(8, "big") + (0).to_bytes(8, "big")
    True
    """

    def __init__(self, hi: U64, lo: U64, last_seen: I64, last_changed: I64, previous: I64) -> None:
        # Sorted by the high half only (digests are uniform, so ties are rare and `find`
        # walks them); each array is permuted in place, one at a time, so the peak is the
        # arrays plus one temporary, not twice the arrays.
        order = np.argsort(hi, kind="stable")
        self.hi: U64 = _permuted(hi, order, np.uint64)
        self.lo: U64 = _permuted(lo, order, np.uint64)
        self.last_seen: I64 = _permuted(last_seen, order, np.int64)
        self.last_changed: I64 = _permuted(last_changed, order, np.int64)
        self.previous: I64 = _permuted(previous, order, np.int64)
        del order
        #: Set for each page a sitemap listed.
        self.listed: Bools = np.zeros(self.hi.size, dtype=np.bool_)
        # Where each run of equal top bits starts: a query is looked for from its bucket's
        # start, two or three memory reads instead of a binary search's twenty.
        bits = _bucket_bits(self.hi.size)
        self._shift = np.uint64(64 - bits)
        buckets = np.arange(1 << bits, dtype=np.uint64)
        self._starts = np.searchsorted(self.hi >> self._shift, buckets).astype(np.int64)

    def __len__(self) -> int:
        return int(self.hi.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the index's arrays."""
        arrays = (self.hi, self.lo, self.last_seen, self.last_changed, self.previous)
        return sum(int(a.nbytes) for a in arrays) + int(self.listed.nbytes + self._starts.nbytes)

    def find(self, hi: U64, lo: U64) -> I64:
        """The position of each digest (given as big-endian halves), ``-1`` where not stored."""
        found = np.full(hi.size, -1, dtype=np.int64)
        if not self.hi.size or not hi.size:
            return found
        at = self._starts[(hi >> self._shift).astype(np.intp)]
        pending = np.arange(hi.size)
        last = self.hi.size
        # Walk each query's bucket (sorted by the high half) until its digest or a larger
        # high half: a bucket holds about one row.
        while pending.size:
            at_p = at[pending]
            inside = at_p < last
            pending, at_p = pending[inside], at_p[inside]
            row_hi = self.hi[at_p]
            want = hi[pending]
            equal = (row_hi == want) & (self.lo[at_p] == lo[pending])
            found[pending[equal]] = at_p[equal]
            go_on = ~equal & (row_hi <= want)
            pending = pending[go_on]
            at[pending] += 1
        return found

    def unlisted_digests(self) -> bytes:
        """The concatenated 16-byte digests of the pages no sitemap listed, in digest order."""
        keep = ~self.listed
        pairs = np.empty((int(keep.sum()), 2), dtype=">u8")
        pairs[:, 0] = self.hi[keep]
        pairs[:, 1] = self.lo[keep]
        return pairs.tobytes()


def halves(digests: bytes) -> tuple[U64, U64]:
    """Split concatenated 16-byte digests into big-endian high and low 64-bit halves.

    Big-endian halves compare like the digest bytes (memcmp order, as SQL sorts BLOB/bytea).
    """
    if len(digests) % 16:
        raise ValueError(f"digests must be a multiple of 16 bytes, got {len(digests)}")
    pairs = np.frombuffer(digests, dtype=_HALVES).reshape(-1, 2).astype(np.uint64)
    return pairs[:, 0].copy(), pairs[:, 1].copy()


class DigestTable:
    """An exact set of 16-byte digests: ``add_many`` and ``contains_many`` over batches.

    >>> table = DigestTable()
    >>> a, b = bytes(range(16)), bytes(range(1, 17))
    >>> table.add_many(a + b + a).tolist()
    [True, True, False]
    >>> table.contains_many(b + bytes(16)).tolist()
    [True, False]
    >>> len(table)
    2
    """

    def __init__(self, capacity: int = 0) -> None:
        slots = _MIN_SLOTS
        while slots * MAX_LOAD < capacity:
            slots *= 2
        self._allocate(slots)
        self._count = 0

    def _allocate(self, slots: int) -> None:
        self._hi = np.zeros(slots, dtype=np.uint64)
        self._lo = np.zeros(slots, dtype=np.uint64)
        self._used = np.zeros(slots, dtype=np.bool_)
        self._mask = np.uint64(slots - 1)

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """Bytes held by the table's arrays."""
        return int(self._hi.nbytes + self._lo.nbytes + self._used.nbytes)

    def add_many(self, digests: bytes) -> Bools:
        """Add concatenated digests; True for each one not in the table before.

        A digest repeated within the batch is True at its first position only.
        """
        hi, lo = halves(digests)
        fresh = np.zeros(hi.size, dtype=np.bool_)
        if not hi.size:
            return fresh
        # First occurrence of each distinct digest in the batch (as 16-byte opaque values:
        # about 5× faster than a row-wise unique over the two halves).
        _, first = np.unique(np.frombuffer(digests, dtype="V16"), return_index=True)
        if (self._count + first.size) > MAX_LOAD * self._hi.size:
            self._grow(self._count + first.size)
        inserted = self._insert(hi[first], lo[first])
        fresh[first[inserted]] = True
        self._count += int(inserted.sum())
        return fresh

    def contains_many(self, digests: bytes) -> Bools:
        """Membership of each of the concatenated digests."""
        hi, lo = halves(digests)
        return self._probe(hi, lo)

    def _probe(self, hi: U64, lo: U64) -> Bools:
        found = np.zeros(hi.size, dtype=np.bool_)
        pending = np.arange(hi.size)
        slot = lo & self._mask
        while pending.size:
            used = self._used[slot]
            equal = used & (self._hi[slot] == hi[pending]) & (self._lo[slot] == lo[pending])
            found[pending[equal]] = True
            go_on = used & ~equal
            pending, slot = pending[go_on], (slot[go_on] + np.uint64(1)) & self._mask
        return found

    def _insert(self, hi: U64, lo: U64) -> Bools:
        """Insert distinct digests; True where a digest was not there yet."""
        inserted = np.zeros(hi.size, dtype=np.bool_)
        pending = np.arange(hi.size)
        slot = lo & self._mask
        while pending.size:
            used = self._used[slot]
            equal = used & (self._hi[slot] == hi[pending]) & (self._lo[slot] == lo[pending])
            # Of the digests reaching the same free slot, the first one takes it; the others
            # find it used on the next round and probe on.
            free = np.flatnonzero(~used)
            if free.size:
                _, winners = np.unique(slot[free], return_index=True)
                take = free[winners]
                where = slot[take]
                self._hi[where] = hi[pending[take]]
                self._lo[where] = lo[pending[take]]
                self._used[where] = True
                inserted[pending[take]] = True
                done = equal.copy()
                done[take] = True
            else:
                done = equal
            go_on = ~done
            # Losers of a free slot stay on it (now used by the winner) and are re-checked.
            step = (used & ~equal)[go_on].astype(np.uint64)
            pending, slot = pending[go_on], (slot[go_on] + step) & self._mask
        return inserted

    def _grow(self, needed: int) -> None:
        slots = self._hi.size
        while slots * MAX_LOAD < needed:
            slots *= 2
        old_hi, old_lo, old_used = self._hi, self._lo, self._used
        self._allocate(slots)
        # Re-inserted a slice at a time: the probing temporaries stay small, so the peak is
        # the old table plus the new one.
        for start in range(0, old_hi.size, _REHASH_SLICE):
            end = start + _REHASH_SLICE
            used = old_used[start:end]
            self._insert(old_hi[start:end][used], old_lo[start:end][used])
