"""The decision table of ``should_parse`` — pure functions over values, no I/O.

What one fetched page means, given what the store holds of it (DESIGN.md, "One page, end
to end"), cheapest step first:

1. raw-bytes SHA-256 equals the stored one → ``unchanged`` (path ``raw``; no HTML parsed);
2. normalised-text SHA-256 equals the stored one → ``unchanged`` (path ``normalised``; the
   new raw hash is kept, so the next identical re-render takes step 1);
3. no stored row → ``new`` (:class:`DuplicatePool` names another URL with the same content,
   else the nearest page within the minor distance);
4. a redirect stub (a meta refresh to another URL, :mod:`changewatch.fingerprint.refresh`)
   → ``unchanged`` (path ``redirect``), the stored version kept as it was;
5. SimHash Hamming distance ≤ ``minor_distance`` → ``minor``, otherwise ``changed`` (a binary
   body has no SimHash: other bytes are always ``changed``, path ``binary``, no distance).

A row fingerprinted under older rules (``fingerprint_version``) cannot be compared by the
new content hash. If the page's bytes equal the stored raw hash, or its content hash under
the row's own rules (versions 2 and 3: :mod:`changewatch.fingerprint.legacy`) equals the
stored one, it is ``unchanged`` (path ``refingerprint``) and the row is re-keyed to the new
rules — never a spurious change; otherwise the SimHash distance decides as in step 5.

The orchestration (:mod:`changewatch.watch`) looks the snapshots up, asks these functions,
and writes what they return: lookup → decide → write.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from changewatch.fingerprint import FINGERPRINT_VERSION, Fingerprint, hamming
from changewatch.fingerprint.simhash64 import MAX_NEAR_DISTANCE, SIMHASH_BANDS, simhash_band
from changewatch.values import (
    Change,
    ChromeState,
    Decision,
    DecisionKind,
    DecisionPath,
    NearCandidate,
    NearDuplicate,
    NewPage,
    RawHit,
    Snapshot,
    Touch,
)

__all__ = [
    "DEFAULT_NEAR_LIMIT",
    "MAX_NEAR_DISTANCE",
    "DuplicatePool",
    "FetchedPage",
    "check_near_distance",
    "check_near_limit",
    "check_simhash",
    "decide_hit",
    "decide_new",
    "decide_stored",
    "nearest",
    "reverted_to",
]

#: Results returned by a near-duplicate search unless asked otherwise.
DEFAULT_NEAR_LIMIT = 100


class FetchedPage(Protocol):
    """A fetched page as the decision sees it; ``content`` and ``fingerprint`` are computed
    on first need (parsing the HTML), so the raw path never parses."""

    url: str
    digest: bytes
    raw: bytes
    etag: str | None
    last_modified: str | None

    def content(self) -> bytes:
        """The SHA-256 of the page's normalised content."""
        ...

    def fingerprint(self) -> Fingerprint:
        """The page's whole fingerprint."""
        ...

    def chrome(self) -> tuple[bytes, bytes] | None:
        """The page's chrome and outlinks hashes (``None`` for a binary body)."""
        ...

    def legacy_content(self, version: int) -> bytes | None:
        """The page's content hash under an older ``fingerprint_version``'s rules, or
        ``None`` when those rules are not known (or the body is binary)."""
        ...

    def redirect(self) -> str | None:
        """Where the page sends its reader if it is a redirect stub, else ``None``."""
        ...


def decide_new(
    page: FetchedPage, host: str, url: str | None, canon_version: int
) -> tuple[Decision, NewPage]:
    """A page the store does not hold: ``new``, and the row to insert (``url`` as kept by the
    URL-storage policy). ``duplicate_of`` is filled in later, by a :class:`DuplicatePool`.
    A binary body's path is ``binary`` (it was hashed as bytes, not parsed)."""
    fp = page.fingerprint()
    write = NewPage(page.digest, host, url, canon_version, fp, page.etag, page.last_modified)
    path: DecisionPath = "binary" if fp.binary else "redirect" if fp.redirect_to else "new"
    decision = Decision(
        "new",
        page.url,
        page.digest,
        fp.content_sha256,
        fp.simhash,
        path=path,
        redirect_to=fp.redirect_to,
    )
    return decision, write


