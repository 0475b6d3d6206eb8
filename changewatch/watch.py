"""``ChangeWatch``: canonicalise, fingerprint, seen-set and snapshot store, composed.

The orchestration of the three questions: ``mark_seen`` (the seen-set adapter),
``should_parse`` (lookup → :mod:`changewatch.decide` → write, through the store port
:class:`~changewatch.store.port.StorePort`) and the history around it. It takes its adapters
as arguments (``store=``, ``seen=``) or builds them from URLs; it reads no environment
(:meth:`ChangeWatch.from_env` asks :mod:`changewatch.config`, the edge that does).

A page with identical bytes is one autocommitted statement (the common re-crawl case). A
batch reads its snapshots in one query and writes in one transaction; writes are conditional
on what was read, so a batch that loses a race with another worker is rolled back and decided
again on fresh data: concurrent workers never lose a count or duplicate a version.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

from changewatch.batch import (
    BatchPage,
    BatchRules,
    Fetched,
    Html,
    decide_batch,
    prepare,
    prepare_item,
)
from changewatch.conditional import conditional_request_headers, validators_from_headers
from changewatch.decide import (
    DEFAULT_NEAR_LIMIT,
    MAX_NEAR_DISTANCE,
    check_near_distance,
    check_near_limit,
    decide_hit,
)
from changewatch.errors import (
    CanonVersionMismatchError,
    ConfigError,
    PageNotStoredError,
    SeenSetUnavailableError,
    TextNotStoredError,
    UnexpectedStatusError,
)
from changewatch.fingerprint import (
    FINGERPRINT_VERSION,
    FingerprintPolicy,
)
from changewatch.learning import NoiseLearner, TemplateLearner
from changewatch.observe import (
    NULL_OBSERVER,
    Observer,
    observed_decisions,
    observed_mark_seen,
    report_seen_error,
)
from changewatch.schedule import DuePage
from changewatch.seen import SeenSet, open_seen_set
from changewatch.store import StorePort, open_store
from changewatch.textdiff import unified_text_diff
from changewatch.urls import (
    CanonPolicy,
    canon_version,
    canonicalise,
    digest_canonical,
)
from changewatch.values import (
    DEFAULT_DATABASE_URL,
    DEFAULT_FLIP_WINDOW,
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_MINOR_DISTANCE,
    DEFAULT_SEEN_URL,
    SEEN_ON_ERROR,
    Decision,
    NearDuplicate,
    PruneReport,
    SeenOnError,
    UrlPolicy,
    Version,
    VersionDiff,
    check_settings,
)

__all__ = ["DEFAULT_MAX_ATTEMPTS", "BatchPage", "ChangeWatch", "should_parse"]

log = logging.getLogger("changewatch")

#: Times a batch is decided again after losing a race before StoreConflictError.
DEFAULT_MAX_ATTEMPTS = 10

#: Snapshot rows read on open to check they were keyed by the same canonicalisation rules.
DEFAULT_CANON_CHECK_ROWS = 10_000


class ChangeWatch:
    """Decides, per fetched page, whether it needs parsing, and records the history.

    ``database_url`` and ``seen_url`` name the store and the seen-set; pass ``store=`` or
    ``seen=`` instead to hand in adapters built elsewhere (any
    :class:`~changewatch.store.port.StorePort`, any :class:`~changewatch.seen.SeenSet`).
    ``clock`` returns the current UTC time (tests pass a fixed one). The seen-set is opened
    on first use.

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
    ``learn_noise=True`` learns, per host, the blocks that change on most re-fetches while
    the pages' prose does not (counters, rotating lists, banners that come and go) and leaves
    them out of the hashes once learned (:mod:`changewatch.learning`; never prose, never the
    explicit main content). The rules are in the ``host_noise`` table: :meth:`noise_rules`,
    :meth:`reset_noise`, ``changewatch noise list|reset``. ``learn_templates=True`` learns,
    per host, the short blocks that stand on many of its pages (a shared promo line) and
    classifies them as chrome: their change is a chrome change (never prose, never the
    explicit main content; tables ``host_templates``, :meth:`template_rules`,
    :meth:`reset_templates`, ``changewatch templates list|reset``).
    ``observer`` (:class:`~changewatch.observe.Observer`) is told every decision, every
    ``mark_seen`` and every store or seen-set failure (:mod:`changewatch.metrics` turns that
    into Prometheus metrics); decisions are also logged, one DEBUG line each.
    """

    def __init__(
        self,
        database_url: str | None = None,
        seen_url: str | None = None,
        *,
        store: StorePort | None = None,
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
        learn_noise: bool = False,
        learn_templates: bool = False,
    ) -> None:
        check_settings(minor_distance, max_page_bytes, url_policy)
        if isinstance(flip_window, bool) or not isinstance(flip_window, int) or flip_window < 0:
            raise ConfigError(f"flip_window must be an integer >= 0, got {flip_window!r}")
        if seen_on_error not in SEEN_ON_ERROR:
            raise ConfigError(
                f"seen_on_error must be one of {', '.join(SEEN_ON_ERROR)}, got {seen_on_error!r}"
            )
        self.flip_window = flip_window
        self.seen_on_error = seen_on_error
        self.observer = observer or NULL_OBSERVER
        self.seen_precheck = seen_precheck
        self._seen_url = seen_url or DEFAULT_SEEN_URL
        self._seen = seen
        self._seen_lock = threading.Lock()
        self._store: StorePort = store or open_store(database_url or DEFAULT_DATABASE_URL)
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
        self.noise = NoiseLearner(self._store) if learn_noise else None
        self.templates = TemplateLearner(self._store) if learn_templates else None

    @classmethod
    def from_env(cls, **overrides: Any) -> ChangeWatch:
        """Build from ``CHANGEWATCH_*`` environment variables (see :mod:`changewatch.config`,
        the one reader of the environment); keyword arguments override them."""
        from changewatch.config import watch_arguments  # the edge: reads the environment

        return cls(**(watch_arguments() | overrides))

    @property
    def store(self) -> StorePort:
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
        ``max_page_bytes``, ``PageTooComplexError`` for a page built to make parsing
        superlinear (SECURITY.md), ``StoreError`` when the store fails; nothing is written
        then.

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
            return decide_hit(page.url, page.digest, hit)
        return self._decide_batch([page])[0]

    @observed_decisions
    def should_parse_many(self, pages: Iterable[BatchPage]) -> list[Decision]:
        """``should_parse`` for a batch: one lookup query and one write transaction.

        Each page is ``(url, html)`` or ``(url, html, headers)`` (response headers, for the
        validators; 304s go through :meth:`should_parse`). Answers equal those of one-by-one
        calls in order, including a URL that appears twice. Every page is validated first (a
        malformed item raises ``TypeError`` naming its index); a failing batch writes nothing.
        Time and memory grow linearly with the batch.
        """
        prepared = [prepare_item(i, item, self._prepare) for i, item in enumerate(pages)]
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
            batch = self._decide_batch([prepared[i] for i in indices])
            for index, decision in zip(indices, batch, strict=True):
                decisions[index] = decision
        return [d for d in decisions if d is not None]

    def near_duplicates(
        self,
        url_or_simhash: str | int,
        max_distance: int = MAX_NEAR_DISTANCE,
        *,
        limit: int = DEFAULT_NEAR_LIMIT,
    ) -> list[NearDuplicate]:
        """The ``limit`` stored pages whose SimHash is nearest, within ``max_distance``
        bits: nearest first, ties by URL digest — exactly the first ``limit`` of a full scan
        sorted so, however large the clusters of near-copies (each costs at most ``limit``
        index entries a SimHash).

        A ``str`` is a URL: it is canonicalised, its stored SimHash is searched for and the
        page itself left out (an empty list if it was never stored). An ``int`` is an unsigned
        64-bit SimHash. Each result is ``(url_digest, url, distance)``; ``url`` is ``None``
        when the URL-storage policy keeps none. ``max_distance`` must be 0..3: past 3 the
        4-band index cannot find every match, so ``ValueError`` is raised instead of an
        incomplete answer; so it is for a negative ``limit``.
        """
        if isinstance(url_or_simhash, str):
            digest = digest_canonical(canonicalise(url_or_simhash, self.canon_policy))
            stored = self._store.simhash_of(digest)
            if stored is None:
                check_near_distance(max_distance)
                check_near_limit(limit)
                return []
            return self._store.near_duplicates(stored, max_distance, digest, limit)
        return self._store.near_duplicates(url_or_simhash, max_distance, None, limit)

    def conditional_headers(self, url: str) -> dict[str, str]:
        """``If-None-Match`` / ``If-Modified-Since`` for the next fetch of ``url``.

        From the validators stored with its last fetch; ``{}`` for a page never stored or
        stored without validators.
        """
        stored = self._store.validators(digest_canonical(canonicalise(url, self.canon_policy)))
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
        return self._store.due(now or self._clock(), limit, host)

    def diff(
        self, url: str, from_version: int | None = None, to_version: int | None = None
    ) -> VersionDiff:
        """A unified diff of the stored texts of two versions (default: previous → current).

        A page with a single version is diffed against nothing. Needs ``store_text`` on when
        those versions were seen: ``TextNotStoredError`` if not; ``PageNotStoredError`` for a
        page or version the store does not hold.
        """
        canonical = canonicalise(url, self.canon_policy)
        versions = {v.version: v for v in self._store.history(digest_canonical(canonical))}
        if not versions:
            raise PageNotStoredError(canonical)
        to_no = max(versions) if to_version is None else to_version
        if from_version is None:
            from_no = to_no - 1 if to_no - 1 in versions else 0
        else:
            from_no = from_version
        for number in (from_no, to_no):
            if number != 0 and number not in versions:
                raise PageNotStoredError(
                    canonical,
                    f"{canonical!r} has no version {number} (stored: "
                    f"{', '.join(str(n) for n in sorted(versions))})",
                )
        wanted = [versions[n] for n in (from_no, to_no) if n != 0]
        texts = self._store.texts([v.content_sha256 for v in wanted])
        missing = sorted({v.version for v in wanted if v.content_sha256 not in texts})
        if missing:
            raise TextNotStoredError(canonical, missing)
        old, new = (versions.get(n) for n in (from_no, to_no))
        lines = unified_text_diff(
            "" if old is None else texts[old.content_sha256],
            "" if new is None else texts[new.content_sha256],
            _diff_label(canonical, old),
            _diff_label(canonical, new),
        )
        return VersionDiff(canonical, from_no, to_no, lines)

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

    def noise_rules(self, host: str | None = None) -> list[dict[str, Any]]:
        """The noise rules of the store's ``host_noise`` table (of one host), learned first:
        host, kind, value, path, observations, changes, first/last seen, learned_at."""
        return self._store.noise_rules(host)

    def reset_noise(self, host: str) -> int:
        """Forget every noise rule of ``host`` (its blocks count in the hashes again); the
        number of rules forgotten."""
        removed = self._store.reset_noise(host)
        if self.noise is not None:
            self.noise.forget(host)
        return removed

    def template_rules(self, host: str | None = None) -> list[dict[str, Any]]:
        """The rows of ``host_templates`` (of one host), learned first, with ``sampled``."""
        return self._store.template_rules(host)

    def reset_templates(self, host: str) -> int:
        """Forget the template of ``host`` (its rules and sampled pages); the rules forgotten."""
        removed = self._store.reset_templates(host)
        if self.templates is not None:
            self.templates.forget(host)
        return removed

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
        hit = self._store.touch_not_modified(self._clock(), digest, etag, last_modified)
        if hit is None:
            raise PageNotStoredError(
                canonical, f"304 Not Modified for {canonical!r}, which was never stored"
            )
        return decide_hit(canonical, digest, hit, "not-modified")

    def _prepare(
        self,
        url: str,
        html: Html,
        content_type: str | None,
        etag: str | None,
        last_modified: str | None,
    ) -> Fetched:
        page = prepare(
            url,
            html,
            content_type,
            etag,
            last_modified,
            canon_policy=self.canon_policy,
            max_page_bytes=self.max_page_bytes,
            fingerprint_policy=self.fingerprint_policy,
        )
        if self.noise is not None:
            page.volatile_blocks = self.noise.volatile_blocks(page.url)
            page.with_blocks = True
        if self.templates is not None:
            page.template_blocks = self.templates.template_blocks(page.url, self._clock())
            page.with_blocks = True
        return page

    def _decide_batch(self, pages: Sequence[Fetched]) -> list[Decision]:
        rules = BatchRules(
            self.minor_distance,
            self.url_policy,
            self.canon_version,
            self.flip_window,
            self.store_text,
            self._max_attempts,
        )
        unseen = self._unseen if self.seen_precheck else None
        decisions = decide_batch(self._store, pages, rules, self._clock, unseen)
        if self.noise is not None:
            self.noise.observe(pages, self._clock())
        if self.templates is not None:
            self.templates.observe(pages, self._clock())
        return decisions

    def _unseen(self, pages: Sequence[Fetched]) -> set[bytes]:
        """The digests the seen-set never saw (the ``seen_precheck``)."""
        return {p.digest for p in pages if p.digest not in self.seen}


def _diff_label(canonical: str, version: Version | None) -> str:
    if version is None:
        return f"{canonical} (nothing stored before version 1)"
    seen = version.first_seen.isoformat()
    return f"{canonical} version {version.version} ({version.kind}, {seen})"


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
