"""HTTP validators: entity tags, HTTP dates, case-insensitive headers (changewatch.conditional)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changewatch.conditional import (
    MAX_ETAG_CHARS,
    conditional_request_headers,
    header,
    parse_etag,
    parse_http_date,
    validators_from_headers,
)

IMF = "Sun, 06 Nov 1994 08:49:37 GMT"


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ('"xyzzy"', '"xyzzy"'),
        ('W/"xyzzy"', 'W/"xyzzy"'),
        ('""', '""'),
        ('  "5e1b-1a2b"\t', '"5e1b-1a2b"'),
        ("xyzzy", None),  # unquoted
        ('w/"x"', None),  # the weak prefix is case-sensitive
        ('"a" , "b"', None),  # a list is a request header's syntax, not ETag's
        ('"a"b"', None),  # DQUOTE inside
        ('"a b"', None),  # space is not an etagc
        ('"a\x00"', None),
        ("", None),
        ('"' + "a" * MAX_ETAG_CHARS + '"', None),  # over the length cap
    ],
)
def test_parse_etag(raw: str, kept: str | None) -> None:
    """Strong and weak entity tags are kept; anything off the RFC 9110 grammar is dropped."""
    assert parse_etag(raw) == kept


@pytest.mark.parametrize(
    "raw",
    [IMF, "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"],
)
def test_parse_http_date_three_forms(raw: str) -> None:
    """IMF-fixdate, RFC 850 and asctime dates all read as the same UTC instant."""
    parsed = parse_http_date(raw)
    assert parsed is not None
    assert parsed.isoformat() == "1994-11-06T08:49:37+00:00"


@pytest.mark.parametrize(
    "raw",
    ["", "yesterday", "0", "Sun, 32 Nov 1994 08:49:37 GMT", "1969-01-01", "<script>", "9" * 80],
)
def test_parse_http_date_garbage(raw: str) -> None:
    """Strings that are not HTTP dates are dropped, never raised on."""
    assert parse_http_date(raw) is None


@given(st.text(max_size=80))
def test_validators_never_raise(value: str) -> None:
    """Any header text is either a valid validator or None; nothing raises."""
    etag, last_modified = validators_from_headers({"ETag": value, "Last-Modified": value})
    assert etag is None or parse_etag(etag) == etag
    assert last_modified is None or parse_http_date(last_modified) is not None


def test_headers_are_case_insensitive_and_explicit_values_win() -> None:
    """Header names match in any case; explicit etag/last_modified override the headers."""
    assert header({"eTaG": '"v"'}, "ETag") == '"v"'
    assert header({"ETag": b'"v"'}, "etag") == '"v"'  # type: ignore[dict-item]
    assert header(None, "ETag") is None
    got = validators_from_headers({"etag": '"a"', "LAST-MODIFIED": IMF}, etag='"b"')
    assert got == ('"b"', IMF)
    # Last-Modified is re-written in the IMF-fixdate form a client must send.
    assert validators_from_headers({"Last-Modified": "Sun Nov  6 08:49:37 1994"})[1] == IMF


def test_conditional_request_headers() -> None:
    """Only valid stored validators become If-None-Match / If-Modified-Since."""
    assert conditional_request_headers('W/"a"', IMF) == {
        "If-None-Match": 'W/"a"',
        "If-Modified-Since": IMF,
    }
    assert conditional_request_headers("junk", "junk") == {}
    assert conditional_request_headers(None, None) == {}
