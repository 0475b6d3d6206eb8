"""64-bit weighted SimHash of normalised text — pure functions, no I/O.

Features are overlapping word 2-shingles (the single word of a one-word text), words
being runs of ``\\w`` characters (``str.isalnum()`` or ``_``); a feature's weight is its number
of occurrences, capped at :data:`MAX_FEATURE_WEIGHT`. Each word is hashed by a polynomial
over its code points mod 2**64 finished by MurmurHash3's fmix64 (:func:`_word_hash`), and a
shingle's hash combines its words' hashes (:func:`feature_hash`) — stable across processes,
unlike ``hash()``. The result equals ``simhash.Simhash(features, hashfunc=feature_hash).value``
for the same weighted features (a unit test pins it), but :func:`simhash` computes it in numpy:
every word of a page hashed in a handful of array operations, shingles combined as arrays, the
weighted bit sums read off per-byte value counts. Weights are capped because the ``simhash`` package
overflows ``uint8`` for weights above 255 under numpy 2 (upstream issue 1e0ng/simhash#74).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from typing import Any

import numpy as np

__all__ = [
    "MAX_FEATURE_WEIGHT",
    "MAX_NEAR_DISTANCE",
    "SIMHASH_BANDS",
    "SIMHASH_BAND_BITS",
    "feature_hash",
    "hamming",
    "simhash",
    "simhash_band",
    "simhash_features",
    "simhash_of_features",
]

#: Cap on a SimHash feature's weight (its occurrence count in the page).
MAX_FEATURE_WEIGHT = 255

#: The 64-bit SimHash is indexed as this many bands (DESIGN.md, Storage: Manku et al. 2007).
SIMHASH_BANDS = 4
#: Bits per band: 64 / SIMHASH_BANDS.
SIMHASH_BAND_BITS = 16
#: The largest distance the band index finds every match for: bands − 1 (pigeonhole).
MAX_NEAR_DISTANCE = SIMHASH_BANDS - 1
_BAND_MASK = (1 << SIMHASH_BAND_BITS) - 1

_WORD_RE = re.compile(r"\w+")


def simhash_features(text: str) -> dict[str, int]:
    """Weighted SimHash features of normalised text: word 2-shingles and their counts.

    A one-word text's feature is the word itself. Pairs rather than triples: a one-word
    edit then changes two features instead of three, which keeps small edits within the
    ``minor`` distance more often at no measurable cost in telling different pages apart
    (docs/fingerprints.md has the measurement).

    >>> simhash_features("a b a b c")
    {'a b': 2, 'b a': 1, 'b c': 1}
    """
    words = _WORD_RE.findall(text)
    shingles = words if len(words) < 2 else [f"{a} {b}" for a, b in itertools.pairwise(words)]
    counts = Counter(shingles)
    return {f: min(w, MAX_FEATURE_WEIGHT) for f, w in counts.items()}


# Multipliers of MurmurHash3's 64-bit finaliser (Appleby, public domain) and a golden-ratio
# constant, used to combine per-word hashes into a shingle hash.
_M1 = 0xFF51AFD7ED558CCD
_M2 = 0xC4CEB9FE1A85EC53
_GOLDEN = 0x9E3779B97F4A7C15
#: Odd multiplier of the per-word polynomial hash (odd, so every power is a unit mod 2**64).
_WORD_P = 0xD6E8FEB86659FD93
_MASK64 = (1 << 64) - 1


def _word_hash(word: bytes) -> int:
    """Hash of one word: a polynomial over its code points mod 2**64, finished by fmix64.

    ``Σ ord(c_i)·P**i`` (``P`` odd) is what :func:`_word_hashes` computes for every word of
    a text at once in numpy; this scalar form defines it.
    """
    total = 0
    power = 1
    for char in word.decode("utf-8", "surrogatepass"):
        total = (total + ord(char) * power) & _MASK64
        power = (power * _WORD_P) & _MASK64
    return _fmix64(total)


# Word characters are those ``\w`` matches: str.isalnum() or "_" (checked for every code
# point in the tests). Code points of the Basic Multilingual Plane by a table built on first
# use (65,536 entries); the rare others by asking Python once per distinct one.
@functools.cache
def _bmp_word_table() -> np.ndarray:
    return np.array([chr(c).isalnum() or c == 0x5F for c in range(0x10000)], dtype=bool)


def _word_mask(codes: np.ndarray) -> np.ndarray:
    table = _bmp_word_table()
    if codes.dtype == np.uint8 or int(codes.max(initial=0)) < 0x10000:
        return table[codes]  # type: ignore[no-any-return]
    astral = codes >= 0x10000
    mask = table[np.where(astral, 0, codes)]
    distinct, where = np.unique(codes[astral], return_inverse=True)
    flags = np.fromiter(
        (chr(c).isalnum() for c in distinct.tolist()), dtype=bool, count=len(distinct)
    )
    mask[astral] = flags[where]
    return mask


def _word_hashes(text: str) -> np.ndarray:
    """:func:`_word_hash` of every ``\\w+`` word of ``text``, in order, as uint64."""
    if text.isascii():
        codes: np.ndarray = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    else:
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    mask = _word_mask(codes)
    padded = np.zeros(len(mask) + 2, dtype=bool)
    padded[1:-1] = mask
    edges = np.flatnonzero(padded[1:] != padded[:-1])  # word starts and ends, alternating
    if len(edges) == 0:
        return np.empty(0, dtype=np.uint64)
    starts, ends = edges[0::2], edges[1::2]
    powers, inverses = _word_p_powers(len(codes))
    with np.errstate(over="ignore"):
        # Σ code·P**position over a word is (prefix[end] − prefix[start])·P**−start, where
        # prefix sums code·P**index over the whole text: P is odd, so P**−1 mod 2**64 exists.
        prefix = np.zeros(len(codes) + 1, dtype=np.uint64)
        np.cumsum(codes * powers[: len(codes)], out=prefix[1:])
        sums = (prefix[ends] - prefix[starts]) * inverses[starts]
        return _fmix64_array(sums)  # type: ignore[no-any-return]


_BLOCK = 256
_WORD_P_INVERSE = pow(_WORD_P, -1, 1 << 64)
#: P**i and P**−i mod 2**64 for i < _BLOCK; P**(_BLOCK·k) and P**−(_BLOCK·k) by _block_powers.
_WORD_P_POWERS = np.array([pow(_WORD_P, i, 1 << 64) for i in range(_BLOCK)], dtype=np.uint64)
_WORD_P_INVERSES = np.array(
    [pow(_WORD_P_INVERSE, i, 1 << 64) for i in range(_BLOCK)], dtype=np.uint64
)
_WORD_P_BLOCK = pow(_WORD_P, _BLOCK, 1 << 64)
_WORD_P_INVERSE_BLOCK = pow(_WORD_P_INVERSE, _BLOCK, 1 << 64)
#: Power tables of up to 2**18 entries (2 MiB an array) are kept between calls: 8 MiB in all.
_CACHED_POWERS_EXPONENT = 18


def _word_p_powers(count: int) -> tuple[np.ndarray, np.ndarray]:
    """P**i and P**−i mod 2**64 for i < at least ``count``, as uint64 arrays."""
    exponent = max(8, (count - 1).bit_length())
    if exponent <= _CACHED_POWERS_EXPONENT:
        return _cached_word_p_powers(exponent)
    return _power_tables(exponent)


@functools.cache
def _cached_word_p_powers(exponent: int) -> tuple[np.ndarray, np.ndarray]:
    return _power_tables(exponent)


def _power_tables(exponent: int) -> tuple[np.ndarray, np.ndarray]:
    blocks = (1 << exponent) // _BLOCK
    powers = (_block_powers(_WORD_P_BLOCK, blocks)[:, None] * _WORD_P_POWERS).ravel()
    inverses = (_block_powers(_WORD_P_INVERSE_BLOCK, blocks)[:, None] * _WORD_P_INVERSES).ravel()
    powers.flags.writeable = inverses.flags.writeable = False
    return powers, inverses


def _block_powers(base: int, count: int) -> np.ndarray:
    """``base**k`` mod 2**64 for k < ``count``, as uint64."""
    powers = np.ones(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.cumprod(np.full(count - 1, base, dtype=np.uint64), out=powers[1:])
    return powers


def _rotl(value: int, shift: int) -> int:
    """Rotate a 64-bit value left by ``shift`` bits (any ``shift`` >= 0, taken mod 64)."""
    shift %= 64
    return ((value << shift) | (value >> (64 - shift))) & _MASK64


def feature_hash(feature: bytes) -> bytes:
    """The per-feature hash, 8 bytes, read big-endian as the SimHash bits.

    A feature is one or more words separated by single spaces (two for SimHash). Each
    word is hashed by a polynomial over its code points (:func:`_word_hash`; stable across
    processes); word *i*'s hash is rotated left by 21·*i* mod 64 bits, the results are combined by
    multiply-xor and finished with MurmurHash3's fmix64. Hashing words once and combining
    them is what lets :func:`simhash` vectorise the shingles; this scalar version exists so
    the value can be checked against the ``simhash`` package
    (``simhash.Simhash(features, hashfunc=feature_hash)``).
    """
    words = feature.split(b" ")
    value = _word_hash(words[0])
    for index, word in enumerate(words[1:], 1):
        value = ((value * _GOLDEN) & _MASK64) ^ _rotl(_word_hash(word), 21 * index)
    return _fmix64(value).to_bytes(8, "big")


def _fmix64(value: int) -> int:
    value ^= value >> 33
    value = (value * _M1) & _MASK64
    value ^= value >> 33
    value = (value * _M2) & _MASK64
    return value ^ (value >> 33)


def _fmix64_array(values: Any) -> Any:
    values = values ^ (values >> np.uint64(33))
    values = values * np.uint64(_M1)
    values = values ^ (values >> np.uint64(33))
    values = values * np.uint64(_M2)
    return values ^ (values >> np.uint64(33))


def _rotl_array(values: Any, shift: int) -> Any:
    return (values << np.uint64(shift)) | (values >> np.uint64(64 - shift))


def simhash(text: str) -> int:
    """64-bit weighted SimHash of normalised text (features: :func:`simhash_features`).

    Equal to ``simhash_of_features(simhash_features(text))``, computed without building the
    shingle strings: every word is hashed in numpy (:func:`_word_hashes`), shingle hashes
    are combined in numpy (:func:`feature_hash` is the scalar definition), identical
    shingles are counted only when one may pass :data:`MAX_FEATURE_WEIGHT`, and the weighted
    bit sums come from per-byte value counts (:func:`_bit_sums`).

    >>> simhash("") == 0
    True
    """
    hashes = _word_hashes(text)
    if len(hashes) == 0:
        return 0
    if len(hashes) >= 2:
        with np.errstate(over="ignore"):
            hashes = _fmix64_array(hashes[:-1] * np.uint64(_GOLDEN) ^ _rotl_array(hashes[1:], 21))
    else:
        hashes = _fmix64_array(hashes)
    if len(hashes) <= MAX_FEATURE_WEIGHT or _bucket_counts(hashes).max() <= MAX_FEATURE_WEIGHT:
        # No shingle occurs more often than the cap, so every occurrence weighs 1.
        sums, total = _bit_sums(hashes), len(hashes)
    else:
        unique, counts = np.unique(hashes, return_counts=True)
        weights = np.minimum(counts, MAX_FEATURE_WEIGHT)
        sums, total = _bit_sums(unique, weights), int(weights.sum())
    return int.from_bytes(np.packbits(sums * 2 > total).tobytes(), "big")


def _bucket_counts(hashes: np.ndarray) -> np.ndarray:
    """Occurrences per value of the low 12 bits: an upper bound on each hash's count."""
    return np.bincount((hashes & np.uint64(0xFFF)).astype(np.intp), minlength=4096)


