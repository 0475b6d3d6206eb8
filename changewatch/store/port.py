"""The store port: what the orchestration (:mod:`changewatch.watch`) asks of a snapshot
store, as :class:`typing.Protocol` classes.

:class:`~changewatch.store.store.SnapshotStore` (SQLAlchemy, SQLite or Postgres) is the one
implementation; ``ChangeWatch(store=...)`` accepts anything that has these methods. Every
method raises :class:`~changewatch.errors.StoreError` on failure (``retryable`` set), and a
transaction's ``write`` raises :class:`~changewatch.store.errors.WriteConflict` when a page
it decided on was changed by another worker meanwhile — nothing is written then.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, Protocol

from changewatch.fingerprint import NoiseRule
from changewatch.fingerprint.simhash64 import MAX_NEAR_DISTANCE
from changewatch.fingerprint.templates import TemplateValue
from changewatch.schedule import DuePage
from changewatch.values import (
    Change,
    NearCandidate,
    NearDuplicate,
    NewPage,
    PageText,
    PruneReport,
    RawHit,
    Snapshot,
    Touch,
    Version,
)

__all__ = ["StorePort", "TransactionPort"]


class TransactionPort(Protocol):
    """One transaction: read what a batch needs, then write its decisions."""

    def lookup(self, digests: Sequence[bytes]) -> dict[bytes, Snapshot]:
        """The stored snapshots of these pages (locked for the transaction where possible)."""
        ...

    def copy_candidates(
        self,
        pages: Sequence[tuple[bytes, int | None]],
        per_content: int = 1,
        radius: int = MAX_NEAR_DISTANCE,
    ) -> list[NearCandidate]:
        """For new pages ``(content hash, SimHash or None)``: each content's
        ``per_content`` holders with the smallest URL digests, and for those whose content
        has fewer holders, the ``per_content`` such holders of each stored SimHash within
        ``radius`` (bounded by the holders read, not by how many pages share a content or
        a SimHash)."""
        ...

    def recent_contents(
        self, digests: Sequence[bytes], window: int, fingerprint_version: int
    ) -> dict[bytes, list[tuple[int, bytes]]]:
        """The content hashes of each page's last ``window`` versions, newest first."""
        ...

    def write(
        self,
        now: datetime,
        new: Sequence[NewPage] = (),
        touches: Sequence[Touch] = (),
        changes: Sequence[Change] = (),
        texts: Sequence[PageText] = (),
    ) -> None:
        """Apply one batch of decisions, conditionally on what was read."""
        ...


class StorePort(Protocol):
    """The snapshot store as the orchestration uses it."""

    def transaction(self) -> AbstractContextManager[TransactionPort]:
        """A transaction that commits on success and rolls back on any exception."""
        ...

    def touch_unchanged(
        self,
        now: datetime,
        digest: bytes,
        raw_sha256: bytes,
        fingerprint_version: int,
        etag: str | None = None,
        last_modified: str | None = None,
    ) -> RawHit | None:
        """Count an identical re-fetch in one statement; ``None`` (nothing written) if the
        stored raw hash or rules differ."""
        ...

    def touch_not_modified(
        self, now: datetime, digest: bytes, etag: str | None, last_modified: str | None
    ) -> RawHit | None:
        """Count an HTTP 304; ``None`` for a page never stored."""
        ...

    def validators(self, digest: bytes) -> tuple[str | None, str | None] | None:
        """The stored ``(etag, last_modified)``; ``None`` for a page never stored."""
        ...

    def due(
        self, now: datetime, limit: int, host: str | None = None, *, full_scan: bool = False
    ) -> list[DuePage]:
        """The pages most likely changed by ``now``, most likely first."""
        ...

    def texts(self, contents: Sequence[bytes]) -> dict[bytes, str]:
        """Stored normalised texts by content hash."""
        ...

    def simhash_of(self, digest: bytes) -> int | None:
        """A page's stored SimHash, ``None`` if never stored."""
        ...

    def near_duplicates(
        self, simhash: int, max_distance: int, exclude_digest: bytes | None, limit: int
    ) -> list[NearDuplicate]:
        """Stored pages within ``max_distance`` SimHash bits, nearest first."""
        ...

    def history(self, digest: bytes) -> list[Version]:
        """A page's versions, oldest first."""
        ...

    def canon_versions(self, limit: int | None = None) -> dict[int, int]:
        """Rows per canonicalisation rule set (``limit``: of a sample)."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counts across the store."""
        ...

    def prune(
        self, keep_versions: int, older_than: timedelta, now: datetime, *, dry_run: bool = False
    ) -> PruneReport:
        """Delete old versions (never a page's current or latest ``keep_versions``)."""
        ...

    def learned_noise(self, host: str, version: int) -> frozenset[bytes]:
        """The block keys and shapes learned as noise for a host (``volatile_blocks``)."""
        ...

    def record_noise(
        self,
        host: str,
        version: int,
        rules: Sequence[NoiseRule],
        now: datetime,
        *,
        min_observations: int,
        min_share: float,
    ) -> None:
        """Add what re-fetches of a host saw to its noise rules' counts."""
        ...

    def noise_rules(
        self, host: str | None = None, *, learned_only: bool = False
    ) -> list[dict[str, Any]]:
        """The noise rules (of one host), as rows of ``host_noise``."""
        ...

    def reset_noise(self, host: str) -> int:
        """Forget a host's noise rules; how many there were."""
        ...

    def learned_templates(self, host: str, version: int) -> frozenset[bytes]:
        """The text hashes and block keys learned as a host's template (``template_blocks``)."""
        ...

    def record_templates(
        self,
        host: str,
        version: int,
        pages: Sequence[tuple[bytes, Sequence[TemplateValue]]],
        now: datetime,
        *,
        min_pages: int,
        min_share: float,
    ) -> bool:
        """Count what some of a host's pages show of its template; whether a count changed."""
        ...

    def template_rules(
        self, host: str | None = None, *, learned_only: bool = False
    ) -> list[dict[str, Any]]:
        """The template rules (of one host), as rows of ``host_templates``."""
        ...

    def reset_templates(self, host: str) -> int:
        """Forget a host's template rules and sampled pages; how many rules there were."""
        ...

    def close(self) -> None:
        """Release every connection."""
        ...
