"""HTTP validators for conditional GET: read ``ETag`` / ``Last-Modified``, build the next request.

Pure. A crawler hands ``should_parse`` the response headers; the validators worth keeping are
picked out here and checked against their grammar (RFC 9110 §8.8.3 for entity tags, §5.6.7
for HTTP dates). Anything malformed is dropped, not stored: sending a garbage validator back
in ``If-None-Match`` could make a server answer 304 wrongly, or never.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import format_datetime

from changewatch.httpdate import parse_http_date as _read_date

__all__ = [
    "MAX_ETAG_CHARS",
    "conditional_request_headers",
    "format_http_date",
    "header",
    "parse_etag",
    "parse_http_date",
    "validators_from_headers",
]

#: Entity tags longer than this are refused (real ones are hashes or version stamps).
MAX_ETAG_CHARS = 256

# entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE; etagc = %x21 / %x23-7E / obs-text (RFC 9110 §8.8.3)
_ETAG_RE = re.compile(r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"')


def header(headers: Mapping[str, str] | None, name: str) -> str | None:
    """A header's value from a mapping whose keys may be in any case (``None`` if absent).

    >>> header({"etag": '"x"'}, "ETag")
    '"x"'
    """
    if not headers:
        return None
    value = headers.get(name)
    if value is None:
        lowered = name.lower()
        for key, candidate in headers.items():
            if isinstance(key, str) and key.lower() == lowered:
                value = candidate
                break
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return value if isinstance(value, str) else None


def parse_etag(value: str | None) -> str | None:
    """A strong or weak entity tag, or ``None`` when absent, malformed or too long.

    >>> parse_etag(' W/"abc" ')
    'W/"abc"'
    >>> parse_etag('"5e1b-1a2b"')
    '"5e1b-1a2b"'
    >>> parse_etag("unquoted") is None, parse_etag('"a" , "b"') is None
    (True, True)
    """
    if value is None:
        return None
    value = value.strip()
    if len(value) > MAX_ETAG_CHARS or not _ETAG_RE.fullmatch(value):
        return None
    return value


def parse_http_date(value: str | None) -> datetime | None:
    """An HTTP date (any of the three forms recipients must accept) as UTC, else ``None``.

    Read by :func:`changewatch.httpdate.parse_http_date` (never raises); dates before 1970
    are dropped as validators no server means.

    >>> parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").isoformat()
    '1994-11-06T08:49:37+00:00'
    >>> parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT").year
    1994
    >>> parse_http_date("yesterday") is None
    True
    """
    parsed = _read_date(value)
    if parsed is None or parsed.year < 1970:
        return None
    return parsed


def format_http_date(value: datetime) -> str:
    """The IMF-fixdate form, the only one a sender may generate (RFC 9110 §5.6.7).

    >>> format_http_date(datetime(1994, 11, 6, 8, 49, 37, tzinfo=UTC))
    'Sun, 06 Nov 1994 08:49:37 GMT'
    """
    return format_datetime(value.astimezone(UTC), usegmt=True)


def validators_from_headers(
    headers: Mapping[str, str] | None,
    etag: str | None = None,
    last_modified: str | None = None,
) -> tuple[str | None, str | None]:
    """``(etag, last_modified)`` to store, from response headers; explicit values win.

    Malformed values become ``None``; ``Last-Modified`` is kept in IMF-fixdate form.

    >>> validators_from_headers({"ETag": '"v1"', "last-modified": "Sun, 06 Nov 1994 08:49:37 GMT"})
    ('"v1"', 'Sun, 06 Nov 1994 08:49:37 GMT')
    >>> validators_from_headers({"ETag": "garbage", "Last-Modified": "soon"})
    (None, None)
    """
    tag = parse_etag(etag if etag is not None else header(headers, "ETag"))
    date = parse_http_date(
        last_modified if last_modified is not None else header(headers, "Last-Modified")
    )
    return tag, None if date is None else format_http_date(date)


def conditional_request_headers(etag: str | None, last_modified: str | None) -> dict[str, str]:
    """``If-None-Match`` / ``If-Modified-Since`` for the stored validators that are valid.

    >>> conditional_request_headers('"v1"', None)
    {'If-None-Match': '"v1"'}
    """
    out: dict[str, str] = {}
    tag = parse_etag(etag)
    if tag is not None:
        out["If-None-Match"] = tag
    date = parse_http_date(last_modified)
    if date is not None:
        out["If-Modified-Since"] = format_http_date(date)
    return out
