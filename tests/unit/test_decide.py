"""The decision table and the batch's duplicate pool, without a database."""

from __future__ import annotations

import gc
import random
import time
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from changewatch.decide import (
    DuplicatePool,
    decide_new,
    decide_stored,
    nearest,
)
from changewatch.fingerprint import FINGERPRINT_VERSION, Fingerprint, fingerprint
from changewatch.values import Change, Decision, NearCandidate, Snapshot, Touch

NOW = datetime(2026, 3, 1, tzinfo=UTC)


class _Fetched:
    """A fetched page for the decision functions: hashes computed on demand, counted."""

    def __init__(self, html: str, url: str = "https://example.com/a") -> None:
        self.url = url
        self.digest = b"d" * 16
        self.fp = fingerprint(html, url=url)
        self.raw = self.fp.raw_sha256
        self.etag = None
        self.last_modified = None
        self.parsed = 0

    def content(self) -> bytes:
        self.parsed += 1
        return self.fp.content_sha256

    def fingerprint(self) -> Fingerprint:
        self.parsed += 1
        return self.fp

    def chrome(self) -> tuple[bytes, bytes] | None:
        return None if self.fp.binary else (self.fp.chrome_sha256, self.fp.links_sha256)

    def legacy_content(self, version: int) -> bytes | None:
        return None

    def redirect(self) -> str | None:
        self.parsed += 1
        return self.fp.redirect_to


def _snap(html: str, *, version: int = FINGERPRINT_VERSION) -> Snapshot:
    fp = fingerprint(html)
    return Snapshot(b"d" * 16, "u", fp.raw_sha256, fp.content_sha256, fp.simhash, version, 2, NOW)


def test_identical_bytes_are_unchanged_without_parsing() -> None:
    """Step 1: equal raw hashes decide ``unchanged`` (path raw) and parse nothing."""
    page = _Fetched("<p>same words here</p>")
    decision, write = decide_stored(page, _snap("<p>same words here</p>"), 3)
    assert (decision.kind, decision.path, decision.version) == ("unchanged", "raw", 2)
    assert isinstance(write, Touch)
    assert write.fp is None
    assert page.parsed == 0


def test_same_visible_text_is_unchanged_after_one_parse() -> None:
    """Step 2: other bytes, same normalised text: ``unchanged`` (path normalised)."""
    page = _Fetched("<p>same   words <!-- x --> here</p>")
    decision, write = decide_stored(page, _snap("<p>same words here</p>"), 3)
    assert (decision.kind, decision.path) == ("unchanged", "normalised")
    assert isinstance(write, Touch)


def test_other_text_is_minor_or_changed_by_distance() -> None:
    """Step 4: the SimHash distance decides minor (≤ the bound) or changed; a Change write."""
    words = " ".join(f"w{i}" for i in range(300))
    page = _Fetched(f"<p>{words} extra</p>")
    decision, write = decide_stored(page, _snap(f"<p>{words}</p>"), 64)
    assert (decision.kind, decision.path, decision.version) == ("minor", "simhash", 3)
    assert isinstance(write, Change)
    assert write.kind == "minor"
    decision, _ = decide_stored(page, _snap(f"<p>{words}</p>"), 0)
    assert decision.kind == "changed" or decision.distance == 0


def test_older_rules_with_same_bytes_are_rekeyed() -> None:
    """Same bytes under older fingerprint rules: unchanged, path refingerprint, new fp kept."""
    page = _Fetched("<p>same words here</p>")
    snap = _snap("<p>same words here</p>", version=FINGERPRINT_VERSION - 1)
    decision, write = decide_stored(page, snap, 3)
    assert (decision.kind, decision.path) == ("unchanged", "refingerprint")
    assert isinstance(write, Touch)
    assert write.fp is page.fp


def test_new_page_inserts_version_one() -> None:
    """A page the store does not hold is new, with the row to insert."""
    page = _Fetched("<p>hello world</p>")
    decision, write = decide_new(page, "example.com", page.url, 2)
    assert (decision.kind, decision.path, write.host, write.canon_version) == (
        "new",
        "new",
        "example.com",
        2,
    )


