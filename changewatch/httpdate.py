"""The one reader of HTTP and Internet Message dates: total, pure, no clock, no locale.

Every date a server sends us goes through :func:`parse_http_date`: ``Last-Modified`` and
``If-Modified-Since`` (:mod:`changewatch.conditional`), ``Retry-After``
(:mod:`changewatch.sitemaps.fetch`) and RSS ``pubDate`` (:mod:`changewatch.sitemaps._lastmod`).
The text is hostile: whatever it holds, the answer is a timezone-aware UTC ``datetime`` or
``None`` — never an exception (``email.utils.parsedate_to_datetime`` raises
``OverflowError`` on a zone such as ``+99999999999999999999``; this reader never converts an
unbounded number).

Accepted, case-insensitively, with any run of spaces where one is written:

* **IMF-fixdate** (RFC 9110 §5.6.7), and the RFC 5322 §3.3 date-time it is a profile of:
  ``Sun, 06 Nov 1994 08:49:37 GMT`` — the day name optional, the day one or two digits,
  seconds optional, the zone ``GMT``/``UT``/``UTC``/``Z``, ``±hhmm``, a US zone name
  (``EST``, ``PDT``…, RFC 5322 §4.3) or absent (read as UTC, as ``-0000`` is);
* **RFC 850** (obsolete, RFC 9110 §5.6.7): ``Sunday, 06-Nov-94 08:49:37 GMT``;
* **asctime** (obsolete, RFC 9110 §5.6.7): ``Sun Nov  6 08:49:37 1994``.

Two-digit years follow RFC 5322 §4.3 (00-49 → 20xx, 50-99 → 19xx): RFC 9110's "more than 50
years in the future" rule needs a clock, which pure code does not read; the two differ only
for dates after 2049.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

__all__ = ["MAX_HTTP_DATE_CHARS", "parse_http_date"]

#: Texts longer than this are not dates (the longest real form, RFC 850 with ``Wednesday``
#: and a numeric zone, is 38 characters).
MAX_HTTP_DATE_CHARS: Final = 64

_MONTHS: Final = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_DAY_NAMES: Final = (
    "mon|tue|wed|thu|fri|sat|sun|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
)
#: RFC 5322 §4.3 obsolete zone names; ``Z`` and ``UTC`` are what real servers also send.
_ZONES: Final = {
    "gmt": 0,
    "ut": 0,
    "utc": 0,
    "z": 0,
    "edt": -4,
    "est": -5,
    "cdt": -5,
    "cst": -6,
    "mdt": -6,
    "mst": -7,
    "pdt": -7,
    "pst": -8,
}
_TIME: Final = r"(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?"
_ZONE: Final = r"(?:\s+(?P<zone>[+-]\d{4}|[a-z]{1,3}))?"

# Each quantifier is bounded and the text is at most MAX_HTTP_DATE_CHARS long: no backtracking
# blow-up is possible.
_RFC5322: Final = re.compile(
    rf"(?:(?:{_DAY_NAMES})\s*,\s*)?(?P<day>\d{{1,2}})\s+(?P<month>[a-z]{{3}})\s+"
    rf"(?P<year>\d{{2,4}})\s+{_TIME}{_ZONE}",
    re.ASCII | re.IGNORECASE,
)
_RFC850: Final = re.compile(
    rf"(?:{_DAY_NAMES})\s*,\s*(?P<day>\d{{1,2}})-(?P<month>[a-z]{{3}})-(?P<year>\d{{2,4}})"
    rf"\s+{_TIME}{_ZONE}",
    re.ASCII | re.IGNORECASE,
)
_ASCTIME: Final = re.compile(
    rf"(?:{_DAY_NAMES})\s+(?P<month>[a-z]{{3}})\s+(?P<day>\d{{1,2}})\s+{_TIME}\s+"
    r"(?P<year>\d{4})",
    re.ASCII | re.IGNORECASE,
)


def _year(digits: str) -> int:
    """A year as written; two or three digits by RFC 5322 §4.3.

    >>> _year("94"), _year("49"), _year("2026"), _year("126")
    (1994, 2049, 2026, 2026)
    """
    year = int(digits)
    if len(digits) == 2:
        return year + (2000 if year < 50 else 1900)
    if len(digits) == 3:
        return year + 1900
    return year


def _zone(text: str | None) -> timezone | None:
    """The fixed offset of a zone (``None`` for an unknown name or an impossible offset)."""
    if text is None:
        return UTC
    if text[0] in "+-":
        hours, minutes = int(text[1:3]), int(text[3:5])
        if hours > 23 or minutes > 59:
            return None
        offset = timedelta(hours=hours, minutes=minutes)
        return timezone(-offset if text[0] == "-" else offset)
    named = _ZONES.get(text.lower())
    return None if named is None else timezone(timedelta(hours=named))


def parse_http_date(text: str | None) -> datetime | None:
    """An HTTP or Internet Message date as timezone-aware UTC; ``None`` for anything else.

    Never raises, whatever ``text`` holds (tested with hypothesis on arbitrary strings).

    >>> parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").isoformat()
    '1994-11-06T08:49:37+00:00'
    >>> parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT").isoformat()
    '1994-11-06T08:49:37+00:00'
    >>> parse_http_date("Sun Nov  6 08:49:37 1994").isoformat()
    '1994-11-06T08:49:37+00:00'
    >>> parse_http_date("Sat, 07 Sep 2002 09:42:31 +0100").isoformat()
    '2002-09-07T08:42:31+00:00'
    >>> parse_http_date("Thu, 01 Jan 2026 00:00:30 +99999999999999999999") is None
    True
    """
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text or len(text) > MAX_HTTP_DATE_CHARS:
        return None
    match = _RFC5322.fullmatch(text) or _RFC850.fullmatch(text) or _ASCTIME.fullmatch(text)
    if match is None:
        return None
    part = match.groupdict()
    month = _MONTHS.get(part["month"].lower())
    zone = _zone(part.get("zone"))
    if month is None or zone is None:
        return None
    # RFC 5322 §3.3 allows second 60 (a leap second); datetime cannot hold it.
    second = min(int(part["second"] or 0), 59)
    try:
        moment = datetime(
            _year(part["year"]),
            month,
            int(part["day"]),
            int(part["hour"]),
            int(part["minute"]),
            second,
            tzinfo=zone,
        )
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):  # 31 February, hour 25, or off the calendar in UTC
        return None
