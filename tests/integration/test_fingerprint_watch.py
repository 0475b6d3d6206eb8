"""Fingerprint rules through ChangeWatch on a SQLite store: size limits, binary bodies,
per-host fingerprint policies."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from changewatch import ChangeWatch, FingerprintPolicy, PageTooLargeError

PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj"
BINARY_BODIES = {"pdf": PDF}


def test_bad_input_50mb_refused_before_parsing(tmp_path: Path) -> None:
    """A 50 MB page is refused above max_page_bytes (PageTooLargeError), nothing written."""
    watch = ChangeWatch(f"sqlite:///{tmp_path}/cw.db", seen_url="memory:")
    try:
        page = b"<p>" + b"x" * (50 * 1024 * 1024) + b"</p>"
        start = time.perf_counter()
        with pytest.raises(PageTooLargeError) as info:
            watch.should_parse("https://example.com/huge", page)
        assert time.perf_counter() - start < 2  # no parse of 50 MB happened
        assert info.value.limit == watch.max_page_bytes < len(page)
        assert watch.history("https://example.com/huge") == []
    finally:
        watch.close()


def test_binary_body_through_should_parse(tmp_path: Path) -> None:
    """A PDF is new, unchanged on the same bytes, changed on other bytes (never minor)."""
    watch = ChangeWatch(f"sqlite:///{tmp_path}/cw.db", seen_url="memory:")
    try:
        url = "https://example.com/report.pdf"
        first = watch.should_parse(url, BINARY_BODIES["pdf"])
        assert first.kind == "new"
        assert first.content_sha256 == hashlib.sha256(BINARY_BODIES["pdf"]).digest()
        assert watch.should_parse(url, BINARY_BODIES["pdf"]).kind == "unchanged"
        changed = watch.should_parse(url, BINARY_BODIES["pdf"] + b"2 0 obj")
        assert changed.kind == "changed"
        image = watch.should_parse("https://example.com/a", b"<p>x</p>", content_type="image/png")
        assert image.simhash == 0
    finally:
        watch.close()


def test_change_watch_applies_fingerprint_policy(tmp_path: Path) -> None:
    """ChangeWatch passes its fingerprint_policy, per host, to normalisation."""
    policy = FingerprintPolicy(hosts={"example.com": FingerprintPolicy(ignore=(".ad",))})
    watch = ChangeWatch(
        f"sqlite:///{tmp_path}/cw.db", seen_url="memory:", fingerprint_policy=policy
    )
    try:
        url = "https://example.com/p"
        assert watch.should_parse(url, '<p>Story</p><p class="ad">one</p>').kind == "new"
        again = watch.should_parse(url, '<p>Story</p><p class="ad">two</p>')
        assert (again.kind, again.path) == ("unchanged", "normalised")
        other = "https://example.org/p"
        watch.should_parse(other, '<p>Story</p><p class="ad">one</p>')
        assert watch.should_parse(other, '<p>Story</p><p class="ad">two</p>').kind != "unchanged"
    finally:
        watch.close()
