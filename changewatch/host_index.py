"""What the store holds of one host, in memory: sorted digests and times — pure, no I/O.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_MAX_ROWS",
    "NO_TIME",
    "ROW_BYTES",
    "HostIndex",
    "IndexBuilder",
    "RowFormatError",
    "from_micros",
    "to_micros",
]

#: Stored pages a reconcile run holds in memory, over all its hosts: about 82 MB at 41 bytes a
#: page (plus a bucket table). Hosts that do not fit in what is left are looked up in batches.
DEFAULT_MAX_ROWS = 2_000_000
#: ``-infinity`` in Postgres' binary ``timestamptz``: "no such time".
NO_TIME = np.iinfo(np.int64).min

_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)

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
    changewatch.host_index.RowFormatError: a stored row is 39 bytes, not 40
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
