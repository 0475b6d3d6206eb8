"""Deciding and recording a batch of fetched pages in one transaction — orchestration.

:func:`decide_batch` is what ``ChangeWatch.should_parse`` (past its one-statement fast path)
and ``should_parse_many`` run: look the pages' snapshots up, ask :mod:`changewatch.decide`
what each means, mark flip-flops and duplicates, and write it all through the store port in
one transaction. Writes are conditional on what was read: a batch that loses a race with
another worker is rolled back and decided again on fresh data, so concurrent workers never
lose a count or duplicate a version.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from changewatch.conditional import validators_from_headers
from changewatch.decide import DuplicatePool, decide_new, decide_stored, reverted_to
from changewatch.errors import PageTooComplexError, PageTooLargeError, StoreConflictError
from changewatch.fingerprint import (
    FINGERPRINT_VERSION,
    Block,
    Fingerprint,
    FingerprintPolicy,
    PageParts,
    binary_fingerprint,
    chrome_hashes,
    content_sha256,
    is_binary,
    page_text,
    parts_fingerprint,
)
from changewatch.fingerprint import raw_sha256 as hash_raw
from changewatch.fingerprint.legacy import LEGACY_VERSIONS, content_sha256_v3
from changewatch.store import StorePort, TransactionPort, WriteConflict
from changewatch.urls import CanonPolicy, canonicalise, digest_canonical, stored_url, url_host
from changewatch.values import Change, Decision, NewPage, PageText, Touch, UrlPolicy

__all__ = ["BatchPage", "BatchRules", "Html", "decide_batch", "prepare", "prepare_item"]

log = logging.getLogger("changewatch")

Html = str | bytes
#: A page for should_parse_many: (url, body) or (url, body, response headers).
BatchPage = tuple[str, Html] | tuple[str, Html, Mapping[str, str] | None]


@dataclass(frozen=True, slots=True)
class BatchRules:
    """What a batch is decided and recorded by (a ``ChangeWatch``'s settings)."""

    minor_distance: int
    url_policy: UrlPolicy
    canon_version: int
    flip_window: int
    store_text: bool
    max_attempts: int


@dataclass(slots=True)
class Fetched:
    """One fetched page, validated; its content hash and fingerprint are computed on first
    need (:class:`changewatch.decide.FetchedPage`)."""

    url: str
    digest: bytes
    html: Html
    raw: bytes
    content_type: str | None
    etag: str | None
    last_modified: str | None
    policy: FingerprintPolicy | None
    text: str | None = None
    _content: bytes | None = None
    _parts: PageParts | None = None
    _fp: Fingerprint | None = None
    binary: bool = False
    #: Block keys and shapes learned as noise for the page's host, and whether the blocks are
    #: kept for learning more (``ChangeWatch(learn_noise=True)``, :mod:`changewatch.learning`).
    volatile_blocks: frozenset[bytes] = frozenset()
    with_blocks: bool = False
    #: Text hashes and block keys learned as the host's template
    #: (``ChangeWatch(learn_templates=True)``, :mod:`changewatch.learning`).
    template_blocks: frozenset[bytes] = frozenset()

    def content(self) -> bytes:
        """The SHA-256 of the page's main content (parsing it once, on first need)."""
        if self._content is None:
            if is_binary(self.html, self.content_type):
                # PDF, images, archives: raw bytes are the content (fingerprint.is_binary).
                self.binary, self.text, self._content = True, "", self.raw
            else:
                self._parts = page_text(  # PageTooComplexError names self.url
                    self.html,
                    self.content_type,
                    self.policy,
                    host=url_host(self.url),
                    url=self.url,
                    template_blocks=self.template_blocks,
                    volatile_blocks=self.volatile_blocks,
                    with_blocks=self.with_blocks,
                )
                self.text = self._parts.content
                self._content = content_sha256(self.text)
        return self._content

    def fingerprint(self) -> Fingerprint:
        """The whole fingerprint (content, chrome and outlinks hashes, SimHash); the SimHash
        is only computed when a decision needs it."""
        if self._fp is None:
            self.content()
            if self._parts is None:
                self._fp = binary_fingerprint(self.raw)
            else:
                self._fp = parts_fingerprint(self.raw, self._parts)
        return self._fp

    def chrome(self) -> tuple[bytes, bytes] | None:
        """The chrome and outlinks hashes of the page (``None`` for a binary body)."""
        self.content()
        if self._parts is None:
            return None
        if self._fp is not None:
            return self._fp.chrome_sha256, self._fp.links_sha256
        return chrome_hashes(self._parts)  # no SimHash needed for these

    def redirect(self) -> str | None:
        """Where the page sends its reader if it is a redirect stub (parsing it once)."""
        self.content()
        return None if self._parts is None else self._parts.redirect

    def blocks(self) -> tuple[Block, ...] | None:
        """The page's blocks if they were kept (``with_blocks``) and it was parsed, else
        ``None`` (a binary body, or a page decided without parsing)."""
        if not self.with_blocks or self._parts is None:
            return None
        return self._parts.blocks

    def main_marked(self) -> bool:
        """Whether the parsed page has an explicit main marker (``main``, ``article``…);
        ``False`` for a page not parsed."""
        return self._parts is not None and self._parts.main_marked

    def legacy_content(self, version: int) -> bytes | None:
        """The content hash under version 2 or 3's rules (they hash the same text), or
        ``None`` for other versions and binary bodies."""
        if version not in LEGACY_VERSIONS:
            return None
        if is_binary(self.html, self.content_type):
            return None
        try:
            return content_sha256_v3(
                self.html, self.content_type, self.policy, host=url_host(self.url)
            )
        except PageTooComplexError as exc:
            raise PageTooComplexError(exc.limit_name, exc.limit, exc.found, self.url) from None


def prepare(
    url: str,
    html: Html,
    content_type: str | None,
    etag: str | None,
    last_modified: str | None,
    *,
    canon_policy: CanonPolicy | None,
    max_page_bytes: int,
    fingerprint_policy: FingerprintPolicy | None,
) -> Fetched:
    """A fetched page, validated: ``TypeError`` for a body neither ``str`` nor ``bytes``,
    ``InvalidURLError``, ``PageTooLargeError`` above ``max_page_bytes`` (before parsing)."""
    if not isinstance(html, str | bytes):
        raise TypeError(f"html must be str or bytes, not {type(html).__name__}")
    canonical = canonicalise(url, canon_policy)
    size = len(html) if isinstance(html, bytes) else len(html.encode("utf-8", "surrogatepass"))
    if size > max_page_bytes:
        raise PageTooLargeError(canonical, size, max_page_bytes)
    return Fetched(
        canonical,
        digest_canonical(canonical),
        html,
        hash_raw(html),
        content_type,
        etag,
        last_modified,
        fingerprint_policy,
    )


def prepare_item(index: int, item: object, prepare_page: Callable[..., Fetched]) -> Fetched:
    """One item of ``should_parse_many``, validated (``TypeError`` naming its index);
    ``prepare_page(url, html, content_type, etag, last_modified)`` makes the page."""
    if not isinstance(item, tuple | list) or not 2 <= len(item) <= 3:
        raise TypeError(
            f"should_parse_many: item {index} must be a (url, html) or (url, html, headers) "
            f"tuple, got {_describe(item)}"
        )
    url, html = item[0], item[1]
    if not isinstance(url, str):
        raise TypeError(
            f"should_parse_many: item {index}: url must be str, not {type(url).__name__}"
        )
    headers = item[2] if len(item) == 3 else None
    if headers is not None and not isinstance(headers, Mapping):
        raise TypeError(
            f"should_parse_many: item {index}: headers must be a mapping of header names "
            f"to values (or None), not {type(headers).__name__}"
        )
    try:
        etag, last_modified = validators_from_headers(headers)
        return prepare_page(url, html, None, etag, last_modified)
    except TypeError as exc:
        raise TypeError(f"should_parse_many: item {index}: {exc}") from None


def _describe(item: object) -> str:
    """A short description of a malformed batch item for an error message."""
    if isinstance(item, tuple | list):
        return f"a {type(item).__name__} of {len(item)} item(s)"
    return f"{type(item).__name__} {item!r}"[:80]


def decide_batch(
    store: StorePort,
    pages: Sequence[Fetched],
    rules: BatchRules,
    clock: Callable[[], datetime],
    unseen: Callable[[Sequence[Fetched]], set[bytes]] | None = None,
) -> list[Decision]:
    """Decide and record ``pages`` (no URL twice) in one transaction, again after a lost race
    (up to ``rules.max_attempts`` times, then ``StoreConflictError``). ``unseen`` (the
    seen-set pre-check) names, on the first attempt only, digests to take as new unread."""
    for attempt in range(rules.max_attempts):
        try:
            precheck = unseen(pages) if unseen is not None and attempt == 0 else set()
            return _attempt(store, pages, rules, clock(), precheck)
        except WriteConflict:
            log.debug(
                "batch of %d lost a race (attempt %d); deciding again", len(pages), attempt + 1
            )
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # jitter, not security
    raise StoreConflictError(
        f"a batch of {len(pages)} page(s) lost {rules.max_attempts} races in a row "
        "with other workers; nothing was written"
    )


def _attempt(
    store: StorePort,
    pages: Sequence[Fetched],
    rules: BatchRules,
    now: datetime,
    unseen: set[bytes],
) -> list[Decision]:
    """Decide a batch in one transaction: lookup → decide → write; :class:`WriteConflict`
    if a page moved meanwhile.

    Batches read their snapshots in one ``SELECT`` (locking the rows, in digest order, on
    Postgres) rather than trying the one-statement fast path first: two statements that
    each lock rows in digest order would not lock them in one global order, and
    concurrent batches could deadlock. A digest in ``unseen`` (the seen-set never saw it) is
    taken as new without reading its snapshot; if it was stored after all, the insert
    conflicts and the batch is decided again with the lookup.
    """
    with store.transaction() as tx:
        snapshots = tx.lookup([p.digest for p in pages if p.digest not in unseen])
        decided: dict[bytes, Decision] = {}
        new: list[NewPage] = []
        touches: list[Touch] = []
        changes: list[Change] = []
        for page in pages:
            snap = snapshots.get(page.digest)
            if snap is None:
                url = stored_url(page.url, rules.url_policy)
                decision, insert = decide_new(page, url_host(page.url), url, rules.canon_version)
                new.append(insert)
            else:
                decision, write = decide_stored(page, snap, rules.minor_distance)
                if isinstance(write, Touch):
                    touches.append(write)
                else:
                    changes.append(write)
            decided[page.digest] = decision
        if changes and rules.flip_window:
            changes = _mark_reversions(tx, changes, decided, rules.flip_window)
        decisions = [decided[p.digest] for p in pages]
        if new:
            decisions = _with_duplicates(tx, new, decisions, rules)
        texts = _texts(pages, decisions) if rules.store_text else []
        tx.write(now, new, touches, changes, texts)
    return decisions


def _mark_reversions(
    tx: TransactionPort, changes: list[Change], decided: dict[bytes, Decision], window: int
) -> list[Change]:
    """Set ``reverted_to`` on changes back to one of the page's last ``window`` versions:
    one indexed read of those versions' hashes for the changed pages only."""
    recent = tx.recent_contents([c.url_digest for c in changes], window, FINGERPRINT_VERSION)
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


def _texts(pages: Sequence[Fetched], decisions: Sequence[Decision]) -> list[PageText]:
    """The normalised texts of the new versions in a batch (computed already; never binary)."""
    return [
        PageText(d.content_sha256, page.text, FINGERPRINT_VERSION)
        for page, d in zip(pages, decisions, strict=True)
        if d.kind != "unchanged" and page.text and not page.binary
    ]


def _with_duplicates(
    tx: TransactionPort, new: Sequence[NewPage], decisions: list[Decision], rules: BatchRules
) -> list[Decision]:
    """Fill ``duplicate_of`` for new pages as one-by-one calls would.

    Exact copies first: for each new content hash, the stored holders with the smallest
    URL digests — one more than the stored pages this batch moves to another content, so
    the smallest holder left when a page is decided is among those read — in bounded index
    reads, however many pages share the content (a cluster of soft 404s). Only the pages
    with text whose content may have no holder left need near copies: for each stored
    SimHash within ``minor_distance`` of theirs, as many holders with the smallest digests
    (bounded too, however many pages hold one SimHash; pages without text — empty, or
    binary — have no meaningful SimHash and are only matched exactly). The candidates are
    the stored rows as they were before the batch, updated with the pages decided earlier
    in the batch (:class:`~changewatch.decide.DuplicatePool`).
    """
    moving = sum(1 for d in decisions if d.kind != "new" and _replaces(d))
    candidates = tx.copy_candidates(
        [(n.fp.content_sha256, n.fp.simhash if n.fp.text_length > 0 else None) for n in new],
        moving + 1,
        rules.minor_distance,
    )
    textless = {n.url_digest for n in new if n.fp.text_length == 0}
    pool = DuplicatePool(candidates, rules.minor_distance)
    out = []
    for d in decisions:
        if d.kind == "new":
            other = pool.duplicate_of(d, textless=d.url_digest in textless)
            if other is not None:
                d = dataclasses.replace(d, duplicate_of=other)
        if _replaces(d):
            name = stored_url(d.url, rules.url_policy) or d.url_digest.hex()
            pool.replace(d.url_digest, name, d.simhash, d.content_sha256)
        out.append(d)
    return out


def _replaces(decision: Decision) -> bool:
    """Whether the decision gives its page a new content hash or SimHash in the store."""
    return decision.kind != "unchanged" or decision.path == "refingerprint"
