"""HostIndex and IndexBuilder: exact lookups, shared high halves, growth, refused rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changewatch.reconcile.index import (
    NO_TIME,
    ROW_BYTES,
    HostIndex,
    IndexBuilder,
    RowFormatError,
    from_micros,
    halves,
    to_micros,
)


def _row(digest: bytes, seen: int, changed: int = 0, previous: int = int(NO_TIME)) -> bytes:
    times = b"".join(t.to_bytes(8, "big", signed=True) for t in (seen, changed, previous))
    return digest + times


def _index(digests: list[bytes]) -> HostIndex:
    builder = IndexBuilder()
    builder.add([_row(d, i) for i, d in enumerate(digests)])
    return builder.finish()


def _find(index: HostIndex, digests: list[bytes]) -> list[int]:
    return index.find(*halves(b"".join(digests))).tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(min_size=16, max_size=16), unique=True, max_size=300),
    st.lists(st.binary(min_size=16, max_size=16), max_size=100),
)
def test_find_agrees_with_a_dict(stored: list[bytes], queries: list[bytes]) -> None:
    index = _index(stored)
    position = {}
    for at in range(len(index)):
        digest = int(index.hi[at]).to_bytes(8, "big") + int(index.lo[at]).to_bytes(8, "big")
        position[digest] = at
        # Each row keeps its own times through the sort.
        assert int(index.last_seen[at]) == stored.index(digest)
    asked = queries + stored[:50]
    assert _find(index, asked) == [position.get(d, -1) for d in asked]


def test_digests_sharing_their_high_half_are_told_apart() -> None:
    high = b"\x42" * 8
    stored = [high + bytes([n]) * 8 for n in (9, 3, 7, 1)] + [b"\x43" * 16, b"\x41" * 16]
    index = _index(stored)
    for digest in stored:
        at = _find(index, [digest])[0]
        assert at >= 0
        assert int(index.last_seen[at]) == stored.index(digest)
    assert _find(index, [high + b"\x05" * 8, b"\xff" * 16, bytes(16)]) == [-1, -1, -1]


def test_the_last_bucket_and_an_empty_index() -> None:
    top = b"\xff" * 16
    index = _index([top, b"\xff" * 8 + bytes(8)])
    assert _find(index, [top, b"\xff" * 15 + b"\xfe"]) == [_find(index, [top])[0], -1]
    empty = IndexBuilder().finish()
    assert len(empty) == 0
    assert _find(empty, [top]) == [-1]
    assert empty.unlisted_digests() == b""


def test_builder_grows_past_what_it_expected() -> None:
    builder = IndexBuilder(expected=2)
    digests = [n.to_bytes(16, "big") for n in range(5000)]
    for start in range(0, 5000, 700):
        builder.add([_row(d, n) for n, d in enumerate(digests[start : start + 700], start)])
    index = builder.finish()
    assert len(index) == 5000
    assert _find(index, [digests[4999]]) != [-1]
    # 41 bytes a page (two digest halves, three times, the listed flag) and a bucket table
    # of one 8-byte start per power of two at or above the row count.
    assert index.nbytes == 41 * 5000 + 8 * (1 << (5000).bit_length())


@pytest.mark.parametrize("size", [0, 16, ROW_BYTES - 1, ROW_BYTES + 1])
def test_a_row_of_another_width_is_refused(size: int) -> None:
    builder = IndexBuilder()
    with pytest.raises(RowFormatError, match=f"{size} bytes, not {ROW_BYTES}"):
        builder.add([_row(bytes(16), 1), bytes(size)])


def test_unlisted_digests_are_those_never_marked() -> None:
    stored = [n.to_bytes(16, "big") for n in (5, 1, 9)]
    index = _index(stored)
    index.listed[_find(index, [stored[0]])] = True
    assert index.unlisted_digests() == stored[1] + stored[2]  # digest order


def test_micros_round_trip_and_none() -> None:
    moment = datetime(2026, 11, 30, 12, 34, 56, 789012, tzinfo=UTC)
    assert from_micros(to_micros(moment)) == moment
    assert to_micros(None) == NO_TIME
    assert to_micros(datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC)) == -1_000_000
    assert from_micros(0) - timedelta(days=1) == datetime(1999, 12, 31, tzinfo=UTC)
    assert np.int64(to_micros(datetime(9999, 12, 31, tzinfo=UTC))) > 0
