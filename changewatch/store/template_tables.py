"""The schema of the template blocks learned per host (migration 0012), defined on the
store's one ``MetaData`` by :mod:`changewatch.store.tables` (kept here for its length)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    text,
)

from changewatch.store.types import UTCDateTime

__all__ = ["template_tables"]


def template_tables(metadata: MetaData) -> tuple[Table, Table]:
    """``host_templates`` and ``host_template_pages`` on ``metadata``."""
    return _templates(metadata), _pages(metadata)


def _templates(metadata: MetaData) -> Table:
    return Table(
        "host_templates",
        metadata,
        Column("host", String(300), primary_key=True, comment="host[:port] of the pages"),
        Column(
            "fingerprint_version",
            SmallInteger,
            primary_key=True,
            comment="the fingerprint rules the block hashes and keys belong to",
        ),
        Column(
            "value",
            LargeBinary(8),
            primary_key=True,
            comment="text: blake2b-64 of the block's text (Block.text_hash); slot: blake2b-64 "
            "of its key and text hash",
        ),
        Column(
            "kind",
            String(4),
            nullable=False,
            comment="text: the same words on many pages; slot: the same words at the same "
            "place (path and ordinal) on many pages",
        ),
        Column(
            "block_key",
            LargeBinary(8),
            nullable=False,
            comment="blake2b-64 of the block's path and ordinal (Block.key) when first seen; "
            "a learned slot makes every block at this key template",
        ),
        Column(
            "path",
            Text,
            nullable=False,
            comment="structural path of the block when first seen (body/div/p), for reading",
        ),
        Column(
            "pages",
            BigInteger,
            nullable=False,
            server_default=text("0"),
            comment="sampled pages of the host (host_template_pages) whose last counted "
            "fetch shows it",
        ),
        Column("first_seen", UTCDateTime, nullable=False),
        Column("last_seen", UTCDateTime, nullable=False),
        Column(
            "learned_at",
            UTCDateTime,
            nullable=True,
            comment="when it stood on enough pages (5, and half of the sampled ones) and "
            "became template; NULL: still counted only",
        ),
        CheckConstraint("kind IN ('text', 'slot')", name="kind"),
        comment="Blocks learned as a host's template (changewatch templates list / reset).",
    )


def _pages(metadata: MetaData) -> Table:
    return Table(
        "host_template_pages",
        metadata,
        Column("host", String(300), primary_key=True, comment="host[:port] of the page"),
        Column(
            "fingerprint_version",
            SmallInteger,
            primary_key=True,
            comment="the fingerprint rules its values belong to",
        ),
        Column(
            "url_digest",
            LargeBinary(16),
            primary_key=True,
            comment="the page (page_snapshots.url_digest)",
        ),
        Column(
            "template_values",
            LargeBinary,
            nullable=False,
            comment="the sorted host_templates.value (8 bytes each, concatenated) this page "
            "counts in",
        ),
        Column(
            "value_count",
            SmallInteger,
            nullable=False,
            comment="how many values template_values holds",
        ),
        Column("first_seen", UTCDateTime, nullable=False, comment="when the page was sampled"),
        Column("last_seen", UTCDateTime, nullable=False, comment="when its values last changed"),
        comment="The pages of each host that template blocks are counted on (at most 100 "
        "per host; changewatch templates reset forgets them).",
    )
