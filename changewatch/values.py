"""Value objects passed between the layers — frozen dataclasses and named tuples, no I/O.

What ``should_parse`` answers (:class:`Decision`) and a page's history (:class:`Version`);
what the store holds of a page (:class:`Snapshot`); the writes a decision asks of the store
(:class:`NewPage`, :class:`Touch`, :class:`Change`, :class:`PageText`) and what it answers
(:class:`RawHit`, :class:`NearCandidate`, :class:`NearDuplicate`, :class:`PruneReport`).
Datetimes are timezone-aware UTC, checked on construction where they are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal, NamedTuple

from changewatch.errors import ConfigError

if TYPE_CHECKING:
    from changewatch.fingerprint import Fingerprint

__all__ = [
    "DEFAULT_DATABASE_URL",
    "DEFAULT_FLIP_WINDOW",
    "DEFAULT_MAX_PAGE_BYTES",
    "DEFAULT_MINOR_DISTANCE",
    "DEFAULT_SEEN_URL",
    "KINDS",
    "PATHS",
    "SEEN_ON_ERROR",
    "URL_POLICIES",
    "Change",
    "ChromeState",
    "Decision",
    "DecisionKind",
    "DecisionPath",
    "NearCandidate",
    "NearDuplicate",
    "NewPage",
    "PageText",
    "PruneReport",
    "RawHit",
    "SeenOnError",
    "Snapshot",
    "Touch",
    "UrlPolicy",
    "Version",
    "VersionDiff",
    "check_settings",
]

DecisionKind = Literal["new", "changed", "minor", "unchanged"]
KINDS: tuple[DecisionKind, ...] = ("new", "changed", "minor", "unchanged")
#: How a decision was reached (``Decision.path``).
DecisionPath = Literal[
    "raw", "normalised", "refingerprint", "not-modified", "simhash", "binary", "redirect", "new"
]
PATHS: tuple[DecisionPath, ...] = (
    "raw",
    "normalised",
    "refingerprint",
    "not-modified",
    "simhash",
    "binary",
    "redirect",
    "new",
)

#: How many of a page's latest versions a change is compared with to find a flip-flop.
DEFAULT_FLIP_WINDOW = 10

# -- settings: their defaults and checks (read from the environment by changewatch.config) ---

DEFAULT_DATABASE_URL = "sqlite:///changewatch.db"
DEFAULT_SEEN_URL = "file:changewatch.seen"
DEFAULT_MINOR_DISTANCE = 3
DEFAULT_MAX_PAGE_BYTES = 10 * 1024 * 1024
UrlPolicy = Literal["full", "no-query", "none"]
SeenOnError = Literal["raise", "assume-new"]
SEEN_ON_ERROR: tuple[SeenOnError, ...] = ("raise", "assume-new")
URL_POLICIES: tuple[UrlPolicy, ...] = ("full", "no-query", "none")


def check_settings(minor_distance: int, max_page_bytes: int, url_policy: str) -> None:
    """Raise :class:`ConfigError` naming the first invalid setting."""
    if (
        isinstance(minor_distance, bool)
        or not isinstance(minor_distance, int)
        or not (0 <= minor_distance <= 64)
    ):
        raise ConfigError(f"minor_distance must be an integer from 0 to 64, got {minor_distance!r}")
    if (
        isinstance(max_page_bytes, bool)
        or not isinstance(max_page_bytes, int)
        or (max_page_bytes <= 0)
    ):
        raise ConfigError(f"max_page_bytes must be a positive integer, got {max_page_bytes!r}")
    if url_policy not in URL_POLICIES:
        raise ConfigError(
            f"url_policy must be one of {', '.join(URL_POLICIES)}, got {url_policy!r}"
        )


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
    rules, re-keyed), ``"not-modified"`` (an HTTP 304, no body), ``"simhash"``, ``"binary"``
    (a body that is not HTML — PDF, image, archive, executable — hashed as bytes and never
    parsed: ``new`` or, for other bytes, ``changed`` with ``distance`` ``None``, binaries
    having no SimHash), ``"redirect"`` (a redirect stub: a ``<meta http-equiv="refresh">``
    sending the reader to another URL within 5 seconds, its URL in ``redirect_to``; on a
    stored page ``unchanged``, the stored version kept as it was, as for an HTTP redirect;
    on a new URL ``new``) or ``"new"``.
    ``reverted_to`` is, for a ``changed`` or ``minor`` page, the number of an earlier version
    (among the last ``flip_window``) whose normalised content it equals again — a flip-flop;
    ``None`` otherwise. ``chrome_changed``/``links_changed``: the page's chrome (menus,
    banners, footers) or its set of outlinks differs from the stored one's — also on an
    ``unchanged`` page, whose content did not change (a crawler may still want its new links).
    """

    kind: DecisionKind
    url: str
    url_digest: bytes
    content_sha256: bytes
    simhash: int
    distance: int | None = None
    duplicate_of: str | None = None
    path: DecisionPath = "new"
    version: int = 1
    reverted_to: int | None = None
    chrome_changed: bool = False
    links_changed: bool = False
    redirect_to: str | None = None

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
    chrome_sha256: bytes | None = None
    links_sha256: bytes | None = None