#: Bit k (most significant first) of each byte value, as a 256 × 8 matrix.
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(7, -1, -1)) & 1).astype(np.float64)
#: Where the counts of each byte of a uint64, in memory order, go: most significant first.
_BYTE_OFFSETS = 256 * np.arange(7, -1, -1) if np.little_endian else 256 * np.arange(8)


def _bit_sums(hashes: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """For each of the 64 bits (most significant first), the weight of the hashes that have it.

    One weighted count of each byte's values per byte position, times the bits of those
    values: exact integers (float64 sums of weights ≤ 255 stay below 2**53).
    """
    index = np.ascontiguousarray(hashes, dtype=np.uint64).view(np.uint8).reshape(-1, 8)
    repeated = None if weights is None else np.repeat(weights.astype(np.float64), 8)
    counts = np.bincount((index + _BYTE_OFFSETS).ravel(), weights=repeated, minlength=8 * 256)
    return (counts.reshape(8, 256).astype(np.float64) @ _BYTE_BITS).ravel()


def _weighted_simhash(hashes: np.ndarray, weights: np.ndarray) -> int:
    """Bit b is set when the features whose hash has bit b carry over half the weight."""
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8)).reshape(-1, 64)
    # float64 holds these integer sums exactly (< 2**53) and takes the BLAS path.
    sums = weights.astype(np.float64) @ bits.astype(np.float64)
    packed = np.packbits(sums * 2 > int(weights.sum())).tobytes()
    return int.from_bytes(packed, "big")