def _decision(digest: bytes, simhash: int, content: bytes) -> Decision:
    return Decision("new", "u", digest, content, simhash)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.binary(min_size=2, max_size=2), st.integers(0, 15), st.sampled_from("abc")),
        min_size=1,
        max_size=40,
        unique_by=lambda row: row[0],  # a URL is new once: repeats are decided in later rounds
    ),
    st.integers(0, 3),
)
def test_duplicate_pool_equals_a_scan_of_every_candidate(
    rows: list[tuple[bytes, int, str]], radius: int
) -> None:
    """The pool names what a pairwise scan would: the content holder with the smallest
    digest, else the nearest page within the radius (ties by digest), as pages join."""
    base = 0xF0F0_F0F0_0F0F_0F0F
    pool = DuplicatePool([], radius)
    held: dict[bytes, tuple[int, bytes]] = {}
    for digest, flips, content_key in rows:
        simhash = base ^ ((1 << flips) - 1)  # 0..15 low bits flipped: distances of 0..15
        content = content_key.encode() * 32
        query = _decision(digest, simhash, content)
        holders = sorted(d for d, (_, c) in held.items() if c == content)
        if holders:
            expected: str | None = holders[0].hex()
        else:
            found = nearest(
                simhash,
                [NearCandidate(d, d.hex(), s, c) for d, (s, c) in held.items()],
                radius,
                digest,
                1,
            )
            expected = found[0].url if found else None
        assert pool.duplicate_of(query, textless=False) == expected
        pool.replace(digest, digest.hex(), simhash, content)
        held[digest] = (simhash, content)


def _cluster_batch(n: int, rng: random.Random) -> float:
    """Seconds for the pool to answer and absorb ``n`` pages of one template: SimHashes
    about 16 bits apart, so every page shares bands with a hundred others but none is near."""
    template = rng.getrandbits(64)
    pages = []
    for i in range(n):
        noise = 0
        for bit in rng.sample(range(64), 8):
            noise |= 1 << bit
        pages.append((i.to_bytes(16, "big"), template ^ noise, rng.randbytes(32)))
    gc.collect()
    gc.disable()  # a collection pause is not the pool's cost (it made a 4x batch read 8x)
    try:
        started = time.perf_counter()
        pool = DuplicatePool([], 3)
        for digest, simhash, content in pages:
            pool.duplicate_of(_decision(digest, simhash, content), textless=False)
            pool.replace(digest, digest.hex(), simhash, content)
        return time.perf_counter() - started
    finally:
        gc.enable()


def test_a_batch_of_template_pages_costs_linear_time() -> None:
    """Four times the pages of one template cost about four times as long, not sixteen (the
    pairwise scan it replaced took 6.4 s at 10,000 pages and 90 s at 40,000)."""
    rng = random.Random(7)
    small = min(_cluster_batch(2_000, rng) for _ in range(5))
    large = min(_cluster_batch(8_000, rng) for _ in range(5))
    assert large / small < 8, (small, large)


_STUB = (
    '<html><head><title>Redirecting</title><meta http-equiv="refresh" '
    'content="0; url=https://example.com/a/"></head><body><p>You should be redirected '
    'quickly, if not <a href="https://example.com/a/">click here</a>.</p></body></html>'
)
_PAGE = "<main><p>The terms of service say what you may do with the service.</p></main>"


def test_a_redirect_stub_in_place_of_a_stored_page_keeps_the_stored_version() -> None:
    """A meta-refresh stub is an HTTP redirect in a body: ``unchanged`` (path ``redirect``)
    with its target named, and the touch keeps the stored raw hash and validators, so that
    the page's return is a raw hit and no 304 is ever answered for the stub."""
    snap = _snap(_PAGE)
    decision, write = decide_stored(_Fetched(_STUB), snap, 3)
    assert (decision.kind, decision.path) == ("unchanged", "redirect")
    assert decision.redirect_to == "https://example.com/a/"
    assert decision.content_sha256 == snap.content_sha256
    assert not decision
    assert isinstance(write, Touch)
    assert (write.raw_sha256, write.etag, write.last_modified, write.fp) == (
        snap.raw_sha256,
        None,
        None,
        None,
    )


def test_a_new_redirect_stub_is_new_with_its_target() -> None:
    decision, _ = decide_new(_Fetched(_STUB), "example.com", "https://example.com/a", 1)
    assert (decision.kind, decision.path) == ("new", "redirect")
    assert decision.redirect_to == "https://example.com/a/"


def test_a_refresh_that_reloads_the_page_or_fires_late_is_content() -> None:
    """A refresh to the page itself, without a URL, or after more than 5 seconds is no
    redirect: the page's text is compared as any page's is."""
    for content in ("0; url=https://example.com/a", "30", "60; url=/elsewhere"):
        html = f'<meta http-equiv="refresh" content="{content}"><p>Live scores of tonight</p>'
        decision, write = decide_stored(_Fetched(html), _snap(_PAGE), 3)
        assert decision.kind == "changed", content
        assert decision.redirect_to is None
        assert isinstance(write, Change)


def test_a_stored_stub_seen_again_with_other_bytes_still_names_its_target() -> None:
    """A stub stored as a new page's first version, fetched again with other bytes but the
    same text: unchanged, path ``redirect``, the target named."""
    other = _STUB.replace("<title>", "<!-- build 2 --><title>")
    decision, _ = decide_stored(_Fetched(other), _snap(_STUB), 3)
    assert (decision.kind, decision.path) == ("unchanged", "redirect")
    assert decision.redirect_to == "https://example.com/a/"
