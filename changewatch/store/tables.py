"""The snapshot store's schema: one SQLAlchemy ``MetaData`` for SQLite and Postgres.

Alembic migrations in ``migrations/`` create exactly this schema; a test runs
``alembic check`` against it so the two cannot drift.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
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
    text,
)

from changewatch.fingerprint.simhash64 import SIMHASH_BAND_BITS, SIMHASH_BANDS, simhash_band
from changewatch.store.template_tables import template_tables
from changewatch.store.types import (
    SimHash64,
    UTCDateTime,
    simhash_band_expr,
    simhash_band_index_names,
    to_signed64,
    to_unsigned64,
)

__all__ = [
    "COMMENTS",
    "SIMHASH_BANDS",
    "SIMHASH_BAND_BITS",
    "SimHash64",
    "UTCDateTime",
    "host_noise",
    "host_template_pages",
    "host_templates",
    "metadata",
    "page_chrome_changes",
    "page_simhashes",
    "page_snapshots",
    "page_texts",
    "page_versions",
    "reconcile_findings",
    "reconcile_hosts",
    "reconcile_runs",
    "simhash_band",
    "simhash_band_expr",
    "simhash_band_index_names",
    "to_signed64",
    "to_unsigned64",
]

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

#: Column comments added or reworded by migration 0004 (which has its own frozen copy).
COMMENTS = {
    "page_snapshots.first_seen": "first fetch of the page",
    "page_snapshots.last_seen": "latest fetch of the page",
    "page_snapshots.version_count": "versions ever made: the version_no of the current version "
    "(pruning old page_versions rows keeps it)",
    "page_versions.id": "surrogate key of the version row",
    "page_versions.url_digest": "the page (page_snapshots.url_digest)",
    "page_versions.raw_sha256": "SHA-256 of the page bytes when this version was first seen",
    "page_versions.content_sha256": "SHA-256 of the normalised visible text",
    "page_versions.simhash": "64-bit SimHash of the normalised text, stored as signed BIGINT",
    "page_versions.fingerprint_version": "version of the normalisation and SimHash rules",
    "page_versions.text_length": "characters of normalised text",
    "page_versions.first_seen": "first fetch that saw this version (when the change was seen)",
    "page_versions.host": "host of the page, as in page_snapshots.host (copied so one "
    "host's changes over a time range are one index range scan)",
    "page_versions.reverted_to": "version_no of an earlier version of the page with the same "
    "content_sha256 (a flip-flop), else NULL",
}


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
    Column(
        "first_seen", UTCDateTime, nullable=False, comment=COMMENTS["page_snapshots.first_seen"]
    ),
    Column("last_seen", UTCDateTime, nullable=False, comment=COMMENTS["page_snapshots.last_seen"]),
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
        comment=COMMENTS["page_snapshots.version_count"],
    ),
    Column(
        "fetch_count",
        BigInteger,
        nullable=False,
        comment="number of should_parse calls for this page",
    ),
    Column("etag", Text, nullable=True),
    Column("last_modified", Text, nullable=True),
    # Recrawl scheduling (migration 0005; changewatch.schedule has the maths).
    Column(
        "change_count",
        Integer,
        nullable=False,
        server_default=text("0"),
        comment="fetches that saw a change (changed or minor): X of the change-rate estimator",
    ),
    Column(
        "change_rate",
        Float,
        nullable=True,
        comment="estimated changes per day (Cho & Garcia-Molina, shrunk towards a prior of 1 a "
        "day), updated on every fetch; 1 after one fetch",
    ),
    Column(
        "due_at",
        UTCDateTime,
        nullable=True,
        comment="when the probability of a change since last_seen reaches 0.5",
    ),
    Column(
        "rate_band",
        SmallInteger,
        nullable=True,
        comment="floor(2 * log2(change_rate)): rates within a factor 1.41 share a band",
    ),
    # Chrome and outlinks, fingerprint version 4 (migration 0008).
    Column(
        "chrome_sha256",
        LargeBinary(32),
        nullable=True,
        comment="SHA-256 of the normalised chrome text (menus, banners, footers); NULL: unknown",
    ),
    Column(
        "links_sha256",
        LargeBinary(32),
        nullable=True,
        comment="SHA-256 of the page's canonicalised outlinks; NULL: unknown",
    ),
    Column(
        "chrome_changed_at",
        UTCDateTime,
        nullable=True,
        comment="when a fetch last saw the chrome change (the content may not have)",
    ),
    Column(
        "links_changed_at",
        UTCDateTime,
        nullable=True,
        comment="when a fetch last saw the set of outlinks change",
    ),
    CheckConstraint("version_count >= 1", name="version_count_positive"),
    CheckConstraint("fetch_count >= version_count", name="fetches_cover_versions"),
    comment="One row per canonical URL: its current fingerprint and crawl counters.",
)
# A content's holders in URL-digest order: duplicate_of reads the first (migration 0010).
Index(
    "ix_page_snapshots_content_sha256_url_digest",
    page_snapshots.c.content_sha256,
    page_snapshots.c.url_digest,
)
Index("ix_page_snapshots_host", page_snapshots.c.host)
# due(): per rate band, the pages fetched longest ago, for all hosts or one (migration 0005).
Index(
    "ix_page_snapshots_rate_band_last_seen",
    page_snapshots.c.rate_band,
    page_snapshots.c.last_seen,
)
Index(
    "ix_page_snapshots_host_rate_band_last_seen",
    page_snapshots.c.host,
    page_snapshots.c.rate_band,
    page_snapshots.c.last_seen,
)
# A SimHash's holders in URL-digest order: near-duplicate search reads the first few (0013).
# No INCLUDE (url): a canonical URL may be 8 KiB, a btree entry about 2.7 KB (migration
# 0014). The four band indexes on page_snapshots (0002) were dropped by 0014.
Index("ix_page_snapshots_simhash_url_digest", page_snapshots.c.simhash, page_snapshots.c.url_digest)

#: Each SimHash a page_snapshots row holds, about once, added by the triggers of
#: changewatch.store.simhashes (migration 0013) and deleted by prune once no row holds it.
#: No key: see that module.
page_simhashes = Table(
    "page_simhashes",
    metadata,
    Column("simhash", SimHash64, nullable=False, comment=COMMENTS["page_versions.simhash"]),
    comment="Each SimHash a page_snapshots row holds, about once (added by triggers; prune "
    "deletes those no row holds): the band buckets near-duplicate search reads",
)
for _band, _name in enumerate(simhash_band_index_names()):
    Index(_name, simhash_band_expr(page_simhashes.c.simhash, _band), page_simhashes.c.simhash)

page_versions = Table(
    "page_versions",
    metadata,
    Column(
        "id",
        _BigSerial,
        primary_key=True,
        autoincrement=True,
        comment=COMMENTS["page_versions.id"],
    ),
    Column(
        "url_digest",
        LargeBinary(16),
        ForeignKey("page_snapshots.url_digest", ondelete="CASCADE"),
        nullable=False,
        comment=COMMENTS["page_versions.url_digest"],
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
    Column(
        "raw_sha256", LargeBinary(32), nullable=False, comment=COMMENTS["page_versions.raw_sha256"]
    ),
    Column(
        "content_sha256",
        LargeBinary(32),
        nullable=False,
        comment=COMMENTS["page_versions.content_sha256"],
    ),
    Column("simhash", SimHash64, nullable=False, comment=COMMENTS["page_versions.simhash"]),
    Column(
        "fingerprint_version",
        SmallInteger,
        nullable=False,
        comment=COMMENTS["page_versions.fingerprint_version"],
    ),
    Column("text_length", Integer, nullable=False, comment=COMMENTS["page_versions.text_length"]),
    Column("first_seen", UTCDateTime, nullable=False, comment=COMMENTS["page_versions.first_seen"]),
    Column(
        "last_seen",
        UTCDateTime,
        nullable=False,
        comment="last fetch that saw this version; for the current version see "
        "page_snapshots.last_seen",
    ),
    # Migration 0004: the flip-flop marker, and the page's host for host + time questions.
    Column("reverted_to", Integer, nullable=True, comment=COMMENTS["page_versions.reverted_to"]),
    Column("host", String(300), nullable=True, comment=COMMENTS["page_versions.host"]),
    CheckConstraint("kind IN ('new', 'changed', 'minor')", name="kind_known"),
    CheckConstraint(
        "distance IS NULL OR (distance >= 0 AND distance <= 64)", name="distance_range"
    ),
    UniqueConstraint("url_digest", "version_no"),
    comment="Append-only history: one row per distinct content version of a page.",
)
# Migration 0004: one host's changes over a time range (page_changes) in one range scan.
Index("ix_page_versions_host_first_seen", page_versions.c.host, page_versions.c.first_seen)

# Optional text snapshots (migration 0005): the normalised text of a version, once per content.
page_texts = Table(
    "page_texts",
    metadata,
    Column(
        "content_sha256",
        LargeBinary(32),
        primary_key=True,
        comment="SHA-256 of the normalised text: page_versions.content_sha256",
    ),
    Column("text_zstd", LargeBinary, nullable=False, comment="the UTF-8 text, zstd-compressed"),
    Column("text_bytes", Integer, nullable=False, comment="UTF-8 bytes of the text"),
    Column("compressed_bytes", Integer, nullable=False, comment="bytes of text_zstd"),
    Column(
        "fingerprint_version",
        SmallInteger,
        nullable=False,
        comment="normalisation rules that made the text",
    ),
    Column("first_stored", UTCDateTime, nullable=False),
    comment="Normalised page texts, kept once per content hash when store_text is on.",
)

# -- sitemap reconciliation (migration 0003) ---------------------------------------------------

#: The kinds of ``reconcile_findings`` rows (docs/reconcile.md defines each).
FINDING_KINDS = ("missing", "stale", "vanished")
#: The states of a ``reconcile_runs`` row.
RUN_STATUSES = ("running", "complete", "failed", "interrupted", "skipped")

reconcile_runs = Table(
    "reconcile_runs",
    metadata,
    Column("id", _BigSerial, primary_key=True, autoincrement=True),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime, nullable=True, comment="NULL while the run is going on"),
    Column(
        "status",
        String(12),
        nullable=False,
        comment="running, complete, failed, interrupted or skipped (another run held the lock)",
    ),
    Column("sites", Text, nullable=False, comment="the site or sitemap URLs given, one per line"),
    Column("arguments", Text, nullable=True, comment="the limits and options of the run, as JSON"),
    Column("missing", BigInteger, nullable=False, server_default=text("0")),
    Column("stale", BigInteger, nullable=False, server_default=text("0")),
    Column("vanished", BigInteger, nullable=False, server_default=text("0")),
    Column("fresh", BigInteger, nullable=False, server_default=text("0")),
    Column(
        "errors",
        Integer,
        nullable=False,
        server_default=text("0"),
        comment="sitemaps that could not be read (details in the command output)",
    ),
    Column("runner_host", String(255), nullable=True, comment="hostname of the machine that ran"),
    Column("runner_pid", Integer, nullable=True, comment="process id of the run"),
    CheckConstraint(
        "status IN ('running', 'complete', 'failed', 'interrupted', 'skipped')",
        name="status_known",
    ),
    comment="One row per `changewatch reconcile` run: what was asked, when, and the totals.",
)
Index("ix_reconcile_runs_started_at", reconcile_runs.c.started_at)

reconcile_findings = Table(
    "reconcile_findings",
    metadata,
    Column("id", _BigSerial, primary_key=True, autoincrement=True),
    Column(
        "run_id",
        _BigSerial,
        ForeignKey("reconcile_runs.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("host", String(300), nullable=False, comment="host[:port] of the canonical URL"),
    Column(
        "url",
        Text,
        nullable=True,
        comment="canonical URL as the URL-storage policy allows (NULL under 'none')",
    ),
    Column(
        "url_digest", LargeBinary(16), nullable=False, comment="blake2b-128 of the canonical URL"
    ),
    Column("kind", String(8), nullable=False, comment="missing, stale or vanished"),
    Column("sitemap_lastmod", UTCDateTime, nullable=True, comment="the entry's lastmod, if any"),
    Column(
        "stored_last_seen",
        UTCDateTime,
        nullable=True,
        comment="page_snapshots.last_seen when the run looked (NULL for missing)",
    ),
    Column(
        "sitemap",
        Text,
        nullable=True,
        comment="the sitemap that listed the URL (NULL for vanished)",
    ),
    CheckConstraint("kind IN ('missing', 'stale', 'vanished')", name="kind_known"),
    comment="What one reconcile run found: pages missing from the store, stale, or vanished.",
)
Index("ix_reconcile_findings_run_id", reconcile_findings.c.run_id, reconcile_findings.c.kind)
Index("ix_reconcile_findings_host", reconcile_findings.c.host, reconcile_findings.c.run_id)
Index("ix_reconcile_findings_url_digest", reconcile_findings.c.url_digest)

#: One row per host of a recorded reconcile run (migration 0007): what the host listed and
#: whether its vanished pages were computed, and if not, why. The shrink guard compares a
#: host's listing with its last accepted row here (docs/reconcile.md).
reconcile_hosts = Table(
    "reconcile_hosts",
    metadata,
    Column(
        "run_id",
        _BigSerial,
        ForeignKey("reconcile_runs.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("host", String(300), primary_key=True, comment="host[:port] of the canonical URLs"),
    Column(
        "listed",
        BigInteger,
        nullable=False,
        server_default=text("0"),
        comment="entries of the host listed by its sitemaps, repeats included",
    ),
    Column("duplicates", BigInteger, nullable=False, server_default=text("0")),
    Column("invalid", BigInteger, nullable=False, server_default=text("0")),
    Column("missing", BigInteger, nullable=False, server_default=text("0")),
    Column("stale", BigInteger, nullable=False, server_default=text("0")),
    Column("fresh", BigInteger, nullable=False, server_default=text("0")),
    Column("vanished", BigInteger, nullable=False, server_default=text("0")),
    Column(
        "stored",
        BigInteger,
        nullable=True,
        comment="stored pages of the host when vanished was considered (NULL: the walk was "
        "incomplete, they were not counted)",
    ),
    Column("sitemaps", Integer, nullable=False, server_default=text("0")),
    Column(
        "errors",
        Integer,
        nullable=False,
        server_default=text("0"),
        comment="sitemaps (or robots.txt) of the host that could not be read",
    ),
    Column(
        "vanished_checked",
        Boolean,
        nullable=False,
        comment="whether vanished was computed (false: withheld, see vanished_withheld)",
    ),
    Column(
        "vanished_withheld",
        Text,
        nullable=True,
        comment="why vanished was not computed: an incomplete walk, a time limit, or the "
        "shrink guard",
    ),
    Column(
        "shrink_guard",
        Text,
        nullable=True,
        comment="what the shrink guard found, also when --force-vanished overrode it",
    ),
    comment="One row per host of a reconcile run: its counts and whether vanished was computed.",
)
Index("ix_reconcile_hosts_host", reconcile_hosts.c.host, reconcile_hosts.c.run_id)

#: Blocks learned as noise per host (migration 0009; changewatch.fingerprint.noise): how
#: often each block key or shape was seen and changed on re-fetches whose prose stayed the
#: same, and since when it is learned. Rows of another fingerprint version are never used.
host_noise = Table(
    "host_noise",
    metadata,
    Column("host", String(300), primary_key=True, comment="host[:port] of the pages"),
    Column(
        "fingerprint_version",
        SmallInteger,
        primary_key=True,
        comment="the fingerprint rules the block keys and shapes belong to",
    ),
    Column(
        "kind",
        String(5),
        primary_key=True,
        comment="key: a block's path and ordinal (its text changes); shape: its text with "
        "digits as 0 (it comes and goes)",
    ),
    Column(
        "value",
        LargeBinary(8),
        primary_key=True,
        comment="blake2b-64 of the key or shape (Block.key / Block.shape)",
    ),
    Column(
        "path",
        Text,
        nullable=False,
        comment="structural path of the block when first seen (body/div/ul/li), for reading",
    ),
    Column(
        "observations",
        BigInteger,
        nullable=False,
        server_default=text("0"),
        comment="re-fetches (steps whose prose stayed the same) that saw it",
    ),
    Column(
        "changes",
        BigInteger,
        nullable=False,
        server_default=text("0"),
        comment="of those, the steps in which it changed",
    ),
    Column("first_seen", UTCDateTime, nullable=False),
    Column("last_seen", UTCDateTime, nullable=False),
    Column(
        "learned_at",
        UTCDateTime,
        nullable=True,
        comment="when it met the thresholds and became noise; NULL: still observed only",
    ),
    CheckConstraint("kind IN ('key', 'shape')", name="kind"),
    CheckConstraint("changes <= observations", name="changes_seen"),
    comment="Blocks learned as noise per host (changewatch noise list / reset).",
)

#: One row per fetch that saw a page's chrome or outlinks change (migration 0009), also when
#: its content did not (``content_changed`` false: ``should_parse`` said ``unchanged``). No
#: foreign key: ``page_snapshots`` may be hash-partitioned. Read through the ``page_history``
#: view (docs/sql.md).
page_chrome_changes = Table(
    "page_chrome_changes",
    metadata,
    Column("id", _BigSerial, primary_key=True, comment="surrogate key of the row"),
    Column(
        "url_digest",
        LargeBinary(16),
        nullable=False,
        comment="the page (page_snapshots.url_digest)",
    ),
    Column("seen_at", UTCDateTime, nullable=False, comment="the fetch that saw the change"),
    Column(
        "content_changed",
        Boolean,
        nullable=False,
        comment="whether that fetch also changed the content (made a page_versions row)",
    ),
    Column("chrome_changed", Boolean, nullable=False, comment="the chrome text changed"),
    Column("links_changed", Boolean, nullable=False, comment="the set of outlinks changed"),
    Column("chrome_sha256", LargeBinary(32), nullable=False, comment="the new chrome hash"),
    Column("links_sha256", LargeBinary(32), nullable=False, comment="the new outlinks hash"),
    CheckConstraint("chrome_changed OR links_changed", name="something_changed"),
    comment="Fetches that saw a page's chrome or outlinks change (the content may not have).",
)
Index(
    "ix_page_chrome_changes_url_digest",
    page_chrome_changes.c.url_digest,
    page_chrome_changes.c.seen_at,
)
Index("ix_page_chrome_changes_seen_at", page_chrome_changes.c.seen_at)

#: A host's template blocks (migration 0012; changewatch.fingerprint.templates): on how many
#: sampled pages each block text (and text at a place) stands, and since when it is learned;
#: the sampled pages and the values each counts in. Rows of another fingerprint version are
#: never used.
host_templates, host_template_pages = template_tables(metadata)
