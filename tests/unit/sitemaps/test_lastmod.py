"""parse_lastmod: every W3C Datetime form, real-world variants, RFC 822, and garbage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changewatch.sitemaps import parse_lastmod


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The six W3C Datetime forms (https://www.w3.org/TR/NOTE-datetime).
        ("1997", _utc(1997, 1, 1)),
        ("1997-07", _utc(1997, 7, 1)),
        ("1997-07-16", _utc(1997, 7, 16)),
        ("1997-07-16T19:20+01:00", _utc(1997, 7, 16, 18, 20)),
        ("1997-07-16T19:20:30+01:00", _utc(1997, 7, 16, 18, 20, 30)),
        ("1997-07-16T19:20:30.45+01:00", _utc(1997, 7, 16, 18, 20, 30, 450_000)),
        # Z, negative offsets, any number of fraction digits.
        ("1997-07-16T19:20:30Z", _utc(1997, 7, 16, 19, 20, 30)),
        ("1997-07-16T19:20Z", _utc(1997, 7, 16, 19, 20)),
        ("1997-07-16T19:20:30-05:30", _utc(1997, 7, 17, 0, 50, 30)),
        ("1997-07-16T19:20:30.123456789Z", _utc(1997, 7, 16, 19, 20, 30, 123_456)),
        ("1997-07-16T19:20:30.1Z", _utc(1997, 7, 16, 19, 20, 30, 100_000)),
        ("2004-12-23T18:00:15+00:00", _utc(2004, 12, 23, 18, 0, 15)),
        # An offset crossing the year boundary.
        ("2000-01-01T00:30:00+01:00", _utc(1999, 12, 31, 23, 30)),
        # Real-world variants.
        ("2024-03-01 12:00:00", _utc(2024, 3, 1, 12)),  # space, no zone → UTC
        ("2024-03-01T12:00:00", _utc(2024, 3, 1, 12)),  # no zone → UTC
        ("2024-03-01t12:00:00z", _utc(2024, 3, 1, 12)),
        ("2024-03-01T12:00:00+0200", _utc(2024, 3, 1, 10)),
        ("2024-03-01T12:00:00+02", _utc(2024, 3, 1, 10)),
        ("2024-03-01 12:00:00 +02:00", _utc(2024, 3, 1, 10)),
        ("2024-03-01T12:00:00 UTC", _utc(2024, 3, 1, 12)),
        ("2024-03-01T12:00:00,5Z", _utc(2024, 3, 1, 12, 0, 0, 500_000)),
        ("  2024-03-01  \n", _utc(2024, 3, 1)),
        ("2016-12-31T23:59:60Z", _utc(2016, 12, 31, 23, 59, 59)),  # leap second, clamped
        # RFC 822 / 2822 (RSS 2.0 pubDate).
        ("Sat, 07 Sep 2002 00:00:01 GMT", _utc(2002, 9, 7, 0, 0, 1)),
        ("Sat, 07 Sep 2002 09:42:31 +0100", _utc(2002, 9, 7, 8, 42, 31)),
        ("07 Sep 2002 09:42:31 -0000", _utc(2002, 9, 7, 9, 42, 31)),
        ("Mon, 30 Nov 2026 05:00:00 EST", _utc(2026, 11, 30, 10)),
    ],
)
def test_forms(text: str, expected: datetime) -> None:
    value = parse_lastmod(text)
    assert value == expected
    assert value is not None
    assert value.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "yesterday",
        "2024-13-01",
        "2024-02-30",
        "2024-00",
        "0000-01-01",
        "24-01-01",
        "2024/01/01",
        "2024-1-1",
        "2024-01-01T25:00:00Z",
        "2024-01-01T12:60Z",
        "2024-01-01T12Z",
        "2024-01-01T12:00:00+24:00",
        "2024-01-01T12:00:00+05:75",
        "2024-01-01T12:00:00 Europe/Paris",
        "9999-12-31T23:59:59-01:00",  # past datetime.max once in UTC
        "1" * 500,
        "２０２４-01-01",  # full-width digits are not ASCII digits
        "Sat, 45 Foo 2002",
        "null",
        "\x00",
    ],
)
def test_garbage_is_none(text: str) -> None:
    assert parse_lastmod(text) is None


_zones = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
_moments = st.datetimes(
    min_value=datetime(1000, 1, 2), max_value=datetime(9998, 12, 30), timezones=_zones
)


@given(_moments)
def test_isoformat_round_trip(moment: datetime) -> None:
    """Any aware datetime written in ISO 8601 (W3C profile) reads back as the same instant."""
    assert parse_lastmod(moment.isoformat()) == moment


@given(_moments.map(lambda m: m.replace(microsecond=0)))
def test_rfc822_round_trip(moment: datetime) -> None:
    assert parse_lastmod(format_datetime(moment)) == moment


@given(st.text(max_size=80))
def test_any_text_is_none_or_aware_utc(text: str) -> None:
    value = parse_lastmod(text)
    assert value is None or value.tzinfo is UTC