def simhash_of_features(features: dict[str, int]) -> int:
    """64-bit weighted SimHash of ``features`` (feature → positive weight).

    Bit *b* of the result is set when the weights of the features whose hash
    (:func:`feature_hash`) has bit *b* set add up to more than half of all weights — the rule
    of ``simhash.Simhash``.

    >>> simhash_of_features({})
    0
    """
    if not features:
        return 0
    digests = b"".join([feature_hash(f.encode("utf-8", "surrogatepass")) for f in features])
    hashes = np.frombuffer(digests, dtype=">u8").astype(np.uint64)
    weights = np.fromiter(features.values(), dtype=np.int64, count=len(features))
    return _weighted_simhash(hashes, weights)


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit SimHashes (0..64).

    >>> hamming(0b1011, 0b0001)
    2
    """
    return ((a ^ b) & 0xFFFF_FFFF_FFFF_FFFF).bit_count()


def simhash_band(value: int, band: int) -> int:
    """Band ``band`` (0 = most significant) of an unsigned 64-bit SimHash: 16 bits.

    By the pigeonhole principle, two 64-bit values within Hamming distance 3 differ in at
    most 3 of the 4 bands, so they agree on at least one (Manku, Jain, Das Sarma, WWW 2007).

    >>> [simhash_band(0x0123_4567_89AB_CDEF, b) for b in range(4)] == [
    ...     0x0123, 0x4567, 0x89AB, 0xCDEF]
    True
    """
    shift = SIMHASH_BAND_BITS * (SIMHASH_BANDS - 1 - band)
    return (value >> shift) & _BAND_MASK
