"""Reading the dates sitemaps and feeds carry: W3C Datetime, RFC 3339 and RFC 822.

Pure: no clock, no locale. Every result is timezone-aware UTC; anything unreadable is ``None``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache

from changewatch.httpdate import parse_http_date

__all__ = ["parse_lastmod"]

#: W3C Datetime (https://www.w3.org/TR/NOTE-datetime, the profile sitemaps.org names) and the
#: variants seen in real sitemaps: a space or lower-case ``t`` before the time, no seconds, any
#: number of fraction digits (``.`` or ``,``), ``z``, ``UTC``/``GMT``, ``+hhmm`` and ``+hh``
#: offsets, and no zone at all (read as UTC).
_W3C = re.compile(
    r"""
    (?P<year>\d{4})
    (?:-(?P<month>\d{2})
      (?:-(?P<day>\d{2})
        (?:(?:[Tt]|\s+)
          (?P<hour>\d{2}):(?P<minute>\d{2})
          (?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?
          \s*(?P<zone>[Zz]|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?
        )?
      )?
    )?
    """,
    re.VERBOSE | re.ASCII,
)

#: Longest text worth trying: the longest real form is an RFC 822 date with a day name and zone.
_MAX_LEN = 64


@lru_cache(maxsize=64)
def _zone(text: str | None) -> timezone | None:
    """The fixed offset written as ``Z``/``UTC``/``GMT``, ``±hh``, ``±hhmm`` or ``±hh:mm``."""
    if text is None or text in ("Z", "z", "UTC", "GMT"):
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        return None
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _w3c(text: str) -> datetime | None:
    match = _W3C.fullmatch(text)
    if match is None:
        return None
    part = match.groupdict()
    zone = _zone(part["zone"])
    if zone is None:
        return None
    second = int(part["second"] or 0)
    # A leap second (…:60) is real W3C/RFC 3339 input; Python's datetime cannot hold it.
    second = min(second, 59)
    fraction = part["fraction"] or ""
    microsecond = int((fraction + "000000")[:6])
    try:
        value = datetime(
            int(part["year"]),
            int(part["month"] or 1),
            int(part["day"] or 1),
            int(part["hour"] or 0),
            int(part["minute"] or 0),
            second,
            microsecond,
            tzinfo=zone,
        )
        return value.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _rfc822(text: str) -> datetime | None:
    """RSS 2.0 ``pubDate`` (RFC 822 with four-digit years, as RFC 5322 reads it), and the other
    HTTP date forms: :func:`changewatch.httpdate.parse_http_date`, the one reader of them."""
    if not any(char.isalpha() for char in text):
        return None
    return parse_http_date(text)


@lru_cache(maxsize=1024)  # sitemaps repeat dates; the function is pure and results immutable
def parse_lastmod(text: str) -> datetime | None:
    """A ``lastmod``, ``pubDate`` or ``updated`` value as timezone-aware UTC, or ``None``.

    Reads every W3C Datetime form (``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``, then
    ``Thh:mm``, ``Thh:mm:ss``, ``Thh:mm:ss.s…`` with ``Z`` or ``±hh:mm``), the usual real-world
    variants (a space for ``T``, no zone → UTC, ``+hhmm``), and RFC 822 dates from RSS. Missing
    parts default to the start of the period.

    >>> parse_lastmod("2004-12-23T18:00:15+01:00").isoformat()
    '2004-12-23T17:00:15+00:00'
    >>> parse_lastmod("2005-01").isoformat()
    '2005-01-01T00:00:00+00:00'
    >>> parse_lastmod("Sat, 07 Sep 2002 00:00:01 GMT").isoformat()
    '2002-09-07T00:00:01+00:00'
    >>> parse_lastmod("yesterday") is None
    True
    """
    text = text.strip()
    if not text or len(text) > _MAX_LEN:
        return None
    return _w3c(text) or _rfc822(text)
