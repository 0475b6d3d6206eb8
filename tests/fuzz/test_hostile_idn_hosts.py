"""Hosts a page controls: an IDN host that cannot be valid is refused before any IDNA work."""

from __future__ import annotations

import sys
import time
import unicodedata

import ada_url
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changewatch import fingerprint
from changewatch.errors import InvalidURLError
from changewatch.urls import canonicalise
from changewatch.urls.canon import _LABEL_END_RE, _oversized_host


def _cjk_label(n: int) -> str:
    return "".join(chr(0x4E00 + j) for j in range(n))


def test_long_idn_labels_are_refused_quickly() -> None:
    """160 URLs with a 5,000-code-point IDN label are refused in well under 5 s.

    Measured: 19.9 s before the early refusal (ada's IDNA on the label, twice a URL: its
    cost grows faster than the label up to the URL length cap, so no growth test), 0.11 s
    after.
    """
    label = _cjk_label(5000)
    started = time.perf_counter()
    for i in range(160):
        with pytest.raises(InvalidURLError):
            canonicalise(f"http://{chr(0x4E00 + i)}{label}.b1.com/")
    assert time.perf_counter() - started < 5  # 45x the time measured after the fix


def test_long_idn_label_refusal_names_the_label() -> None:
    """The refusal says a host label is over 63 characters, on the fast and the parsed path."""
    label = _cjk_label(5000)
    for url in (f"http://{label}.b1.com/", f"http://user@{label}.b1.com:8080/\\x"):
        with pytest.raises(InvalidURLError, match=r"host label .* is over 63 characters"):
            canonicalise(url)


def test_page_of_long_idn_links_fingerprints_quickly() -> None:
    """160 links with 5,000-code-point IDN hosts (2.4 MB) fingerprint in well under 10 s.

    Measured: 20.5 s before the early refusal, 0.22 s after (fresh process).
    """
    label = _cjk_label(5000)
    links = "".join(
        f'<a href="http://{chr(0x4E00 + i)}{label}.b1.com/">{i}</a>' for i in range(160)
    )
    started = time.perf_counter()
    fingerprint(f"<body>{links}</body>".encode())
    assert time.perf_counter() - started < 10  # 45x the time measured after the fix


@pytest.mark.parametrize(
    "host",
    [
        "\u00ad" * 5000 + "a.com",  # soft hyphens: ignored by UTS #46
        "a" + "\ufe0f" * 3000 + ".com",  # variation selectors: ignored
        "%61" * 63 + ".com",  # percent-escapes: decoded before the host is read
        "b\u200b" * 63 + ".example",  # zero-width spaces: ignored
        ("\u1100\u1161\u11a8" * 20) + ".kr",  # Hangul jamo: compose into 20 syllables
        ".".join(["\u00e9" * 20] * 5) + ".fr",  # 5 IDN labels of 20 code points: valid
        ("e\u0301" * 25) + ".fr",  # combining acute: composes into 25 é
        "a" * 63 + "\u3002" + "b" * 63 + "\uff0e" + "c" * 63 + "\uff61" + "d" * 61,  # 253
    ],
)
def test_valid_hosts_near_the_bound_are_accepted(host: str) -> None:
    """Hosts whose raw text is long but whose ASCII form fits DNS are never refused early."""
    expected = ada_url.URL(f"http://{host}/").hostname
    assert _oversized_host(host) is None
    assert canonicalise(f"http://{host}/") == f"http://{expected}/"


_HOST_CHARS = st.sampled_from(
    [
        "a",
        "Z",
        "-",
        "%41",
        "\u00e9",
        "e\u0301",
        "\u00ad",
        "\u200b",
        "\ufe0f",
        "\U000e0100",
        "\u4e00",
        "\uac00",
        "\u1100",
        "\u1161",
        "\u11a8",
        "\u0bbe",
        "\u0bc6",
        "\u00df",
        "\ufb00",
        "\u3002",
        "\uff0e",
        ".",
        "\u2488",
        "\u2025",
        "\u3164",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_HOST_CHARS, st.integers(1, 80)), min_size=1, max_size=12))
def test_early_refusal_only_for_hosts_the_parser_refuses(runs: list[tuple[str, int]]) -> None:
    """Whenever the bound refuses a host, ada refuses it too or gives a host over DNS limits."""
    host = "".join(text * count for text, count in runs) + ".com"
    if _oversized_host(host) is None:
        return
    try:
        parsed = ada_url.URL(f"http://{host}/").hostname
    except ValueError:
        return
    labels = parsed.rstrip(".").split(".")
    assert len(parsed.rstrip(".")) > 253 or max(map(len, labels)) > 63, (host, parsed)


def test_label_end_set_is_every_code_point_mapping_to_a_full_stop() -> None:
    """The label-ending code points are those NFKC and case folding map to text with "."."""
    missing = [
        hex(cp)
        for cp in range(0x80, sys.maxunicode + 1)
        if (
            "." in unicodedata.normalize("NFKC", chr(cp)).casefold()
            or "." in unicodedata.normalize("NFKC", chr(cp).casefold())
        )
        and not _LABEL_END_RE.fullmatch(chr(cp))
    ]
    assert missing == []
