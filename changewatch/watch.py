"""``ChangeWatch``: canonicalise, fingerprint, seen-set and snapshot store, composed.

The decision flow (DESIGN.md, "One page, end to end"), cheapest step first:

1. raw-bytes SHA-256 equals the stored one → ``unchanged`` (no HTML parsed at all);
2. normalised-text SHA-256 equals the stored one → ``unchanged`` (the new raw hash is kept,
   so the next identical re-render takes step 1);
3. no stored row → ``new`` (``duplicate_of`` names another URL with the same content, else
   the nearest stored page within ``minor_distance`` — at most 3, the reach of the band index);
4. SimHash Hamming distance ≤ ``minor_distance`` → ``minor``, otherwise ``changed``.

A row fingerprinted under an older ``fingerprint_version`` cannot be compared by content
hash: its hash was made by other rules. If the page's bytes equal the stored raw hash it is
``unchanged`` (path ``"refingerprint"``) and the row is re-keyed in place — new content hash,
SimHash and version, no history row. If the bytes differ too, the SimHash distance decides as
in step 4 (old and new SimHash come from different rules, so the first fetch after a rule
change can report ``minor`` or ``changed`` for a page whose visible text did not change;
later fetches compare like with like).

A batch reads its snapshots in one query and writes in one transaction. Writes are
conditional on what was read (see :mod:`changewatch.store.store`); a batch that loses a
race with another worker is rolled back and decided again on fresh data, so concurrent
workers never lose a count or duplicate a version.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

from changewatch.conditional import conditional_request_headers, validators_from_headers
from changewatch.config import (
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_MINOR_DISTANCE,
    SEEN_ON_ERROR,
    SeenOnError,
    Settings,
    UrlPolicy,
    check_settings,
    load_settings,
)
from changewatch.errors import (
    CanonVersionMismatchError,
    ConfigError,
    PageNotStoredError,
    PageTooLargeError,
    SeenSetUnavailableError,
    StoreConflictError,
    UnexpectedStatusError,
)
from changewatch.fingerprint import (
    FINGERPRINT_VERSION,
    Fingerprint,
    FingerprintPolicy,
    content_sha256,
    hamming,
    is_binary,
    normalise_markup,
    simhash,
)
from changewatch.fingerprint import raw_sha256 as hash_raw
from changewatch.model import DEFAULT_FLIP_WINDOW, Decision, DecisionKind, Version
from changewatch.observe import (
    NULL_OBSERVER,
    Observer,
    observed_decisions,
    observed_mark_seen,
    report_seen_error,
)
from changewatch.schedule import DuePage
from changewatch.seen import SeenSet, open_seen_set
from changewatch.store import (
    MAX_NEAR_DISTANCE,
    Change,
    NearCandidate,
    NearDuplicate,
    NewPage,
    RawHit,
    SnapshotStore,
    StoreTransaction,
    Touch,
    WriteConflict,
    nearest,
    open_store,
)
from changewatch.store import schedule as schedule_queries
from changewatch.store.history import reverted_to
from changewatch.store.near import DEFAULT_NEAR_LIMIT, check_near_distance
from changewatch.store.prune import PruneReport
from changewatch.store.texts import PageText, write_texts
from changewatch.urls import (
    CanonPolicy,
    canon_version,
    canonicalise,
    digest_canonical,
    stored_url,
    url_host,
)
from changewatch.versiondiff import VersionDiff, version_diff

__all__ = ["DEFAULT_MAX_ATTEMPTS", "ChangeWatch", "should_parse"]

log = logging.getLogger("changewatch")

#: Times a batch is decided again after losing a race before StoreConflictError.
DEFAULT_MAX_ATTEMPTS = 10

#: Snapshot rows read on open to check they were keyed by the same canonicalisation rules.
DEFAULT_CANON_CHECK_ROWS = 10_000

Html = str | bytes
#: A page for should_parse_many: (url, body) or (url, body, response headers).
BatchPage = tuple[str, Html] | tuple[str, Html, Mapping[str, str] | None]


@dataclass(slots=True)
class _Page:
    """One page of a batch, validated, with what is known of it so far."""

    url: str
    digest: bytes
    html: Html
    raw: bytes
    content_type: str | None
    etag: str | None
    last_modified: str | None
    text: str | None = None
    content: bytes | None = None
    fp: Fingerprint | None = None
    binary: bool = False


class ChangeWatch:
    """Decides, per fetched page, whether it needs parsing, and records the history.

    ``database_url`` and ``seen_url`` name the store and the seen-set; pass ``store=`` or
    ``seen=`` instead to hand in adapters built elsewhere. ``clock`` returns the current
    UTC time (tests pass a fixed one). The seen-set is opened on first use.

    ``seen_on_error`` (``"raise"`` or ``"assume-new"``) is what ``mark_seen`` does when a
    shared seen-set is unreachable. ``seen_precheck=True`` lets ``should_parse`` take a URL
    the seen-set has never seen as new without reading its snapshot first — worth it when
    the seen-set is long-lived (it holds every URL ever stored) and local; a wrong guess costs
    one retried transaction, never a wrong answer.

    ``fingerprint_policy`` (:class:`~changewatch.fingerprint.FingerprintPolicy`) says what of a
    page is noise, per host; binary bodies (PDF, images, archives: by magic bytes or
    ``content_type``) are compared by their raw bytes and a change is always ``changed``.

    ``flip_window`` (default 10; 0 turns it off): a change whose normalised content equals
    that of one of the page's last ``flip_window`` versions is recorded with ``reverted_to``
    (that version's number) — a flip-flop. "unchanged" compares with the current version
    only, so A → B → A is a change (version 3, ``reverted_to=1``), not "unchanged".
    ``observer`` (:class:`~changewatch.observe.Observer`) is told every decision, every
    ``mark_seen`` and every store or seen-set failure (:mod:`changewatch.metrics` turns that
    into Prometheus metrics); decisions are also logged, one DEBUG line each.
    """

    def __init__(
        self,
        database_url: str | None = None,
        seen_url: str | None = None,
        *,
        store: SnapshotStore | None = None,
        seen: SeenSet | None = None,
        minor_distance: int = DEFAULT_MINOR_DISTANCE,
        max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
        url_policy: UrlPolicy = "full",
        clock: Callable[[], datetime] | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        seen_on_error: SeenOnError = "raise",
        seen_precheck: bool = False,
        canon_policy: CanonPolicy | None = None,
        allow_mixed_canon: bool = False,
        fingerprint_policy: FingerprintPolicy | None = None,
        flip_window: int = DEFAULT_FLIP_WINDOW,
        store_text: bool = False,
        observer: Observer | None = None,
    ) -> None:
        check_settings(minor_distance, max_page_bytes, url_policy)
        if isinstance(flip_window, bool) or not isinstance(flip_window, int) or flip_window < 0:
            raise ConfigError(f"flip_window must be an integer >= 0, got {flip_window!r}")
        self.flip_window = flip_window
        if seen_on_error not in SEEN_ON_ERROR:
            raise ConfigError(
                f"seen_on_error must be one of {', '.join(SEEN_ON_ERROR)}, got {seen_on_error!r}"
            )
        self.seen_on_error = seen_on_error
        self.observer = observer or NULL_OBSERVER
        self.seen_precheck = seen_precheck
        defaults = Settings()
        self._seen_url = seen_url or defaults.seen_url
        self._seen = seen
        self._seen_lock = threading.Lock()
        self._store = store or open_store(database_url or defaults.database_url)
        self.minor_distance = minor_distance
        self.max_page_bytes = max_page_bytes
        self.url_policy = url_policy
        self._clock = clock or _utcnow
        self._max_attempts = max_attempts
        self.canon_policy = canon_policy
        self.fingerprint_policy = fingerprint_policy
        self.store_text = store_text
        self.canon_version = canon_version(canon_policy)
        self._check_canon_version(allow_mixed_canon, close=store is None)

    @classmethod
    def from_env(cls, **overrides: Any) -> ChangeWatch:
        """Build from ``CHANGEWATCH_*`` environment variables (see :mod:`changewatch.config`)."""
        settings = load_settings()
        kwargs: dict[str, Any] = {
            "database_url": settings.database_url,
            "seen_url": settings.seen_url,
            "minor_distance": settings.minor_distance,
            "max_page_bytes": settings.max_page_bytes,
            "url_policy": settings.url_policy,
            "canon_policy": settings.canon_policy,
            "fingerprint_policy": settings.fingerprint_policy,
            "seen_on_error": settings.seen_on_error,
            "store_text": settings.store_text,
            "flip_window": settings.flip_window,
        }
        kwargs.update(overrides)
        return cls(**kwargs)

    @property
    def store(self) -> SnapshotStore:
        """The snapshot store adapter."""
        return self._store

    @property
    def seen(self) -> SeenSet:
        """The seen-set adapter, opened on first use."""
        if self._seen is None:
            with self._seen_lock:
                if self._seen is None:
                    # An ageing seen-set reads "now" from the watch's clock too.
                    self._seen = open_seen_set(
                        self._seen_url, clock=lambda: self._clock().timestamp()
                    )
        return self._seen

    # -- enqueue time -------------------------------------------------------------------

    def mark_seen(self, url: str) -> bool:
        """Add a URL to the seen-set; True when it is new (enqueue it).

        Checked and set in one step by the seen-set, so of several workers marking the same
        URL exactly one is told True (a Bloom filter may also say False for a URL it never
        saw, at its false-positive rate). If a shared seen-set cannot be reached,
        ``seen_on_error`` decides: ``"raise"`` (the default) raises
        ``SeenSetUnavailableError``; ``"assume-new"`` logs a warning and answers True, so the
        crawl goes on and may fetch a URL twice rather than miss it.
        """
        return self.mark_seen_many([url])[0]

    @observed_mark_seen
    def mark_seen_many(self, urls: Iterable[str]) -> list[bool]:
        """``mark_seen`` for several URLs; every URL is validated before any is added."""
        digests = [digest_canonical(canonicalise(url, self.canon_policy)) for url in urls]
        try:
            return self.seen.add_many(digests)
        except SeenSetUnavailableError as exc:
            if self.seen_on_error == "raise":
                raise
            report_seen_error(self.observer)
            log.warning("seen-set unavailable (%s); assuming %d URL(s) new", exc, len(digests))
            return [True] * len(digests)

    # -- fetch time ---------------------------------------------------------------------

    @observed_decisions
    def should_parse(
        self,
        url: str,
        html: Html | None,
        *,
        headers: Mapping[str, str] | None = None,
        status: int = 200,
        content_type: str | None = None,
        etag: str | None = None,
        last_modified: str | None = None,
    ) -> Decision:
        """Decide whether a fetched page needs parsing, and record the fetch.

        ``html`` is the body as ``str`` or ``bytes`` (any encoding; ``content_type`` is the
        HTTP header, used for its charset). Raises ``InvalidURLError`` for a bad URL,
        ``TypeError`` for a body that is neither, ``PageTooLargeError`` above
        ``max_page_bytes``, ``StoreError`` when the store fails; nothing is written then.

        ``headers`` are the response headers (any key case): a valid ``ETag`` and
        ``Last-Modified`` are stored for :meth:`conditional_headers` (malformed ones are
        ignored; ``etag=`` / ``last_modified=`` override them). ``status=304`` records a
        Not Modified answer as ``unchanged`` without a body (``html`` ``None`` or empty;
        ``PageNotStoredError`` for a page never stored). Any status but 2xx and 304 raises
        ``UnexpectedStatusError``: errors and redirects are not page versions.
        """
        if status == 304:
            return self._not_modified(url, html, headers, etag, last_modified)
        if isinstance(status, bool) or not isinstance(status, int) or not 200 <= status < 300:
            raise UnexpectedStatusError(url, status)
        if html is None:
            raise TypeError("html must be str or bytes (None only with status=304)")
        etag, last_modified = validators_from_headers(headers, etag, last_modified)
        page = self._prepare(url, html, content_type, etag, last_modified)
        if self.seen_precheck and page.digest not in self.seen:
            return self._decide_batch([page])[0]  # never seen: new, no fast path to try
        # The common re-crawl case, identical bytes, in one autocommitted statement.
        hit = self._store.touch_unchanged(
            self._clock(), page.digest, page.raw, FINGERPRINT_VERSION, etag, last_modified
        )
        if hit is not None:
            return self._raw_unchanged(page, hit)
        return self._decide_batch([page])[0]

    @observed_decisions
    def should_parse_many(self, pages: Iterable[BatchPage]) -> list[Decision]:
        """``should_parse`` for a batch: one lookup query and one write transaction.

        Each page is ``(url, html)`` or ``(url, html, headers)`` (response headers, for the
        validators; 304s go through :meth:`should_parse`). Answers equal those of one-by-one
        calls in order, including a URL that appears twice. Every page is validated first; a
        failing batch writes nothing.
        """
        prepared = []
        for item in pages:
            url, html = item[0], item[1]
            etag, last_modified = validators_from_headers(item[2] if len(item) > 2 else None)
            prepared.append(self._prepare(url, html, None, etag, last_modified))
        # A URL repeated within the batch is decided after its earlier occurrence.
        rounds: list[list[int]] = []
        occurrences: dict[bytes, int] = {}
        for index, page in enumerate(prepared):
            n = occurrences.get(page.digest, 0)
            occurrences[page.digest] = n + 1
            if n == len(rounds):
                rounds.append([])
            rounds[n].append(index)
        decisions: list[Decision | None] = [None] * len(prepared)
        for indices in rounds:
            for index, decision in zip(
                indices, self._decide_batch([prepared[i] for i in indices]), strict=True
            ):
                decisions[index] = decision
        return [d for d in decisions if d is not None]

    def near_duplicates(
        self,
        url_or_simhash: str | int,
        max_distance: int = MAX_NEAR_DISTANCE,
        *,
        limit: int = DEFAULT_NEAR_LIMIT,
    ) -> list[NearDuplicate]:
        """Stored pages whose SimHash is within ``max_distance`` bits, nearest first.

        A ``str`` is a URL: it is canonicalised, its stored SimHash is searched for and the
        page itself left out (an empty list if it was never stored). An ``int`` is an unsigned
        64-bit SimHash. Each result is ``(url_digest, url, distance)``; ``url`` is ``None``
        when the URL-storage policy keeps none. ``max_distance`` must be 0..3: past 3 the
        4-band index cannot find every match, so ``ValueError`` is raised instead of an
        incomplete answer.
        """
        if isinstance(url_or_simhash, str):
            digest = digest_canonical(canonicalise(url_or_simhash, self.canon_policy))
            stored = self._store.simhash_of(digest)
            if stored is None:
                check_near_distance(max_distance)
                return []
            return self._store.near_duplicates(stored, max_distance, digest, limit)
        return self._store.near_duplicates(url_or_simhash, max_distance, None, limit)

    def conditional_headers(self, url: str) -> dict[str, str]:
        """``If-None-Match`` / ``If-Modified-Since`` for the next fetch of ``url``.

        From the validators stored with its last fetch; ``{}`` for a page never stored or
        stored without validators.
        """
        digest = digest_canonical(canonicalise(url, self.canon_policy))
        stored = schedule_queries.validators_of(self._store, digest)
        return {} if stored is None else conditional_request_headers(*stored)

    def due(
        self, limit: int, now: datetime | None = None, host: str | None = None
    ) -> list[DuePage]:
        """The ``limit`` pages most likely to have changed since their last fetch.

        Most likely first, each with its estimated change rate, the probability it changed
        by ``now`` (default: the clock) and the changes expected; ``host`` (``host[:port]``,
        as stored) narrows it to one site. See :mod:`changewatch.schedule` for the estimator
        and :mod:`changewatch.store.schedule` for how the index is used.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a non-negative integer, got {limit!r}")
        return schedule_queries.due(self._store, now or self._clock(), limit, host)

    def diff(
        self, url: str, from_version: int | None = None, to_version: int | None = None
    ) -> VersionDiff:
        """A unified diff of the stored texts of two versions (default: previous → current).

        Needs ``store_text`` on when those versions were seen: ``TextNotStoredError`` if not;
        ``PageNotStoredError`` for a page or version the store does not hold.
        """
        canonical = canonicalise(url, self.canon_policy)
        return version_diff(
            self._store, canonical, digest_canonical(canonical), from_version, to_version
        )

    def history(self, url: str) -> list[Version]:
        """Every stored version of a page, oldest first (empty if never stored)."""
        return self._store.history(digest_canonical(canonicalise(url, self.canon_policy)))

    def prune(
        self,
        keep_versions: int,
        older_than: timedelta,
        *,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> PruneReport:
        """Delete version rows last seen before ``now - older_than`` that are not among
        their page's latest ``keep_versions`` (at least 1: the current version is never
        removed); with ``dry_run``, only count them. Safe beside writing crawlers (bounded
        batches); ``version_count`` keeps counting versions ever made. ``ValueError`` for a
        bad argument."""
        return self._store.prune(keep_versions, older_than, now or self._clock(), dry_run=dry_run)

    def stats(self) -> dict[str, Any]:
        """Store counters, and the seen-set's figures if it has been opened.

        ``canon_versions`` counts rows per canonicalisation rule set (every row read);
        ``canon_mismatch`` is true when any was keyed by rules other than ``canon_version``.
        """
        result = self._store.stats()
        found = self._store.canon_versions()
        result["canon_version"] = self.canon_version
        result["canon_versions"] = {str(v): n for v, n in sorted(found.items())}
        result["canon_mismatch"] = bool(set(found) - {self.canon_version})
        if self._seen is not None:
            result["seen"] = dict(self._seen.stats())
        return result

    def close(self) -> None:
        """Persist the seen-set and release every connection."""
        try:
            if self._seen is not None:
                self._seen.close()
        finally:
            self._store.close()

    def __enter__(self) -> ChangeWatch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------

    def _check_canon_version(self, allow_mixed: bool, *, close: bool) -> None:
        """Refuse (or, with ``allow_mixed``, warn about) a store keyed by other URL rules.

        Reads at most :data:`DEFAULT_CANON_CHECK_ROWS` rows, so a minority of other rows in
        a large table can go unseen here; ``stats()`` counts every row.
        """
        found = self._store.canon_versions(limit=DEFAULT_CANON_CHECK_ROWS)
        if not set(found) - {self.canon_version}:
            return
        error = CanonVersionMismatchError(self.canon_version, found)
        if allow_mixed:
            log.warning("%s", error)
            return
        if close:
            self._store.close()
        raise error

    def _not_modified(
        self,
        url: str,
        body: Html | None,
        headers: Mapping[str, str] | None,
        etag: str | None,
        last_modified: str | None,
    ) -> Decision:
        """Record a 304: an unchanged fetch of the stored version, in one statement."""
        if body is not None and not isinstance(body, str | bytes):
            raise TypeError(f"html must be str, bytes or None, not {type(body).__name__}")
        if body:
            raise ValueError("a 304 Not Modified response has no body; got a non-empty one")
        canonical = canonicalise(url, self.canon_policy)
        digest = digest_canonical(canonical)
        etag, last_modified = validators_from_headers(headers, etag, last_modified)
        hit = schedule_queries.touch_not_modified(
            self._store, self._clock(), digest, etag, last_modified
        )
        if hit is None:
            raise PageNotStoredError(
                canonical, f"304 Not Modified for {canonical!r}, which was never stored"
            )
        return Decision(
            "unchanged",
            canonical,
            digest,
            hit.content_sha256,
            hit.simhash,
            distance=0,
            path="not-modified",
            version=hit.version_count,
        )

    def _prepare(
        self,
        url: str,
        html: Html,
        content_type: str | None,
        etag: str | None,
        last_modified: str | None,
    ) -> _Page:
        if not isinstance(html, str | bytes):
            raise TypeError(f"html must be str or bytes, not {type(html).__name__}")
        canonical = canonicalise(url, self.canon_policy)
        size = len(html) if isinstance(html, bytes) else len(html.encode("utf-8", "surrogatepass"))
        if size > self.max_page_bytes:
            raise PageTooLargeError(canonical, size, self.max_page_bytes)
        return _Page(
            canonical,
            digest_canonical(canonical),
            html,
            hash_raw(html),
            content_type,
            etag,
            last_modified,
        )

    def _stored_url(self, canonical: str) -> str | None:
        return stored_url(canonical, self.url_policy)

    def _content(self, page: _Page) -> bytes:
        """The page's normalised-text SHA-256 (parsing it once, on first need)."""
        if page.content is None:
            if is_binary(page.html, page.content_type):
                # PDF, images, archives: raw bytes are the content (fingerprint.is_binary).
                page.binary, page.text, page.content = True, "", page.raw
            else:
                page.text = normalise_markup(
                    page.html, page.content_type, self.fingerprint_policy, host=url_host(page.url)
                )
                page.content = content_sha256(page.text)
        return page.content

    def _fingerprint(self, page: _Page) -> Fingerprint:
        """The whole fingerprint; the SimHash is only computed when a decision needs it."""
        if page.fp is None:
            content = self._content(page)
            assert page.text is not None
            page.fp = Fingerprint(
                page.raw, content, simhash(page.text), len(page.text), binary=page.binary
            )
        return page.fp

    @staticmethod
    def _raw_unchanged(page: _Page, hit: RawHit) -> Decision:
        return Decision(
            "unchanged",
            page.url,
            page.digest,
            hit.content_sha256,
            hit.simhash,
            distance=0,
            path="raw",
            version=hit.version_count,
        )

    def _decide_batch(self, pages: Sequence[_Page]) -> list[Decision]:
        for attempt in range(self._max_attempts):
            try:
                # The seen-set pre-check only on the first attempt: after a conflict, look up.
                return self._attempt(pages, precheck=self.seen_precheck and attempt == 0)
            except WriteConflict:
                log.debug(
                    "batch of %d lost a race (attempt %d); deciding again", len(pages), attempt + 1
                )
                time.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # jitter, not security
        raise StoreConflictError(
            f"a batch of {len(pages)} page(s) lost {self._max_attempts} races in a row "
            "with other workers; nothing was written"
        )

    def _attempt(self, pages: Sequence[_Page], *, precheck: bool = False) -> list[Decision]:
        """Decide a batch in one transaction; :class:`WriteConflict` if a page moved meanwhile.

        Batches read their snapshots in one ``SELECT`` (locking the rows, in digest order, on
        Postgres) rather than trying the one-statement fast path first: two statements that
        each lock rows in digest order would not lock them in one global order, and
        concurrent batches could deadlock.
        """
        now = self._clock()
        # With seen_precheck, a URL the seen-set never saw is taken as new without reading
        # its snapshot; if it was stored after all, the insert conflicts and the batch is
        # decided again with the lookup.
        unseen = set() if not precheck else {p.digest for p in pages if p.digest not in self.seen}
        with self._store.transaction() as tx:
            snapshots = tx.lookup([p.digest for p in pages if p.digest not in unseen])
            decided: dict[bytes, Decision] = {}
            new: list[NewPage] = []
            touches: list[Touch] = []
            changes: list[Change] = []
            for page in pages:
                snap = snapshots.get(page.digest)
                if snap is None:
                    fp = self._fingerprint(page)
                    new.append(
                        NewPage(
                            page.digest,
                            url_host(page.url),
                            self._stored_url(page.url),
                            self.canon_version,
                            fp,
                            page.etag,
                            page.last_modified,
                        )
                    )
                    decided[page.digest] = Decision(
                        "new", page.url, page.digest, fp.content_sha256, fp.simhash, path="new"
                    )
                    continue
                same_rules = snap.fingerprint_version == FINGERPRINT_VERSION
                if same_rules and snap.raw_sha256 == page.raw:
                    path = "raw"
                elif same_rules and self._content(page) == snap.content_sha256:
                    path = "normalised"
                elif not same_rules and snap.raw_sha256 == page.raw:
                    # Same bytes, older rules: unchanged; re-key the row to the new rules.
                    fp = self._fingerprint(page)
                    touches.append(
                        Touch(
                            page.digest,
                            snap.version_count,
                            page.raw,
                            page.etag,
                            page.last_modified,
                            fp=fp,
                        )
                    )
                    decided[page.digest] = Decision(
                        "unchanged",
                        page.url,
                        page.digest,
                        fp.content_sha256,
                        fp.simhash,
                        distance=0,
                        path="refingerprint",
                        version=snap.version_count,
                    )
                    continue
                else:
                    path = ""
                if path:
                    touches.append(
                        Touch(
                            page.digest, snap.version_count, page.raw, page.etag, page.last_modified
                        )
                    )
                    decided[page.digest] = Decision(
                        "unchanged",
                        page.url,
                        page.digest,
                        snap.content_sha256,
                        snap.simhash,
                        distance=0,
                        path=path,
                        version=snap.version_count,
                    )
                    continue
                fp = self._fingerprint(page)
                distance = hamming(fp.simhash, snap.simhash)
                kind: DecisionKind = "minor" if distance <= self.minor_distance else "changed"
                if fp.binary:
                    kind = "changed"  # a binary body has no SimHash: other bytes, other content
                changes.append(
                    Change(
                        page.digest,
                        snap.version_count,
                        fp,
                        kind,
                        distance,
                        snap.last_seen,
                        page.etag,
                        page.last_modified,
                        host=snap.host,
                    )
                )
                decided[page.digest] = Decision(
                    kind,
                    page.url,
                    page.digest,
                    fp.content_sha256,
                    fp.simhash,
                    distance=distance,
                    path="simhash",
                    version=snap.version_count + 1,
                )
            if changes and self.flip_window:
                changes = self._mark_reversions(tx, changes, decided)
            decisions = [decided[p.digest] for p in pages]
            if new:
                # One statement for exact and near copies. Pages without text (empty, or
                # binary) have no meaningful SimHash: only exact copies are looked up for them,
                # which also keeps their shared SimHash from matching every such page.
                near = tx.near_candidates(
                    [n.fp.simhash for n in new if n.fp.text_length > 0],
                    [n.fp.content_sha256 for n in new],
                )
                textless = {n.url_digest for n in new if n.fp.text_length == 0}
                decisions = self._with_duplicates(near, textless, decisions)
            tx.write(now, new, touches, changes)
            if self.store_text:
                write_texts(tx, now, self._texts(pages, decisions))
        return decisions

    def _mark_reversions(
        self, tx: StoreTransaction, changes: list[Change], decided: dict[bytes, Decision]
    ) -> list[Change]:
        """Set ``reverted_to`` on changes back to one of the page's last ``flip_window``
        versions: one indexed read of those versions' hashes for the changed pages only."""
        recent = tx.recent_contents(
            [c.url_digest for c in changes], self.flip_window, FINGERPRINT_VERSION
        )
        marked = []
        for change in changes:
            earlier = reverted_to(change.fp.content_sha256, recent.get(change.url_digest, ()))
            if earlier is not None:
                change = dataclasses.replace(change, reverted_to=earlier)
                decided[change.url_digest] = dataclasses.replace(
                    decided[change.url_digest], reverted_to=earlier
                )
            marked.append(change)
        return marked

    def _texts(self, pages: Sequence[_Page], decisions: Sequence[Decision]) -> list[PageText]:
        """The normalised texts of the new versions in a batch (computed already; never binary)."""
        return [
            PageText(page.fp.content_sha256, page.text, page.fp.version)
            for page, d in zip(pages, decisions, strict=True)
            if d.kind != "unchanged" and page.fp is not None and page.text and not page.binary
        ]

    def _with_duplicates(
        self,
        near: list[NearCandidate],
        textless: set[bytes],
        decisions: list[Decision],
    ) -> list[Decision]:
        """Fill ``duplicate_of`` for new pages as one-by-one calls would.

        The page with the same content and the smallest URL digest, else (for pages with
        text) the nearest page within ``minor_distance`` (capped at 3; ties by smallest
        digest). Candidates are the stored rows as they were before the batch, updated with
        the pages decided earlier in the batch (their new fingerprints replace the stored
        ones). One gap remains: if the smallest-digest holder of a content changed earlier in
        the batch, the next holder is only known when it is also a band candidate.
        """
        radius = min(self.minor_distance, MAX_NEAR_DISTANCE)
        exact: dict[bytes, dict[bytes, str]] = {}
        content_of: dict[bytes, bytes] = {}
        pool: dict[bytes, NearCandidate] = {}
        for c in near:
            name = c.url or c.url_digest.hex()
            pool[c.url_digest] = NearCandidate(c.url_digest, name, c.simhash, c.content_sha256)
            exact.setdefault(c.content_sha256, {})[c.url_digest] = name
            content_of[c.url_digest] = c.content_sha256
        out = []
        for d in decisions:
            if d.kind == "new":
                holders = exact.get(d.content_sha256, {})
                if holders:
                    other: str | None = holders[min(holders)]
                elif d.url_digest in textless:
                    other = None
                else:
                    found = nearest(d.simhash, list(pool.values()), radius, d.url_digest, 1)
                    other = found[0].url if found else None
                if other is not None:
                    d = Decision(
                        d.kind,
                        d.url,
                        d.url_digest,
                        d.content_sha256,
                        d.simhash,
                        duplicate_of=other,
                        path=d.path,
                    )
            if d.kind != "unchanged" or d.path == "refingerprint":
                self._replace_candidate(exact, content_of, pool, d)
            out.append(d)
        return out

    def _replace_candidate(
        self,
        exact: dict[bytes, dict[bytes, str]],
        content_of: dict[bytes, bytes],
        pool: dict[bytes, NearCandidate],
        d: Decision,
    ) -> None:
        """Make a page decided earlier in the batch a candidate with its new fingerprint."""
        old = content_of.get(d.url_digest)
        if old is not None:
            exact[old].pop(d.url_digest, None)
        name = self._stored_url(d.url) or d.url_digest.hex()
        exact.setdefault(d.content_sha256, {})[d.url_digest] = name
        content_of[d.url_digest] = d.content_sha256
        pool[d.url_digest] = NearCandidate(d.url_digest, name, d.simhash, d.content_sha256)


def _utcnow() -> datetime:
    return datetime.now(UTC)


_default: ChangeWatch | None = None
_default_lock = threading.Lock()


def should_parse(url: str, html: Html, **kwargs: Any) -> Decision:
    """``ChangeWatch.from_env().should_parse(url, html)`` on one shared instance.

    The instance is built on first call from ``CHANGEWATCH_*`` variables and lives for the
    process; build a :class:`ChangeWatch` yourself to control its lifetime.
    """
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = ChangeWatch.from_env()
    return _default.should_parse(url, html, **kwargs)
