"""changewatch: URL seen-sets, content change detection and sitemap reconciliation."""

from changewatch._version import __version__
from changewatch.errors import (
    ChangewatchError,
    ConfigError,
    InvalidURLError,
    PageTooLargeError,
    SchemaOutOfDateError,
    SeenSetError,
    SeenSetUnavailableError,
    StoreConflictError,
    StoreError,
)
from changewatch.fingerprint import (
    Fingerprint,
    FingerprintPolicy,
    fingerprint,
    fingerprint_record,
    hamming,
    normalise,
)
from changewatch.model import Decision, Version
from changewatch.store.near import NearDuplicate
from changewatch.urls import canonicalise, url_digest
from changewatch.watch import ChangeWatch, should_parse

__all__ = [
    "ChangeWatch",
    "ChangewatchError",
    "ConfigError",
    "Decision",
    "Fingerprint",
    "FingerprintPolicy",
    "InvalidURLError",
    "NearDuplicate",
    "PageTooLargeError",
    "SchemaOutOfDateError",
    "SeenSetError",
    "SeenSetUnavailableError",
    "StoreConflictError",
    "StoreError",
    "Version",
    "__version__",
    "canonicalise",
    "fingerprint",
    "fingerprint_record",
    "hamming",
    "normalise",
    "should_parse",
    "url_digest",
]
