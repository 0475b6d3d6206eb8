"""Bloom maths, bit array and file image (changewatch.bloom); the file Bloom seen-sets."""

from __future__ import annotations

import hashlib
import logging
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changewatch.bloom import BloomFilter, actual_error, bloom_size, estimated_error, positions
from changewatch.errors import SeenSetError
from changewatch.seen import FileBloomSeenSet, open_seen_set


def _digests(start: int, count: int) -> list[bytes]:
    return [
        hashlib.blake2b(n.to_bytes(8, "big"), digest_size=16).digest()
        for n in range(start, start + count)
    ]


# --- sizing maths ---------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.1, 0.01, 0.001, 0.0001])
@pytest.mark.parametrize("n", [1_000, 1_000_000, 10_000_000])
def test_bits_per_item_within_two_percent_of_optimum(n: int, p: float) -> None:
    """bloom_size gives −ln p/(ln 2)² bits per item (±2%) and k = (m/n)·ln 2 rounded."""
    bits, hashes, nbytes = bloom_size(n, p)
    optimum = -math.log(p) / math.log(2) ** 2
    assert abs(bits / n - optimum) / optimum < 0.02
    assert hashes == max(1, round(bits / n * math.log(2)))
    assert nbytes == math.ceil(bits / 8)
    assert actual_error(bits, hashes, n) == pytest.approx(p, rel=0.1)


def test_sizing_pinned_values() -> None:
    """The sizing of the issue's reference cases is pinned."""
    assert bloom_size(1_000_000, 0.01) == (9585059, 7, 1198133)
    assert bloom_size(1_000_000, 0.001) == (14377588, 10, 1797199)
    assert actual_error(100, 3, 0) == 0.0
    assert estimated_error(0.5, 3) == 0.125


@pytest.mark.parametrize(("n", "p"), [(0, 0.01), (-5, 0.01), (10, 0.0), (10, 1.0), (10, -1)])
def test_bad_sizing_refused(n: int, p: float) -> None:
    """A capacity below 1 or a rate outside (0, 1) raises ValueError naming it."""
    with pytest.raises(ValueError, match=r"capacity|error rate"):
        bloom_size(n, p)


def test_positions_pinned_and_in_range() -> None:
    """Kirsch–Mitzenmacher positions are pinned and lie in [0, m)."""
    assert positions(bytes(range(16)), 1000, 3) == [183, 750, 317]
    for digest in _digests(0, 200):
        assert all(0 <= p < 977 for p in positions(digest, 977, 9))


# --- the filter -----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(min_size=16, max_size=16), min_size=1, max_size=300))
def test_no_false_negatives(digests: list[bytes]) -> None:
    """Every added digest is reported present, one by one and in batches."""
    bloom = BloomFilter(500, 0.01)
    half = len(digests) // 2
    for digest in digests[:half]:
        bloom.add(digest)
    bloom.add_many(digests[half:])
    assert all(d in bloom for d in digests)
    assert all(bloom.contains_many(digests))


@pytest.mark.parametrize("p", [0.01, 0.001])
def test_measured_false_positive_rate_at_capacity(p: float) -> None:
    """At capacity, the rate measured on 1M never-added digests is within ±15% of p."""
    n = 50_000
    bloom = BloomFilter(n, p)
    assert sum(bloom.add_many(_digests(0, n))) >= n * (1 - 2 * p)
    probes = 1_000_000
    measured = sum(bloom.contains_many(_digests(10_000_000, probes))) / probes
    assert abs(measured - p) / p < 0.15
    assert bloom.estimated_error_rate() == pytest.approx(p, rel=0.15)


def test_add_many_matches_sequential_adds() -> None:
    """add_many answers like add one by one, repeats in the batch included."""
    batch = _digests(0, 50) + _digests(25, 50) + _digests(0, 3)
    one = BloomFilter(1000, 0.001)
    many = BloomFilter(1000, 0.001)
    assert many.add_many(batch) == [one.add(d) for d in batch]
    assert (one.array == many.array).all()
    assert one.items == many.items == 75


def test_merge_is_bitwise_or_of_identical_filters() -> None:
    """merge ORs two filters with identical parameters; different parameters are refused."""
    left, right = BloomFilter(1000, 0.01), BloomFilter(1000, 0.01)
    left.add_many(_digests(0, 100))
    right.add_many(_digests(100, 100))
    left.merge(right)
    assert all(left.contains_many(_digests(0, 200)))
    with pytest.raises(ValueError, match="different parameters"):
        left.merge(BloomFilter(1000, 0.001))
    with pytest.raises(ValueError, match="different parameters"):
        left.merge(BloomFilter(2000, 0.01))


def test_image_round_trip() -> None:
    """to_bytes then from_bytes gives the same bits, parameters and item count."""
    bloom = BloomFilter(5000, 0.001)
    bloom.add_many(_digests(0, 1234))
    again = BloomFilter.from_bytes(bloom.to_bytes())
    assert (again.bits, again.hashes, again.capacity, again.error_rate, again.items) == (
        bloom.bits,
        bloom.hashes,
        bloom.capacity,
        bloom.error_rate,
        1234,
    )
    assert (again.array == bloom.array).all()


