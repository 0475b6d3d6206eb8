"""The store's column types and SimHash helpers: UTC timestamps and 64-bit SimHashes in BIGINT.

Kept apart from :mod:`changewatch.store.tables` (which re-exports them) so the schema module
holds tables only.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Dialect, text
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import TypeDecorator

from changewatch.fingerprint.simhash64 import SIMHASH_BAND_BITS, SIMHASH_BANDS

__all__ = [
    "SimHash64",
    "UTCDateTime",
    "simhash_band_expr",
    "simhash_band_index_names",
    "to_signed64",
    "to_unsigned64",
]

_BAND_MASK = (1 << SIMHASH_BAND_BITS) - 1


def to_signed64(value: int) -> int:
    """Unsigned 64-bit → the signed BIGINT that holds the same bits.

    >>> to_signed64(2**64 - 1)
    -1
    """
    return value - (1 << 64) if value >= 1 << 63 else value


def to_unsigned64(value: int) -> int:
    """Signed BIGINT → the unsigned 64-bit value it holds.

    >>> to_unsigned64(-1) == 2**64 - 1
    True
    """
    return value + (1 << 64) if value < 0 else value


def simhash_band_expr(column: ColumnElement[Any], band: int) -> ColumnElement[int]:
    """The SQL for :func:`simhash_band` over the signed BIGINT column: ``(simhash >> s) & 65535``.

    Right-shifting a negative BIGINT is arithmetic on both SQLite and Postgres, so the top bits
    fill with ones; masking after the shift keeps only the 16 band bits, which are the same as
    those of the unsigned value. The shift and mask are literals, not bound parameters, so a
    query's expression matches the index expression exactly (Postgres only uses an expression
    index for the identical expression).
    """
    shift = SIMHASH_BAND_BITS * (SIMHASH_BANDS - 1 - band)
    raw: ColumnElement[Any] = column
    shifted = raw if shift == 0 else raw.op(">>", return_type=BigInteger())(text(str(shift)))
    return shifted.op("&", return_type=BigInteger())(text(str(_BAND_MASK)))


def simhash_band_index_names() -> list[str]:
    """The names of the band indexes on ``page_simhashes`` (migration 0013), band 0 first.

    (``page_snapshots`` had band indexes of its own, ``ix_page_snapshots_simhash_band0``
    …, from migration 0002 until 0014 dropped them.)
    """
    return [f"ix_page_simhashes_band{band}" for band in range(SIMHASH_BANDS)]


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every dialect.

    Postgres stores ``timestamptz``; SQLite has no time zones, so values are stored as UTC
    and given back their ``tzinfo`` on the way out. Naive datetimes are refused.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given where a UTC timestamp is required")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class SimHash64(TypeDecorator[int]):
    """An unsigned 64-bit SimHash kept in a signed BIGINT (converted at this boundary)."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else to_signed64(value)

    def process_result_value(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else to_unsigned64(value)
