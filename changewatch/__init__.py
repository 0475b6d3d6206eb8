"""changewatch: URL seen-sets, content change detection and sitemap reconciliation.

The names below are all importable from the package, but the store (``ChangeWatch``,
``should_parse``, built on SQLAlchemy) loads on first use: a process that
only canonicalises URLs, fingerprints pages or keeps a seen-set — a Scrapy dupefilter —
never loads SQLAlchemy.
"""

from typing import TYPE_CHECKING, Any

from changewatch._version import __version__
from changewatch.errors import (
    ChangewatchError,
    ConfigError,
    InvalidURLError,
    PageTooComplexError,
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
from changewatch.urls import canonicalise, url_digest
from changewatch.values import Decision, NearDuplicate, Version

if TYPE_CHECKING:
    from changewatch.watch import ChangeWatch, should_parse

#: Lazily loaded names and the module each comes from. (Never the name of a submodule:
#: importing ``changewatch.X`` sets the package attribute ``X`` to that module.)
_LAZY = {
    "ChangeWatch": "changewatch.watch",
    "should_parse": "changewatch.watch",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'changewatch' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ChangeWatch",
    "ChangewatchError",
    "ConfigError",
    "Decision",
    "Fingerprint",
    "FingerprintPolicy",
    "InvalidURLError",
    "NearDuplicate",
    "PageTooComplexError",
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