def decide_stored(
    page: FetchedPage, snap: Snapshot, minor_distance: int
) -> tuple[Decision, Touch | Change]:
    """A page the store holds (``snap``): the decision and the write it needs (module
    docstring, steps 1, 2, 4 and 5, and the re-fingerprint rule)."""
    same_rules = snap.fingerprint_version == FINGERPRINT_VERSION
    if snap.raw_sha256 == page.raw and same_rules:
        return _unchanged(page, snap, "raw"), _touch(page, snap)
    if not same_rules and (
        snap.raw_sha256 == page.raw
        or page.legacy_content(snap.fingerprint_version) == snap.content_sha256
    ):
        # Same bytes, or the same content by the row's own rules: unchanged; re-key the
        # row to the new rules.
        fp = page.fingerprint()
        state = chrome_state(page, snap)
        chrome_changed, links_changed = _flags(state)
        decision = Decision(
            "unchanged",
            page.url,
            page.digest,
            fp.content_sha256,
            fp.simhash,
            distance=0,
            path="refingerprint",
            version=snap.version_count,
            chrome_changed=chrome_changed,
            links_changed=links_changed,
        )
        return decision, _touch(page, snap, fp, state)
    if same_rules and page.content() == snap.content_sha256:
        # Only noise or the chrome changed: unchanged for the crawler, the chrome and
        # outlinks flags say what else moved (and are stored for the analyst).
        state = chrome_state(page, snap)
        chrome_changed, links_changed = _flags(state)
        target = page.redirect()
        decision = dataclasses.replace(
            _unchanged(page, snap, "redirect" if target else "normalised"),
            chrome_changed=chrome_changed,
            links_changed=links_changed,
            redirect_to=target,
        )
        return decision, _touch(page, snap, state=state)
    target = page.redirect()
    if target is not None:
        return _redirected(page, snap, target)
    fp = page.fingerprint()
    state = chrome_state(page, snap)
    chrome_changed, links_changed = _flags(state)
    # A binary body has no SimHash: other bytes are a change, at no distance (path "binary").
    distance = None if fp.binary else hamming(fp.simhash, snap.simhash)
    kind: DecisionKind = (
        "minor" if distance is not None and distance <= minor_distance else "changed"
    )
    change = Change(
        page.digest,
        snap.version_count,
        fp,
        kind,
        distance,
        snap.last_seen,
        page.etag,
        page.last_modified,
        host=snap.host,
        chrome=state,
    )
    decision = Decision(
        kind,
        page.url,
        page.digest,
        fp.content_sha256,
        fp.simhash,
        distance=distance,
        path="binary" if fp.binary else "simhash",
        version=snap.version_count + 1,
        chrome_changed=chrome_changed,
        links_changed=links_changed,
    )
    return decision, change


def _redirected(page: FetchedPage, snap: Snapshot, target: str) -> tuple[Decision, Touch]:
    """A redirect stub in place of the stored page: as for an HTTP redirect, the stored
    version stays as it was — its raw hash too, so that the page's return is a raw hit, and
    no validators, so that the next fetch is not answered 304 for the stub."""
    decision = dataclasses.replace(_unchanged(page, snap, "redirect"), redirect_to=target)
    return decision, Touch(page.digest, snap.version_count, snap.raw_sha256)


def chrome_state(page: FetchedPage, snap: Snapshot) -> ChromeState | None:
    """The page's chrome and outlinks hashes beside the stored ones: each "changed" only when
    a stored hash differs (a row without them — older rules, a binary body — changes nothing).
    ``None`` for a binary body."""
    hashes = page.chrome()
    if hashes is None:
        return None
    chrome, links = hashes
    return ChromeState(
        chrome,
        links,
        chrome_changed=snap.chrome_sha256 is not None and snap.chrome_sha256 != chrome,
        links_changed=snap.links_sha256 is not None and snap.links_sha256 != links,
    )


def _flags(state: ChromeState | None) -> tuple[bool, bool]:
    """``(chrome_changed, links_changed)`` of a state (both false without one)."""
    if state is None:
        return False, False
    return state.chrome_changed, state.links_changed


def _unchanged(page: FetchedPage, snap: Snapshot, path: DecisionPath) -> Decision:
    return Decision(
        "unchanged",
        page.url,
        page.digest,
        snap.content_sha256,
        snap.simhash,
        distance=0,
        path=path,
        version=snap.version_count,
    )


