"""The pure part of sitemap reconciliation: classification, lastmod verdicts, digest tables."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changewatch.reconcile import LastmodTrust, StoredPage, classify, lastmod_verdict, site_host
from changewatch.reconcile.index import DigestTable
from changewatch.schedule import parse_duration
from changewatch.store.reconcile import lock_key

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def _page(last_seen: float, last_changed: float, previous: float | None = None) -> StoredPage:
    versions = 1 if previous is None else 2
    prev = None if previous is None else _at(previous)
    return StoredPage(
        b"\x01" * 16, "example.com", _at(last_seen), _at(last_changed), versions, prev
    )


def test_classify_kinds() -> None:
    """missing without a row; stale only when lastmod is strictly after last_seen."""
    page = _page(10, 5)
    assert classify(_at(1), None) == "missing"
    assert classify(None, None) == "missing"
    assert classify(None, page) == "fresh"
    assert classify(_at(10), page) == "fresh"
    assert classify(_at(10.01), page) == "stale"


@pytest.mark.parametrize(
    ("lastmod", "page", "verdict"),
    [
        (None, _page(10, 5, 3), None),
        (11, _page(10, 5, 3), None),  # after the last fetch: not observed yet
        (7, _page(10, 5, 3), "ahead"),  # moved, content the same from 5 to 10
        (10, _page(10, 5, 3), "ahead"),
        (4, _page(10, 5, 3), "agrees"),  # inside the change window (3, 5]
        (5, _page(10, 5, 3), "agrees"),
        (3, _page(10, 5, 3), "agrees"),
        (2, _page(10, 5, 3), "behind"),  # old content still seen at 3, after lastmod 2
        (2, _page(10, 5), None),  # one version, lastmod before the first fetch: nothing to judge
        (7, _page(10, 5), "ahead"),
    ],
)
def test_lastmod_verdicts(lastmod: float | None, page: StoredPage, verdict: str | None) -> None:
    """Each verdict follows the definition in docs/reconcile.md."""
    assert lastmod_verdict(None if lastmod is None else _at(lastmod), page) == verdict


def test_no_verdict_without_a_stored_page() -> None:
    """A missing page has no history to judge its lastmod by."""
    assert lastmod_verdict(_at(1), None) is None


def test_trust_ratio() -> None:
    """trust is agrees over comparable; None when nothing was comparable."""
    trust = LastmodTrust()
    assert trust.trust is None
    for verdict in ("agrees", "agrees", "ahead", "behind", None):
        trust.add(verdict)  # type: ignore[arg-type]
    assert (trust.comparable, trust.trust) == (4, 0.5)


@given(st.lists(st.integers(min_value=0, max_value=300), max_size=400), st.integers(1, 50))
def test_digest_table_matches_a_set(keys: list[int], batch: int) -> None:
    """add_many and contains_many agree with a Python set, repeats and batches included."""
    digests = [hashlib.blake2b(str(k).encode(), digest_size=16).digest() for k in keys]
    table, reference = DigestTable(), set()
    for start in range(0, len(digests), batch):
        part = digests[start : start + batch]
        expected = []
        for d in part:
            expected.append(d not in reference)
            reference.add(d)
        assert table.add_many(b"".join(part)).tolist() == expected
    assert len(table) == len(reference)
    probes = [*digests, hashlib.blake2b(b"absent", digest_size=16).digest()]
    assert table.contains_many(b"".join(probes)).tolist() == [d in reference for d in probes]


def test_digest_table_grows_and_survives_colliding_slots() -> None:
    """Digests sharing their low half all probe the same slot chain and stay distinct."""
    table = DigestTable()
    same_low = [i.to_bytes(8, "big") + b"\x00" * 8 for i in range(3000)]
    assert table.add_many(b"".join(same_low)).all()
    assert not table.add_many(b"".join(same_low)).any()
    assert len(table) == 3000
    assert table.nbytes >= 3000 * 17


def test_digest_table_refuses_partial_digests() -> None:
    """Input that is not whole 16-byte digests is a ValueError, not silent truncation."""
    with pytest.raises(ValueError, match="multiple of 16"):
        DigestTable().add_many(b"x" * 17)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30m", 1800), ("6h", 21600), ("1d", 86400), ("1h30m", 5400), ("1w", 604800)],
)
def test_durations(text: str, seconds: int) -> None:
    """--every takes the one duration grammar (s/m/h/d/w and combinations), as --older-than."""
    assert parse_duration(text, positive=True).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "6", "h", "six hours", "-1h", "1.5h", "0s"])
def test_bad_durations(text: str) -> None:
    """Anything else, or zero for an interval, is refused with a message saying how."""
    with pytest.raises(ValueError, match=r"duration"):
        parse_duration(text, positive=True)


def test_site_host_and_lock_key() -> None:
    """A site and its sitemap share the host, hence the lock."""
    assert site_host("https://EXAMPLE.com/") == site_host("https://example.com/sitemap.xml")
    assert site_host("http://127.0.0.1:8080/x.xml") == "127.0.0.1:8080"
    assert lock_key("example.com") != lock_key("example.org")
