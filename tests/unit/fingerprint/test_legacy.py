"""Version 3's content hash, frozen for the upgrade of stored rows (fingerprint.legacy)."""

from __future__ import annotations

import pytest

from changewatch.fingerprint import FingerprintPolicy
from changewatch.fingerprint.legacy import LEGACY_VERSIONS, content_sha256_v3, normalise_v3

#: The golden vectors version 3 pinned (page → normalised text, content_sha256 hex).
V3_GOLDEN = {
    "<p>Hello, World</p>": (
        "hello, world",
        "09ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b",
    ),
    (
        "<html><head><title>Changewatch</title></head><body><h1>Release notes</h1>"
        "<p>The quick brown fox jumps over the lazy dog.</p></body></html>"
    ): (
        "changewatch release notes the quick brown fox jumps over the lazy dog.",
        "128d814e703f88884d2c42c4112fe04b20dc97c59809ddee30a08713bbfc7d24",
    ),
    "<p>Ｆｕｌｌ width Straße café</p><script>var x=1</script>": (
        "full width strasse café",
        "4f28a5ed89c11ef257c5a11d7081e6208780331463593ba93e76027c5805df2b",
    ),
    (
        "<p>Report</p><div hidden>draft</div>"
        "<p>Generated at 2026-03-01T12:00:00Z, 5 minutes ago</p>"
    ): (
        "report generated at ,",
        "fec2119fec8e3677411bb7649ec2bb01dfc0430bfb904a98b1baacf2fb4164d6",
    ),
}


@pytest.mark.parametrize(("page", "golden"), V3_GOLDEN.items())
def test_version_3_golden_vectors_still_hold(page: str, golden: tuple[str, str]) -> None:
    """The frozen rules give version 3's pinned texts and content hashes."""
    text, content_hex = golden
    assert normalise_v3(page) == text
    assert content_sha256_v3(page).hex() == content_hex


def test_version_3_rules_with_policies() -> None:
    """Version 3's policy semantics: boilerplate drops nav/footer/aside/page header, main
    keeps only its first match, every time of day goes."""
    page = "<nav>Menu</nav><main><p>At 12:00 we met.</p></main><footer>Foot</footer>"
    assert normalise_v3(page) == "menu at we met. foot"
    assert normalise_v3(page, policy=FingerprintPolicy(boilerplate=True)) == "at we met."
    assert normalise_v3(page, policy=FingerprintPolicy(main="main")) == "at we met."
    assert sorted(LEGACY_VERSIONS) == [2, 3]
