"""How a Redis Bloom filter is cut into bitmap keys spread over cluster slots."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from changewatch.bloom import DEFAULT_BLOOM_CAPACITY, DEFAULT_BLOOM_ERROR_RATE, bloom_size

__all__ = [
    "DEFAULT_BLOOM_CAPACITY",
    "DEFAULT_BLOOM_ERROR_RATE",
    "LAYOUT_VERSION",
    "BlockLayout",
    "block_positions",
    "block_tags",
    "bloom_block_layout",
]

MIN_BLOCKS = 16  # enough keys to spread over a cluster's nodes
MAX_BLOCKS = 1024  # block_tags searches ~blocks tags per block
TARGET_BLOCK_BITS = 64 * 1024 * 1024 * 8  # 64 MiB a key, well under Redis's 512 MB strings
MAX_BLOCK_BITS = 2**32 - 1  # highest SETBIT/BITFIELD offset + 1 (512 MB)
LAYOUT_VERSION = "1"  # bumped whenever a digest's block or bit positions would change


# --- the layout maths -------------------------------------------------------------------


@dataclass(frozen=True)
class BlockLayout:
    """How a Redis Bloom filter is cut into bitmap keys."""

    blocks: int
    bits_per_block: int
    hashes: int

    @property
    def bits(self) -> int:
        """All bits of the filter."""
        return self.blocks * self.bits_per_block

    @property
    def nbytes(self) -> int:
        """Bytes of the bitmaps once every block is written to its end."""
        return self.blocks * ((self.bits_per_block + 7) // 8)


def bloom_block_layout(capacity: int, error_rate: float, blocks: int | None = None) -> BlockLayout:
    """Blocks, bits per block and hashes of a filter for ``capacity`` URLs at ``error_rate``.

    ``m, k = bloom_size(n, p)``; ``blocks = max(16, ⌈m / 2²⁹⌉)`` unless given (64 MiB keys);
    ``bits_per_block`` is the least ``b ≥ ⌈m / blocks⌉`` coprime with ``blocks``, so the block
    (``h1 mod blocks``) and the first bit (``h1 mod b``) are independent (Chinese remainders).

    >>> bloom_block_layout(1_000_000, 0.01)
    BlockLayout(blocks=16, bits_per_block=599067, hashes=7)
    """
    bits, hashes, _ = bloom_size(capacity, error_rate)
    if blocks is None:
        blocks = min(MAX_BLOCKS, max(MIN_BLOCKS, -(-bits // TARGET_BLOCK_BITS)))
    if not 1 <= blocks <= MAX_BLOCKS:
        raise ValueError(f"blocks must be between 1 and {MAX_BLOCKS}, got {blocks}")
    per_block = -(-bits // blocks)
    while math.gcd(per_block, blocks) != 1:
        per_block += 1
    if per_block > MAX_BLOCK_BITS:
        raise ValueError(
            f"{bits} bits in {blocks} blocks is over Redis's {MAX_BLOCK_BITS}-bit strings: "
            "use more blocks or a smaller capacity"
        )
    return BlockLayout(blocks, per_block, hashes)


def block_tags(key: str, blocks: int) -> list[str]:
    """The hash tag of each block: block ``b``'s in cluster slots ``[b·S/blocks, (b+1)·S/blocks)``.

    ``S = 16384``. Tag ``b`` is ``f"{key}:{b}"``, or ``f"{key}:{b}.{salt}"`` with the least
    ``salt`` whose CRC16 slot is in the block's range, so consecutive blocks sit on evenly
    spread slots and every node of a cluster holds its share.

    >>> [key_slot(t.encode()) for t in block_tags("crawl", 4)]
    [3205, 7027, 8933, 13587]
    """
    tags = []
    for block in range(blocks):
        low = block * REDIS_CLUSTER_HASH_SLOTS // blocks
        high = (block + 1) * REDIS_CLUSTER_HASH_SLOTS // blocks
        tag, salt = f"{key}:{block}", 0
        while not low <= key_slot(tag.encode()) < high:
            salt += 1
            tag = f"{key}:{block}.{salt}"
        tags.append(tag)
    return tags


def block_positions(digests: Sequence[bytes], layout: BlockLayout) -> tuple[np.ndarray, np.ndarray]:
    """Each digest's block and its ``k`` bit positions inside that block.

    The block is ``h1 mod blocks``; positions are :func:`changewatch.bloom.positions` over
    ``bits_per_block`` (Kirsch–Mitzenmacher, ``(h1 + i·h2) mod 2⁶⁴ mod b``), vectorised.

    >>> blocks, bits = block_positions([bytes(range(16))], BlockLayout(16, 1001, 3))
    >>> int(blocks[0]), bits[0].tolist()
    (7, [426, 87, 749])
    """
    halves = np.frombuffer(b"".join(digests), dtype=">u8").reshape(-1, 2).astype(np.uint64)
    h1 = halves[:, 0]
    h2 = halves[:, 1] | np.uint64(1)
    steps = np.arange(layout.hashes, dtype=np.uint64)
    with np.errstate(over="ignore"):
        combined = h1[:, np.newaxis] + steps[np.newaxis, :] * h2[:, np.newaxis]
    return h1 % np.uint64(layout.blocks), combined % np.uint64(layout.bits_per_block)