# -- what a decision asks of the store, and what the store answers ----------------------------


@dataclass(frozen=True, slots=True)
class NewPage:
    """Insert a first snapshot and its version 1."""

    url_digest: bytes
    host: str
    url: str | None
    canon_version: int
    fp: Fingerprint
    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True, slots=True)
class RawHit:
    """A page whose stored raw hash matched: counted and moved by the fast-path statement."""

    content_sha256: bytes
    simhash: int
    version_count: int


@dataclass(frozen=True, slots=True)
class Touch:
    """An unchanged fetch: count it, move ``last_seen``, remember the latest raw hash.

    With ``fp`` (a row fingerprinted under older rules whose page is unchanged) the row is
    re-keyed to the new fingerprint and its version; no ``page_versions`` row is added.
    ``chrome``: the page's chrome and outlinks hashes, and whether each changed, to keep.
    """

    url_digest: bytes
    expected_versions: int
    raw_sha256: bytes
    etag: str | None = None
    last_modified: str | None = None
    fp: Fingerprint | None = None
    chrome: ChromeState | None = None


@dataclass(frozen=True, slots=True)
class ChromeState:
    """A fetched page's chrome and outlinks hashes, and whether they differ from the stored
    ones (``False`` when nothing was stored to compare with)."""

    chrome_sha256: bytes
    links_sha256: bytes
    chrome_changed: bool = False
    links_changed: bool = False


@dataclass(frozen=True, slots=True)
class Change:
    """A changed or minor fetch: replace the snapshot's fingerprint and append a version."""

    url_digest: bytes
    expected_versions: int
    fp: Fingerprint
    kind: DecisionKind
    distance: int | None
    previous_last_seen: datetime
    etag: str | None = None
    last_modified: str | None = None
    reverted_to: int | None = None
    host: str | None = None
    chrome: ChromeState | None = None


@dataclass(frozen=True, slots=True)
class PageText:
    """A normalised text to keep: its content hash, the text and the rules that made it."""

    content_sha256: bytes
    text: str
    fingerprint_version: int


class NearDuplicate(NamedTuple):
    """A stored page near a SimHash: its URL digest, URL (``None`` if not kept), distance."""

    url_digest: bytes
    url: str | None
    distance: int


class NearCandidate(NamedTuple):
    """A stored page sharing at least one band with a queried SimHash."""

    url_digest: bytes
    url: str | None
    simhash: int
    content_sha256: bytes = b""


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What a prune removed (or, with ``dry_run``, would remove), per host and in total."""

    cutoff: datetime
    keep_versions: int
    dry_run: bool
    removed_by_host: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    #: Stored texts (``page_texts``) no remaining version refers to, deleted after the rows.
    texts_removed: int = 0
    #: Chrome and outlink changes (``page_chrome_changes``) seen before the cut-off, of
    #: fetches that left the content unchanged or whose version was removed.
    chrome_changes_removed: int = 0
    #: Reconcile runs started before the cut-off (not running, nor a host's latest complete
    #: or accepted run), and their findings.
    reconcile_runs_removed: int = 0
    reconcile_findings_removed: int = 0
    #: SimHashes of ``page_simhashes`` no stored page holds any more, deleted last (with
    #: ``dry_run``: counted).
    simhashes_removed: int = 0

    @property
    def removed(self) -> int:
        """Rows removed in total."""
        return sum(self.removed_by_host.values())


@dataclass(frozen=True, slots=True)
class VersionDiff:
    """A diff between two versions of one page (``from_version`` 0: nothing, before v1)."""

    url: str
    from_version: int
    to_version: int
    lines: list[str]
