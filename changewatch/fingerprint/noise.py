"""Learning a host's noise from its re-fetches — pure functions over block lists, no I/O.

A block that changes on most re-fetches of a host's pages while their prose does not — a
counter, a rotating "related" list, a banner that comes and goes — is noise for that host.
:func:`learn_noise` reads consecutive fingerprints of pages (their ``blocks``, from
``fingerprint(..., with_blocks=True)``) and returns the block keys and shapes to pass back as
``volatile_blocks``. Only learnable blocks are ever learned (:class:`~changewatch.fingerprint.
regions.Block`: never prose, never inside an explicit main marker), and a step counts only
when the page's prose stayed the same, so learned noise can never hide a change to main
content. The orchestration stores what is learned (per host, versioned) and can reset it.

Two kinds of rule, each a blake2b-64 value :func:`~changewatch.fingerprint.fingerprint` knows:

- a block **key** (structural path and ordinal) whose text changed while the block stayed:
  a counter, a rotating list;
- a block **shape** (its text with digits made 0) that appeared or disappeared: a banner that
  flips on and off (its key is no use: when it is absent, the next block takes its place).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from changewatch.fingerprint.regions import Block

__all__ = [
    "DEFAULT_MIN_NOISE_OBSERVATIONS",
    "DEFAULT_MIN_NOISE_SHARE",
    "NoiseRule",
    "learn_noise",
    "noise_observations",
]

#: Steps a rule must be seen in before it is learned.
DEFAULT_MIN_NOISE_OBSERVATIONS = 10
#: Share of those steps in which it must have changed.
DEFAULT_MIN_NOISE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class NoiseRule:
    """What was seen of one block key or shape: ``kind`` ``"key"`` or ``"shape"``, the
    steps it was seen in (``observations``) and those in which it changed (``changes``);
    ``path``: the structural path of a block it was seen on (for people reading rules)."""

    value: bytes
    kind: str
    observations: int
    changes: int
    path: str = ""

    def learned(self, min_observations: int, min_share: float) -> bool:
        """Whether the rule has been seen often enough and changed often enough.

        >>> NoiseRule(b"k" * 8, "key", 20, 12).learned(10, 0.5)
        True
        >>> NoiseRule(b"k" * 8, "key", 5, 5).learned(10, 0.5)
        False
        """
        return self.observations >= min_observations and self.changes >= min_share * (
            self.observations
        )


def _prose(blocks: Sequence[Block]) -> list[bytes]:
    return [b.text_hash for b in blocks if not b.learnable]


def noise_observations(steps: Iterable[tuple[Sequence[Block], Sequence[Block]]]) -> list[NoiseRule]:
    """Count, over ``steps`` (each a page's blocks before and after one re-fetch), how often
    each learnable block key and shape was seen and changed.

    A step whose unlearnable blocks (prose, the explicit main content) changed is a content
    change, not evidence of noise: it is skipped. In the others, a key present on both sides
    counts as seen, and as changed when its text differs; a shape present on either side
    counts as seen, and as changed when it is on one side only.
    """
    seen: Counter[tuple[str, bytes]] = Counter()
    changed: Counter[tuple[str, bytes]] = Counter()
    paths: dict[tuple[str, bytes], str] = {}
    for before, after in steps:
        if _prose(before) != _prose(after):
            continue
        old = {b.key: b for b in before if b.learnable}
        new = {b.key: b for b in after if b.learnable}
        for key in old.keys() & new.keys():
            seen["key", key] += 1
            changed["key", key] += old[key].text_hash != new[key].text_hash
            paths.setdefault(("key", key), new[key].path)
        old_shapes = {b.shape: b.path for b in old.values()}
        new_shapes = {b.shape: b.path for b in new.values()}
        for shape in old_shapes.keys() | new_shapes.keys():
            seen["shape", shape] += 1
            changed["shape", shape] += (shape in old_shapes) != (shape in new_shapes)
            paths.setdefault(("shape", shape), new_shapes.get(shape) or old_shapes[shape])
    return [
        NoiseRule(value, kind, count, changed[kind, value], paths[kind, value])
        for (kind, value), count in sorted(seen.items())
    ]


def learn_noise(
    steps: Iterable[tuple[Sequence[Block], Sequence[Block]]],
    *,
    min_observations: int = DEFAULT_MIN_NOISE_OBSERVATIONS,
    min_share: float = DEFAULT_MIN_NOISE_SHARE,
) -> frozenset[bytes]:
    """The block keys and shapes learned as noise from ``steps`` (:func:`noise_observations`),
    to pass as ``fingerprint(..., volatile_blocks=...)`` for the same host."""
    if min_observations < 1 or not 0 < min_share <= 1:
        raise ValueError(
            f"min_observations must be >= 1 and min_share in (0, 1], got "
            f"{min_observations!r} and {min_share!r}"
        )
    return frozenset(
        rule.value
        for rule in noise_observations(steps)
        if rule.learned(min_observations, min_share)
    )