def _image() -> bytes:
    bloom = BloomFilter(1000, 0.01)
    bloom.add_many(_digests(0, 10))
    return bloom.to_bytes()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b"", "not a changewatch Bloom"),
        (lambda b: b[:30], "truncated"),
        (lambda b: b[:-1], "truncated"),
        (lambda b: b + b"\0", "trailing"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "checksum"),
        (lambda b: b"GIF89a" + b[6:], "not a changewatch Bloom"),
        (lambda b: b[:8] + b"\x00\x07" + b[10:], "format version 7"),
        (lambda b: b[:10] + b"\x00\x02" + b[12:], "hash scheme 2"),
        (lambda b: b[:12] + (123).to_bytes(8, "big") + b[20:], "inconsistent header"),
    ],
)
def test_damaged_image_refused(damage: object, message: str) -> None:
    """A truncated, corrupt, foreign or other-version image raises SeenSetError naming it."""
    with pytest.raises(SeenSetError, match=message):
        BloomFilter.from_bytes(damage(_image()))  # type: ignore[operator]


# --- file Bloom seen-sets -------------------------------------------------------------------


def test_file_bloom_persists_and_refuses_other_parameters(tmp_path: Path) -> None:
    """A saved filter reopens with every digest; other capacity/rate/kind is refused."""
    url = f"file:{tmp_path}/b.seen?kind=bloom&capacity=2000&error_rate=0.01"
    seen = open_seen_set(url)
    assert all(seen.add_many(_digests(0, 500)))
    seen.close()
    again = open_seen_set(url)
    try:
        assert not any(again.add_many(_digests(0, 500)))
        assert again.stats()["items"] == 500
    finally:
        again.close()
    for other in (
        f"file:{tmp_path}/b.seen?kind=bloom&capacity=3000&error_rate=0.01",
        f"file:{tmp_path}/b.seen?kind=bloom&capacity=2000&error_rate=0.001",
        f"file:{tmp_path}/b.seen?kind=bloom&capacity=2000&error_rate=0.01&scalable=1",
    ):
        with pytest.raises(SeenSetError, match="was made with capacity=2000"):
            open_seen_set(other)
    with pytest.raises(SeenSetError, match="Bloom seen-set file"):
        open_seen_set(f"file:{tmp_path}/b.seen?kind=exact")


def test_exact_file_opened_as_bloom_refused(tmp_path: Path) -> None:
    """An exact-set file opened with kind=bloom raises SeenSetError, never an empty filter."""
    exact = open_seen_set(f"file:{tmp_path}/e.seen")
    exact.add_many(_digests(0, 5))
    exact.close()
    with pytest.raises(SeenSetError, match="exact seen-set file"):
        open_seen_set(f"file:{tmp_path}/e.seen?kind=bloom")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b[:40], "truncated"),
        (lambda b: b[:-3], "checksum"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 4]), "checksum"),
        (lambda b: b"", "empty"),
        (lambda b: b"<html>" * 20, "not a changewatch"),
    ],
)
def test_damaged_bloom_file_refused(tmp_path: Path, damage: object, message: str) -> None:
    """A damaged Bloom seen-set file raises SeenSetError naming the problem and the path."""
    path = tmp_path / "b.seen"
    seen = FileBloomSeenSet(path, capacity=1000, error_rate=0.01)
    seen.add_many(_digests(0, 100))
    seen.close()
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(SeenSetError, match=message) as info:
        FileBloomSeenSet(path, capacity=1000, error_rate=0.01)
    assert str(path) in str(info.value)


def test_overfill_is_reported_and_warned_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Past capacity the estimated rate exceeds the configured one and one warning is logged."""
    seen = FileBloomSeenSet(tmp_path / "o.seen", capacity=1000, error_rate=0.01)
    try:
        with caplog.at_level(logging.WARNING, logger="changewatch"):
            seen.add_many(_digests(0, 900))
            assert seen.stats()["estimated_error_rate"] < 0.01
            assert not caplog.records
            for start in range(900, 3000, 300):
                seen.add_many(_digests(start, 300))
        assert seen.stats()["estimated_error_rate"] > 0.01
        warnings = [r for r in caplog.records if "over capacity" in r.getMessage()]
        assert len(warnings) == 1
    finally:
        seen.close()


def test_scalable_filter_keeps_its_error_rate_far_past_capacity(tmp_path: Path) -> None:
    """At 20× the initial capacity a scalable filter's measured and estimated rates stay ≤ p."""
    p = 0.01
    seen = FileBloomSeenSet(tmp_path / "s.seen", capacity=1000, error_rate=p, scalable=True)
    try:
        new = sum(seen.add_many(_digests(0, 20_000)))
        assert new >= 20_000 * (1 - p)
        stats = seen.stats()
        assert stats["filters"] >= 4
        assert stats["estimated_error_rate"] < p
        measured = sum(d in seen for d in _digests(5_000_000, 20_000)) / 20_000
        assert measured < p
    finally:
        seen.close()
    reopened = FileBloomSeenSet(tmp_path / "s.seen", capacity=1000, error_rate=p, scalable=True)
    try:
        assert all(d in reopened for d in _digests(0, 20_000))
    finally:
        reopened.close()
