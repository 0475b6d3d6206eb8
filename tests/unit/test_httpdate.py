"""The one HTTP-date reader (changewatch.httpdate) and the three places that use it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changewatch import conditional
from changewatch.httpdate import parse_http_date
from changewatch.sitemaps import parse_lastmod
from changewatch.sitemaps.fetch import parse_retry_after

NOW = datetime(2026, 1, 1, tzinfo=UTC)
HOSTILE = "Thu, 01 Jan 2026 00:00:30 +99999999999999999999"
EXPECTED = datetime(1994, 11, 6, 8, 49, 37, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        # RFC 9110 §5.6.7: IMF-fixdate, then the two obsolete forms recipients must accept.
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        # Case, spacing and the RFC 5322 §3.3 variants real servers send.
        "sun, 06 nov 1994 08:49:37 gmt",
        "Sun,  6 Nov 1994 08:49:37 GMT",
        "06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37",
        "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sun, 06 Nov 1994 08:49:37 -0000",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 03:49:37 EST",
        "Sun, 06 Nov 1994 09:49:37 +0100",
        "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun Nov 06 08:49:37 1994",
        "  Sun, 06 Nov 1994 08:49:37 GMT\t",
    ],
)
def test_every_form_reads_as_the_same_instant(text: str) -> None:
    """IMF-fixdate, RFC 850, asctime and the RFC 5322 variants give the same UTC instant."""
    parsed = parse_http_date(text)
    assert parsed == EXPECTED
    assert parsed is not None
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        HOSTILE,
        "Thu, 01 Jan 2026 00:00:30 -99999999999999999999",
        "Thu, 01 Jan 2026 00:00:30 +2400",  # no such offset
        "Thu, 01 Jan 2026 00:00:30 +0060",
        "Thu, 01 Jan 2026 00:00:30 XYZ",  # unknown zone name
        "Thu, 01 Foo 2026 00:00:30 GMT",
        "Thu, 31 Feb 2026 00:00:30 GMT",
        "Thu, 01 Jan 2026 25:00:30 GMT",
        "Thu, 01 Jan 0000 00:00:00 GMT",  # year 0 is not on the calendar
        "Mon, 01 Jan 0001 00:00:00 +0100",  # before 0001 in UTC
        "Fri, 31 Dec 9999 23:59:59 -0100",  # after 9999 in UTC
        "Thu, 01 Jan 99999999999999999999 00:00:30 GMT",
        "Thu, 99999999999999999999 Jan 2026 00:00:30 GMT",
        "Caturday, 01 Jan 2026 00:00:30 GMT",
        "",
        "soon",
        "7",
        "2026-01-01T00:00:30Z",  # W3C, not an HTTP date
        "Sun, 06 Nov 1994 08:49:37 GMT" + "0" * 60,  # over the length cap
    ],
)
def test_garbage_and_hostile_dates_are_none(text: str) -> None:
    """Impossible, unbounded or foreign dates are None, never an exception."""
    assert parse_http_date(text) is None


def test_retry_after_with_a_hostile_zone_is_ignored() -> None:
    """The Retry-After of issue 16 no longer raises OverflowError out of the error tree."""
    assert parse_retry_after(HOSTILE, NOW) is None
    assert parse_retry_after("Thu, 01 Jan 2026 00:00:30 GMT", NOW) == 30.0
    assert parse_retry_after("Wed, 31 Dec 2025 23:00:00 GMT", NOW) == 0.0
    assert parse_retry_after(" 120 ", NOW) == 120.0
    assert parse_retry_after("\u00b2", NOW) is None  # "²".isdigit(), but int() refuses it
    assert parse_retry_after("9" * 5000, NOW) == float("inf")  # int() refuses 4,300 digits


def test_all_three_callers_share_one_reader() -> None:
    """Last-Modified, Retry-After and RSS pubDate read the same forms the same way."""
    for text in ("Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"):
        assert conditional.parse_http_date(text) == EXPECTED
        assert parse_lastmod(text) == EXPECTED
        assert parse_retry_after(text, EXPECTED - timedelta(seconds=5)) == 5.0
    for reader in (conditional.parse_http_date, parse_lastmod):
        assert reader(HOSTILE) is None


@given(st.text(max_size=100))
def test_any_text_is_a_utc_datetime_or_none(text: str) -> None:
    """parse_http_date is total: any string gives aware UTC or None."""
    parsed = parse_http_date(text)
    assert parsed is None or parsed.tzinfo is UTC


_DATEISH = st.text(
    alphabet=st.sampled_from(list("0123456789 ,:+-JanFebNovSunMonGMTESTZutc")), max_size=48
)


@given(_DATEISH)
def test_date_shaped_text_never_raises_in_any_caller(text: str) -> None:
    """Date-shaped noise through every caller: a value or None, nothing raised."""
    for parsed in (parse_http_date(text), conditional.parse_http_date(text), parse_lastmod(text)):
        assert parsed is None or parsed.tzinfo is UTC
    waited = parse_retry_after(text, NOW)
    assert waited is None or waited >= 0


@given(
    st.datetimes(
        min_value=datetime(1950, 1, 1),
        max_value=datetime(2049, 12, 31),
        timezones=st.just(UTC),
    ).map(lambda moment: moment.replace(microsecond=0)),
    st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_round_trip_of_the_three_forms(moment: datetime, offset_minutes: int) -> None:
    """IMF-fixdate (any offset), RFC 850 and asctime renderings of an instant read back as it."""
    zone = timezone(timedelta(minutes=offset_minutes))
    assert parse_http_date(format_datetime(moment.astimezone(zone))) == moment
    assert parse_http_date(moment.strftime("%A, %d-%b-%y %H:%M:%S GMT")) == moment
    assert parse_http_date(moment.strftime("%a %b %e %H:%M:%S %Y")) == moment
