"""The snapshot store's schema: one SQLAlchemy ``MetaData`` for SQLite and Postgres.

Alembic migrations in ``migrations/`` create exactly this schema; a test runs
``alembic check`` against it so the two cannot drift.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import TypeDecorator

__all__ = ["metadata", "page_snapshots", "page_versions", "to_signed64", "to_unsigned64"]

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)


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


# SQLite only auto-increments an INTEGER PRIMARY KEY.
_BigSerial = BigInteger().with_variant(Integer(), "sqlite")

page_snapshots = Table(
    "page_snapshots",
    metadata,
    Column(
        "url_digest", LargeBinary(16), primary_key=True, comment="blake2b-128 of the canonical URL"
    ),
    Column("host", String(300), nullable=False, comment="host[:port] of the canonical URL"),
    Column(
        "url",
        Text,
        nullable=True,
        comment="canonical URL as the URL-storage policy allows (NULL under 'none')",
    ),
    Column(
        "canon_version",
        SmallInteger,
        nullable=False,
        comment="version of the URL canonicalisation rules that made url_digest",
    ),
    Column(
        "fingerprint_version",
        SmallInteger,
        nullable=False,
        comment="version of the normalisation and SimHash rules",
    ),
    Column(
        "raw_sha256",
        LargeBinary(32),
        nullable=False,
        comment="SHA-256 of the page bytes as last fetched",
    ),
    Column(
        "content_sha256",
        LargeBinary(32),
        nullable=False,
        comment="SHA-256 of the normalised visible text",
    ),
    Column(
        "simhash",
        SimHash64,
        nullable=False,
        comment="64-bit SimHash of the normalised text, stored as signed BIGINT",
    ),
    Column("text_length", Integer, nullable=False, comment="characters of normalised text"),
    Column("first_seen", UTCDateTime, nullable=False),
    Column("last_seen", UTCDateTime, nullable=False),
    Column(
        "last_changed",
        UTCDateTime,
        nullable=False,
        comment="when the current version was first seen",
    ),
    Column(
        "version_count",
        Integer,
        nullable=False,
        comment="number of page_versions rows of this page",
    ),
    Column(
        "fetch_count",
        BigInteger,
        nullable=False,
        comment="number of should_parse calls for this page",
    ),
    Column("etag", Text, nullable=True),
    Column("last_modified", Text, nullable=True),
    CheckConstraint("version_count >= 1", name="version_count_positive"),
    CheckConstraint("fetch_count >= version_count", name="fetches_cover_versions"),
    comment="One row per canonical URL: its current fingerprint and crawl counters.",
)
Index("ix_page_snapshots_content_sha256", page_snapshots.c.content_sha256)
Index("ix_page_snapshots_host", page_snapshots.c.host)

page_versions = Table(
    "page_versions",
    metadata,
    Column("id", _BigSerial, primary_key=True, autoincrement=True),
    Column(
        "url_digest",
        LargeBinary(16),
        ForeignKey("page_snapshots.url_digest", ondelete="CASCADE"),
        nullable=False,
    ),
    Column(
        "version_no",
        Integer,
        nullable=False,
        comment="1 for the first version of a page, then 2, 3…",
    ),
    Column("kind", String(8), nullable=False, comment="new, changed or minor"),
    Column(
        "distance",
        SmallInteger,
        nullable=True,
        comment="SimHash Hamming distance from the previous version (NULL for new)",
    ),
    Column("raw_sha256", LargeBinary(32), nullable=False),
    Column("content_sha256", LargeBinary(32), nullable=False),
    Column("simhash", SimHash64, nullable=False),
    Column("fingerprint_version", SmallInteger, nullable=False),
    Column("text_length", Integer, nullable=False),
    Column("first_seen", UTCDateTime, nullable=False),
    Column(
        "last_seen",
        UTCDateTime,
        nullable=False,
        comment="last fetch that saw this version; for the current version see "
        "page_snapshots.last_seen",
    ),
    CheckConstraint("kind IN ('new', 'changed', 'minor')", name="kind_known"),
    CheckConstraint(
        "distance IS NULL OR (distance >= 0 AND distance <= 64)", name="distance_range"
    ),
    UniqueConstraint("url_digest", "version_no"),
    comment="Append-only history: one row per distinct content version of a page.",
)