def _touch(
    page: FetchedPage,
    snap: Snapshot,
    fp: Fingerprint | None = None,
    state: ChromeState | None = None,
) -> Touch:
    return Touch(
        page.digest,
        snap.version_count,
        page.raw,
        page.etag,
        page.last_modified,
        fp=fp,
        chrome=state,
    )


def decide_hit(url: str, digest: bytes, hit: RawHit, path: DecisionPath = "raw") -> Decision:
    """The answer of the one-statement paths: the stored version was counted again (its raw
    hash matched: path ``raw``; or the server said 304: path ``not-modified``)."""
    return Decision(
        "unchanged",
        url,
        digest,
        hit.content_sha256,
        hit.simhash,
        distance=0,
        path=path,
        version=hit.version_count,
    )


def reverted_to(content: bytes, recent: Sequence[tuple[int, bytes]]) -> int | None:
    """The newest earlier version with this content hash, or ``None`` (a flip-flop's target).

    >>> reverted_to(b"a", [(3, b"b"), (2, b"a"), (1, b"a")])
    2
    >>> reverted_to(b"c", [(1, b"a")]) is None
    True
    """
    for number, earlier in recent:
        if earlier == content:
            return number
    return None


# -- near duplicates -----------------------------------------------------------------------------


def check_near_distance(max_distance: int) -> None:
    """Refuse a distance the band index cannot answer completely (4 bands of 16 bits: two
    SimHashes within distance 3 agree exactly on at least one band; past 3 they may not).

    >>> check_near_distance(3)
    >>> check_near_distance(4)
    Traceback (most recent call last):
    ...
    ValueError: max_distance must be between 0 and 3 (4 bands of 16 bits find every match only up to distance 3), got 4
    """  # noqa: E501
    if isinstance(max_distance, bool) or not isinstance(max_distance, int):
        raise TypeError(f"max_distance must be an int, not {type(max_distance).__name__}")
    if not 0 <= max_distance <= MAX_NEAR_DISTANCE:
        raise ValueError(
            f"max_distance must be between 0 and {MAX_NEAR_DISTANCE} ({SIMHASH_BANDS} bands of "
            f"{64 // SIMHASH_BANDS} bits find every match only up to distance "
            f"{MAX_NEAR_DISTANCE}), got {max_distance}"
        )


def check_near_limit(limit: int) -> None:
    """Refuse a result limit that is not a non-negative int.

    >>> check_near_limit(0)
    >>> check_near_limit(-1)
    Traceback (most recent call last):
    ...
    ValueError: limit must be 0 or more, got -1
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, not {type(limit).__name__}")
    if limit < 0:
        raise ValueError(f"limit must be 0 or more, got {limit}")


def check_simhash(value: int) -> None:
    """Refuse anything but an unsigned 64-bit integer."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"simhash must be an int, not {type(value).__name__}")
    if not 0 <= value < 1 << 64:
        raise ValueError(f"simhash must be an unsigned 64-bit integer, got {value}")


def nearest(
    simhash: int,
    candidates: Iterable[NearCandidate],
    max_distance: int,
    exclude_digest: bytes | None = None,
    limit: int = DEFAULT_NEAR_LIMIT,
) -> list[NearDuplicate]:
    """The candidates within ``max_distance`` of ``simhash``, nearest first (then by digest).

    >>> nearest(0b1010, [NearCandidate(b"b", "u", 0b1000), NearCandidate(b"a", None, 0)], 2)
    [NearDuplicate(url_digest=b'b', url='u', distance=1), NearDuplicate(url_digest=b'a', url=None, distance=2)]
    """  # noqa: E501
    found = [
        NearDuplicate(c.url_digest, c.url, d)
        for c in candidates
        if c.url_digest != exclude_digest and (d := hamming(simhash, c.simhash)) <= max_distance
    ]
    found.sort(key=lambda n: (n.distance, n.url_digest))
    return found[:limit]


class _Holders:
    """The pages holding one content hash (or one SimHash), with the smallest digest kept at
    hand: adding is O(1), the smallest is O(1) until it is removed."""

    __slots__ = ("least", "names")

    def __init__(self) -> None:
        self.names: dict[bytes, str] = {}
        self.least: bytes | None = None

    def add(self, digest: bytes, name: str) -> None:
        self.names[digest] = name
        if self.least is None or digest < self.least:
            self.least = digest

    def remove(self, digest: bytes) -> None:
        if self.names.pop(digest, None) is not None and digest == self.least:
            self.least = min(self.names) if self.names else None


