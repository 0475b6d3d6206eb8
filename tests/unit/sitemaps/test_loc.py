"""The <loc> checks: the fast path agrees with the spelled-out checks on any input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from changewatch.sitemaps._loc import check_loc, check_loc_slow, host_key

HOSTS = frozenset({"www.example.com", "xn--bcher-kva.example"})

_pieces = st.sampled_from(
    [
        "http://", "https://", "HTTP://", "ftp://", "//", "www.example.com", "WWW.EXAMPLE.COM.",
        "bücher.example", "evil.test", "@", ":", ":80", ":99999", ":", "/", "/a", "?q=1", "#f",
        "\\", " ", "\t", "\x01", "\x85", "[::1]", "[", "%41", "user:pw@", "..", "-", "é",
    ]
)  # fmt: skip


@settings(max_examples=3_000)
@given(st.lists(_pieces, max_size=8).map("".join) | st.text(max_size=60))
def test_fast_path_agrees_with_the_spelled_out_checks(text: str) -> None:
    assert check_loc(text, HOSTS) == check_loc_slow(text, HOSTS)


@given(st.text(max_size=60))
def test_accepted_urls_are_on_an_allowed_host(text: str) -> None:
    loc, reason = check_loc("https://www.example.com/" + text, HOSTS)
    assert (loc is None) != (reason is None)
    if loc is not None:
        assert not any(ord(char) < 0x21 or 0x7F <= ord(char) <= 0x9F for char in loc)
        assert "\\" not in loc


def test_host_key_forms() -> None:
    assert host_key("Bücher.Example.") == "xn--bcher-kva.example"
    assert host_key("EXAMPLE.com") == "example.com"
