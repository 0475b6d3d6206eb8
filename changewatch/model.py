"""Value objects passed between the layers: decisions, versions, stored snapshots."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

__all__ = ["DEFAULT_FLIP_WINDOW", "KINDS", "Decision", "DecisionKind", "Snapshot", "Version"]

DecisionKind = Literal["new", "changed", "minor", "unchanged"]
KINDS: tuple[DecisionKind, ...] = ("new", "changed", "minor", "unchanged")

#: How many of a page's latest versions a change is compared with to find a flip-flop.
DEFAULT_FLIP_WINDOW = 10


def _check_utc(name: str, value: datetime | None) -> None:
    if value is not None and value.utcoffset() != timedelta(0):
        raise ValueError(f"{name} must be a timezone-aware UTC datetime, got {value!r}")


@dataclass(frozen=True, slots=True)
class Decision:
    """What ``should_parse`` decided for one page; truthy when the page should be parsed.

    ``distance`` is the SimHash Hamming distance from the stored version (``None`` for a new
    page); ``duplicate_of`` is, for a new page, the URL of another stored page with the same
    normalised content, or else the nearest within ``minor_distance`` SimHash bits (its
    digest in hex when the URL-storage policy keeps no URL); ``path`` says how the answer
    was reached: ``"raw"`` (identical bytes, nothing parsed), ``"normalised"`` (same visible
    text), ``"refingerprint"`` (identical bytes of a row stored under older fingerprint
    rules, re-keyed), ``"not-modified"`` (an HTTP 304, no body), ``"simhash"`` or ``"new"``.
    ``reverted_to`` is, for a ``changed`` or ``minor`` page, the number of an earlier version
    (among the last ``flip_window``) whose normalised content it equals again — a flip-flop;
    ``None`` otherwise.
    """

    kind: DecisionKind
    url: str
    url_digest: bytes
    content_sha256: bytes
    simhash: int
    distance: int | None = None
    duplicate_of: str | None = None
    path: str = "new"
    version: int = 1
    reverted_to: int | None = None

    def __bool__(self) -> bool:
        return self.kind != "unchanged"


@dataclass(frozen=True, slots=True)
class Version:
    """One distinct content version of a page, as kept in ``page_versions``."""

    version: int
    kind: Literal["new", "changed", "minor"]
    distance: int | None
    content_sha256: bytes
    raw_sha256: bytes
    simhash: int
    text_length: int
    first_seen: datetime
    last_seen: datetime
    reverted_to: int | None = None

    def __post_init__(self) -> None:
        _check_utc("first_seen", self.first_seen)
        _check_utc("last_seen", self.last_seen)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The stored state of one page that a decision is made against."""

    url_digest: bytes
    url: str | None
    raw_sha256: bytes
    content_sha256: bytes
    simhash: int
    fingerprint_version: int
    version_count: int
    last_seen: datetime
    host: str | None = None