class _Bucket:
    """The SimHashes sharing one band value, in a growable ``uint64`` array, so a query
    measures its distance to all of them in one vectorised step. Removed values stay in the
    array; the pool checks that what a bucket returns is still held."""

    __slots__ = ("n", "values")

    def __init__(self) -> None:
        self.values = np.empty(4, dtype=np.uint64)
        self.n = 0

    def add(self, simhash: int) -> None:
        if self.n == len(self.values):
            self.values = np.concatenate((self.values, np.empty_like(self.values)))
        self.values[self.n] = simhash
        self.n += 1

    def within(self, simhash: int, radius: int) -> npt.NDArray[np.uint64]:
        """The values within ``radius`` bits of ``simhash``."""
        values = self.values[: self.n]
        near: npt.NDArray[np.uint64] = values[
            np.bitwise_count(values ^ np.uint64(simhash)) <= radius
        ]
        return near


class DuplicatePool:
    """The candidates of a batch's new pages: who else holds a content or a near SimHash.

    Filled from the stored rows the batch's lookup found (:class:`NearCandidate`), then
    updated with the pages decided earlier in the batch (:meth:`replace`), so a batch answers
    as one-by-one calls would. Exact content holders are kept per content hash (a dict
    lookup); near ones per SimHash band value (:class:`_Bucket`: one vectorised distance
    over the pages sharing a band), so no question compares Python objects pairwise and a
    batch of any size costs work linear in its pages (plus, in numpy, in the pages that share
    a band — many for a cluster of template pages, each a few nanoseconds).
    """

    def __init__(self, candidates: Iterable[NearCandidate], radius: int) -> None:
        self.radius = min(radius, MAX_NEAR_DISTANCE)
        self._exact: dict[bytes, _Holders] = {}
        self._by_simhash: dict[int, _Holders] = {}
        self._bands: list[dict[int, _Bucket]] = [{} for _ in range(SIMHASH_BANDS)]
        self._of: dict[bytes, tuple[bytes, int]] = {}
        for c in candidates:
            self.replace(c.url_digest, c.url or c.url_digest.hex(), c.simhash, c.content_sha256)

    def duplicate_of(self, decision: Decision, *, textless: bool) -> str | None:
        """For a new page: the holder of its content with the smallest digest, else (for a
        page with text) the nearest page within the radius (ties by smallest digest)."""
        holders = self._exact.get(decision.content_sha256)
        if holders is not None and holders.least is not None:
            return holders.names[holders.least]
        if textless:
            return None
        best: tuple[int, bytes, str] | None = None
        for value in self._near_simhashes(decision.simhash):
            group = self._by_simhash.get(value)
            if group is None:
                continue  # removed since it was added to a bucket
            digest = group.least
            if digest == decision.url_digest:  # never the page itself
                others = [d for d in group.names if d != digest]
                digest = min(others) if others else None
            distance = hamming(decision.simhash, value)
            if digest is not None and (best is None or (distance, digest) < best[:2]):
                best = (distance, digest, group.names[digest])
        return None if best is None else best[2]

    def replace(self, digest: bytes, name: str, simhash: int, content: bytes) -> None:
        """Make ``digest`` a candidate with this content and SimHash (dropping what it held)."""
        old = self._of.get(digest)
        if old is not None:
            self._exact[old[0]].remove(digest)
            held = self._by_simhash[old[1]]
            held.remove(digest)
            if not held.names:
                del self._by_simhash[old[1]]
        self._exact.setdefault(content, _Holders()).add(digest, name)
        group = self._by_simhash.get(simhash)
        if group is None:
            group = self._by_simhash[simhash] = _Holders()
            for band, index in enumerate(self._bands):
                key = simhash_band(simhash, band)
                bucket = index.get(key)
                if bucket is None:
                    bucket = index[key] = _Bucket()
                bucket.add(simhash)
        group.add(digest, name)
        self._of[digest] = (content, simhash)

    def _near_simhashes(self, simhash: int) -> set[int]:
        found: set[int] = set()
        for band, index in enumerate(self._bands):
            bucket = index.get(simhash_band(simhash, band))
            if bucket is not None:
                found.update(bucket.within(simhash, self.radius).tolist())
        return found
