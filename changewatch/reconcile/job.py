"""The reconcile job: stream a source's entries against the store; record the run.

:func:`reconcile` streams the entries through canonicalisation, batched exact lookups (or a
host read whole into a :class:`~changewatch.reconcile.index.HostIndex`) and per-host digest
tables (:class:`~changewatch.reconcile.index.DigestTable`), so its memory stays flat
whatever the number of URLs; findings go to a ``sink`` as they are found. The rules are
:mod:`changewatch.reconcile.plan`'s. :func:`run_reconcile` wraps it with the run record in
``reconcile_runs`` / ``reconcile_findings``.

Vanished pages are only computed for a host whose every walk completed without error (a
sitemap that failed to load would otherwise make all its pages look vanished), and only
reported when the shrink guard believes the listing (:mod:`changewatch.reconcile.vanish`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime

import numpy as np

from changewatch.errors import InvalidURLError
from changewatch.reconcile.guard import ShrinkGuard
from changewatch.reconcile.index import (
    DEFAULT_MAX_ROWS,
    DigestTable,
    HostIndex,
    from_micros,
    halves,
    to_micros,
)
from changewatch.reconcile.plan import judge, site_host
from changewatch.reconcile.values import (
    Finding,
    HostResult,
    ReconcileResult,
    SitemapSource,
    StoredPage,
    WalkOutcome,
)
from changewatch.reconcile.vanish import Stopped, report_vanished
from changewatch.sitemaps.model import SitemapURL
from changewatch.store.reconcile import DEFAULT_LOOKUP_BATCH, ReconcileStore
from changewatch.urls import CanonPolicy, canonicalise, digest_canonical, stored_url, url_host

__all__ = ["Sink", "reconcile", "run_reconcile"]

#: Lookups a run keeps going at once (each on its own connection).
LOOKUPS_IN_FLIGHT = 2
#: Entries held back while a start host's stored pages are still being read (a few MB).
STASH_ENTRIES = 50_000
#: Findings flushed to the sink (and the database) at a time.
DEFAULT_FINDINGS_BATCH = 1_000


# -- streaming over a source --------------------------------------------------------------------

Sink = Callable[[Sequence[Finding], Sequence[str]], None]


_Stopped = Stopped  # the caller asked the run to stop (internal control flow)


def reconcile(
    source: SitemapSource,
    *,
    store: ReconcileStore,
    sink: Sink,
    url_policy: str = "full",
    canon_policy: CanonPolicy | None = None,
    batch: int = DEFAULT_LOOKUP_BATCH,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
    max_host_rows: int = DEFAULT_MAX_ROWS,
    shrink_guard: ShrinkGuard | None = ShrinkGuard(),  # noqa: B008 - frozen, immutable
    force_vanished: bool = False,
) -> ReconcileResult:
    """Reconcile every entry of ``source`` with the store; findings go to ``sink``.

    ``sink(findings, recrawl_urls)`` receives batches of :class:`Finding` rows (URLs kept as
    ``url_policy`` allows) and the canonical URLs of the missing and stale ones (for a
    recrawl queue). ``should_stop`` is polled between batches; when it answers true the result
    comes back with status ``interrupted``. ``progress`` is called with the number of entries
    handled so far.

    Hosts are read from a Postgres store whole, once, when their first entry arrives
    (:meth:`ReconcileStore.host_index`), and their entries classified in memory, while the
    pages held stay within ``max_host_rows`` over all hosts; other hosts (and every host on
    SQLite) are looked up in batches of ``batch`` digests. Both give the same answer.

    Vanished pages are computed for the hosts whose walk was complete, then judged by
    ``shrink_guard`` (:mod:`changewatch.reconcile.guard`; ``None``: no guard) against the
    host's last accepted run; a host whose listing it does not believe gets no vanished
    pages, and says why in ``vanished_withheld``, unless ``force_vanished`` is true.
    """
    state = _State(store, sink, url_policy, canon_policy, max_host_rows)
    status = "complete"
    with ThreadPoolExecutor(LOOKUPS_IN_FLIGHT, thread_name_prefix="changewatch-lookup") as pool:
        # The start hosts are known before the first entry: their stores are read while the
        # first sitemaps are fetched and parsed (the query's server time overlaps the walk).
        for host in sorted(getattr(source, "start_hosts", ())):
            state.prefetch(pool, host)  # the first only: it may take the whole budget
        pipeline = _Pipeline(state, pool)
        try:
            pipeline.run(source.entries(), batch, should_stop, progress)
            outcome = source.outcome()
            report_vanished(
                state, outcome, guard=shrink_guard, force=force_vanished, should_stop=should_stop
            )
        except _Stopped:
            pipeline.drain()  # the batches already read are counted and recorded
            status = "interrupted"
            outcome = WalkOutcome(frozenset(), frozenset())
    state.flush()
    return _result(state.hosts, outcome, status, url_policy)


def _result(
    hosts: dict[str, HostResult], outcome: WalkOutcome, status: str, url_policy: str
) -> ReconcileResult:
    """The run's result: every start host present, sitemaps and errors filed by host."""
    for host in outcome.start_hosts:
        hosts.setdefault(host, HostResult(host))
    for host, n in outcome.sitemaps.items():
        hosts.setdefault(host, HostResult(host)).sitemaps = n
    for host, n in outcome.skipped_entries.items():
        hosts.setdefault(host, HostResult(host)).invalid += n
    for problem in outcome.errors:
        owner = _problem_host(problem.sitemap, outcome.start_hosts)
        if owner is not None:
            hosts.setdefault(owner, HostResult(owner)).errors.append(problem)
    for name, result in hosts.items():
        if not result.vanished_checked and result.vanished_withheld is None:
            result.vanished_withheld = _withheld(result, name in outcome.start_hosts, status)
    if status == "complete" and any(
        hosts[h].sitemaps == 0 and hosts[h].errors for h in outcome.start_hosts
    ):
        status = "failed"
    ordered = {host: hosts[host] for host in sorted(hosts)}
    return ReconcileResult(ordered, list(outcome.errors), status, url_policy=url_policy)


def _withheld(host: HostResult, start: bool, status: str) -> str:
    """Why a host's vanished pages were not computed, in words (not the shrink guard's)."""
    if status == "interrupted":
        return "the run was interrupted"
    if not start:
        return "not a host of the arguments: its own sitemaps were not walked"
    if not host.errors:
        return "the walk was incomplete"
    more = len(host.errors) - 1
    also = f" (and {more} more error{'s' if more > 1 else ''})" if more else ""
    first = host.errors[0]
    return f"the walk was incomplete: {first.sitemap}: {first.error}{also}"


class _Pipeline:
    """Batches of entries, canonicalised and looked up with the lookups overlapping the walk.

    Lookups run on worker threads, up to :data:`LOOKUPS_IN_FLIGHT` at a time, while the next
    batches are parsed and canonicalised: database round trips overlap the CPU work and each
    other (the driver releases the GIL while it waits). Counting is commutative, so batches
    are recorded in submission order. While a start host's pages are still being read,
    batches wait in a stash (up to :data:`STASH_ENTRIES`) instead of the parser waiting for
    the read: the two overlap.
    """

    def __init__(self, state: _State, pool: ThreadPoolExecutor) -> None:
        self.state = state
        self.pool = pool
        self.done = 0
        self.inflight: deque[tuple[list[_Todo], Future[dict[bytes, StoredPage]]]] = deque()
        self.stash: list[list[SitemapURL]] = []
        self.stashed = 0

    def run(
        self,
        entries: Iterable[SitemapURL],
        batch: int,
        should_stop: Callable[[], bool] | None,
        progress: Callable[[int], None] | None,
    ) -> None:
        """Handle every entry; :class:`_Stopped` when ``should_stop`` says so."""
        pending: list[SitemapURL] = []
        for entry in entries:
            pending.append(entry)
            if len(pending) >= batch:
                self.dispatch(pending)
                pending = []
                if progress is not None:
                    progress(self.done)
                if should_stop is not None and should_stop():
                    raise _Stopped
        self.dispatch(pending, last=True)
        self.settle()
        if progress is not None:
            progress(self.done)

    def drain(self) -> None:
        """Handle what is stashed and wait for every lookup in flight."""
        self.dispatch([], last=True)
        self.settle()

    def dispatch(self, entries: list[SitemapURL], *, last: bool = False) -> None:
        if not last and self.stashed < STASH_ENTRIES and self.state.reading():
            self.stash.append(entries)
            self.stashed += len(entries)
            return
        for waiting in self.stash:
            self.handle(waiting)
        self.stash.clear()
        self.stashed = 0
        self.handle(entries)

    def handle(self, entries: list[SitemapURL]) -> None:
        todo = self.state.prepare(entries)
        self.settle(keep=LOOKUPS_IN_FLIGHT - 1)
        if todo:
            lookup = self.pool.submit(self.state.store.lookup, [t[2] for t in todo])
            self.inflight.append((todo, lookup))
        self.done += len(entries)

    def settle(self, keep: int = 0) -> None:
        while len(self.inflight) > keep:
            todo, future = self.inflight.popleft()
            self.state.record(todo, future.result())


def _problem_host(sitemap: str, hosts: frozenset[str]) -> str | None:
    try:
        host = site_host(sitemap)
    except InvalidURLError:
        return None
    return host if host in hosts else (next(iter(hosts)) if len(hosts) == 1 else None)


#: One entry left to look up: host, canonical URL, digest, the entry.
_Todo = tuple[str, str, bytes, SitemapURL]


class _State:
    """The running state of :func:`reconcile`: per-host tables and counts, pending findings."""

    def __init__(
        self,
        store: ReconcileStore,
        sink: Sink,
        url_policy: str,
        canon: CanonPolicy | None,
        max_host_rows: int = DEFAULT_MAX_ROWS,
    ) -> None:
        self.store = store
        self.max_host_rows = max_host_rows
        #: Per host: its stored pages in memory, or ``None`` where lookups go to the store.
        #: With an index, ``tables`` holds only the listed digests the store does not have.
        self.indexes: dict[str, HostIndex | None] = {}
        self._reading: dict[str, Future[HostIndex | None]] = {}
        #: Stored pages held in memory over all hosts, and reserved by a read in flight.
        self._held = 0
        self._reserved = 0
        self.sink = sink
        self.url_policy = url_policy
        self.canon = canon
        self.hosts: dict[str, HostResult] = {}
        self.tables: dict[str, DigestTable] = {}
        self.findings: list[Finding] = []
        self.recrawl: list[str] = []
        self._sitemap_hosts: dict[str, str] = {}

    def host(self, name: str) -> HostResult:
        result = self.hosts.get(name)
        if result is None:
            result = self.hosts[name] = HostResult(name)
        return result

    def prepare(self, entries: Sequence[SitemapURL]) -> list[_Todo]:
        """Canonicalise one batch and drop repeats: what is left to look up."""
        canon = self.canon
        by_host: dict[str, list[tuple[str, bytes, SitemapURL]]] = {}
        for entry in entries:
            try:
                canonical = canonicalise(entry.loc, canon)
            except InvalidURLError:
                self.host(self._host_of_sitemap(entry.sitemap)).invalid += 1
                continue
            by_host.setdefault(url_host(canonical), []).append(
                (canonical, digest_canonical(canonical), entry)
            )
        todo: list[_Todo] = []
        for host, items in by_host.items():
            result = self.host(host)
            result.listed += len(items)
            if host in self.indexes:
                index = self.indexes[host]
            else:
                index = self.indexes[host] = self.host_index(host)
            if index is not None:
                self.classify_in_memory(host, index, items)
                continue
            table = self.tables.get(host)
            if table is None:
                table = self.tables[host] = DigestTable()
            first = table.add_many(b"".join(digest for _, digest, _ in items))
            for (canonical, digest, entry), new in zip(items, first.tolist(), strict=True):
                if new:
                    todo.append((host, canonical, digest, entry))
                else:
                    result.duplicates += 1
        return todo

    def prefetch(self, pool: ThreadPoolExecutor, host: str) -> None:
        """Start reading ``host``'s stored pages on ``pool``, if nothing is held or being
        read yet (a read in flight reserves the whole budget until it is used)."""
        if self._held or self._reserved or self.max_host_rows <= 0:
            return
        self._reserved = self.max_host_rows
        self._reading[host] = pool.submit(self.store.host_index, host, self.max_host_rows)

    def reading(self) -> bool:
        """A prefetched host is still being read."""
        return any(not reading.done() for reading in self._reading.values())

    def host_index(self, host: str) -> HostIndex | None:
        """``host``'s stored pages in memory (prefetched or read now), or ``None`` when they
        do not fit in what is left of the run's budget of ``max_host_rows`` pages."""
        reading = self._reading.pop(host, None)
        if reading is not None:
            self._reserved = 0
            index = reading.result()
        else:
            room = self.max_host_rows - self._held - self._reserved
            index = self.store.host_index(host, room) if room > 0 else None
        if index is not None:
            self._held += len(index)
        return index

    def classify_in_memory(
        self, host: str, index: HostIndex, items: Sequence[tuple[str, bytes, SitemapURL]]
    ) -> None:
        """Count and record one batch of a host read whole: the rules of
        :func:`~changewatch.reconcile.plan.judge`, as :meth:`record` applies them."""
        result = self.hosts[host]
        blob = b"".join(digest for _, digest, _ in items)
        at = index.find(*halves(blob))
        stored = at >= 0
        first = np.zeros(len(items), dtype=np.bool_)
        on_file = np.flatnonzero(stored)
        if on_file.size:
            # An entry counts once: the first time its page is listed, in this batch or before.
            rows = at[on_file]
            _, once = np.unique(rows, return_index=True)
            candidates = on_file[once]
            first[candidates[~index.listed[at[candidates]]]] = True
            index.listed[rows] = True
        absent = np.flatnonzero(~stored)
        if absent.size:
            table = self.tables.get(host)
            if table is None:
                table = self.tables[host] = DigestTable()
            added = table.add_many(np.frombuffer(blob, dtype="V16")[absent].tobytes())
            first[absent[added]] = True
        result.duplicates += len(items) - int(np.count_nonzero(first))
        new = np.flatnonzero(stored & first)
        if new.size:
            rows = at[new]
            lastmod = np.array([to_micros(items[i][2].lastmod) for i in new.tolist()], np.int64)
            seen = index.last_seen[rows]
            judged = judge(lastmod, seen, index.last_changed[rows], index.previous[rows])
            result.trust.ahead += int(np.count_nonzero(judged.ahead))
            result.trust.behind += int(np.count_nonzero(judged.behind))
            result.trust.agrees += int(np.count_nonzero(judged.agrees))
            n_stale = int(np.count_nonzero(judged.stale))
            result.fresh += int(new.size) - n_stale
            result.stale += n_stale
            for k in np.flatnonzero(judged.stale).tolist():
                self._finding("stale", host, items[int(new[k])], from_micros(int(seen[k])))
        missing = np.flatnonzero(~stored & first)
        result.missing += int(missing.size)
        for i in missing.tolist():
            self._finding("missing", host, items[i], None)
        if len(self.findings) >= DEFAULT_FINDINGS_BATCH:
            self.flush()

    def _finding(
        self,
        kind: str,
        host: str,
        item: tuple[str, bytes, SitemapURL],
        last_seen: datetime | None,
    ) -> None:
        canonical, digest, entry = item
        self.findings.append(
            Finding(
                kind=kind,
                host=host,
                url=stored_url(canonical, self.url_policy),
                url_digest=digest,
                sitemap_lastmod=entry.lastmod,
                stored_last_seen=last_seen,
                sitemap=entry.sitemap,
            )
        )
        self.recrawl.append(canonical)

    def record(self, todo: Sequence[_Todo], stored: dict[bytes, StoredPage]) -> None:
        """Count and record one looked-up batch, in order: the stored entries judged by
        :func:`~changewatch.reconcile.plan.judge`, as :meth:`classify_in_memory` does."""
        pages = [stored.get(digest) for _, _, digest, _ in todo]
        times = np.array(
            [
                (
                    to_micros(entry.lastmod),
                    to_micros(page.last_seen),
                    to_micros(page.last_changed),
                    to_micros(page.previous_last_seen),
                )
                for (_, _, _, entry), page in zip(todo, pages, strict=True)
                if page is not None
            ],
            dtype=np.int64,
        ).reshape(-1, 4)
        judged = zip(*(m.tolist() for m in judge(*times.T)), strict=True)
        for (host, canonical, digest, entry), page in zip(todo, pages, strict=True):
            result = self.hosts[host]
            if page is None:
                result.missing += 1
                self._finding("missing", host, (canonical, digest, entry), None)
                continue
            stale, ahead, behind, agrees = next(judged)
            result.trust.ahead += ahead
            result.trust.behind += behind
            result.trust.agrees += agrees
            if stale:
                result.stale += 1
                self._finding("stale", host, (canonical, digest, entry), page.last_seen)
            else:
                result.fresh += 1
        if len(self.findings) >= DEFAULT_FINDINGS_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.findings or self.recrawl:
            self.sink(self.findings, self.recrawl)
        self.findings = []
        self.recrawl = []

    def _host_of_sitemap(self, sitemap: str) -> str:
        host = self._sitemap_hosts.get(sitemap)
        if host is None:
            try:
                host = site_host(sitemap, self.canon)
            except InvalidURLError:
                host = "(invalid)"
            self._sitemap_hosts[sitemap] = host
        return host


# -- a recorded run ----------------------------------------------------------------------------


def run_reconcile(
    source: SitemapSource,
    *,
    store: ReconcileStore,
    clock: Callable[[], datetime],
    sites: Sequence[str],
    url_policy: str = "full",
    canon_policy: CanonPolicy | None = None,
    record: bool = True,
    arguments: str | None = None,
    runner: tuple[str | None, int | None] = (None, None),
    recrawl: Callable[[Sequence[str]], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
    max_host_rows: int = DEFAULT_MAX_ROWS,
    shrink_guard: ShrinkGuard | None = ShrinkGuard(),  # noqa: B008 - frozen, immutable
    force_vanished: bool = False,
) -> ReconcileResult:
    """:func:`reconcile`, recorded in ``reconcile_runs`` / ``reconcile_findings`` /
    ``reconcile_hosts`` (``record``).

    The run row is inserted first with status ``running`` and closed at the end with the
    totals and its final status; findings are inserted in batches as they are found. If the
    run raises, the row is closed as ``failed`` before the error propagates. ``recrawl``
    receives the canonical URLs of the missing and stale entries, batch by batch.
    """
    run_id = None
    if record:
        run_id = store.start_run(
            now=clock(),
            sites=sites,
            arguments=arguments,
            runner_host=runner[0],
            runner_pid=runner[1],
        )

    writer = None if run_id is None else _FindingWriter(store, run_id)

    def sink(findings: Sequence[Finding], urls: Sequence[str]) -> None:
        if writer is not None:
            writer.submit(list(findings))
        if recrawl is not None and urls:
            recrawl(urls)

    try:
        result = reconcile(
            source,
            store=store,
            sink=sink,
            url_policy=url_policy,
            canon_policy=canon_policy,
            should_stop=should_stop,
            progress=progress,
            max_host_rows=max_host_rows,
            shrink_guard=shrink_guard,
            force_vanished=force_vanished,
        )
        if writer is not None:
            writer.close()
        if run_id is not None:
            store.add_hosts(run_id, list(result.hosts.values()))
    except BaseException:
        if writer is not None:
            writer.abandon()
        if run_id is not None:
            _close_failed(store, run_id, clock)
        raise
    result.run_id = run_id
    if run_id is not None:
        store.finish_run(
            run_id,
            now=clock(),
            status=result.status,
            totals=result.totals(),
            errors=len(result.errors),
        )
    return result


class _FindingWriter:
    """Inserts a run's findings on a worker thread, in order, a few batches behind at most,
    so the inserts overlap the parsing instead of stalling it."""

    _MAX_PENDING = 4

    def __init__(self, store: ReconcileStore, run_id: int) -> None:
        self._store = store
        self._run_id = run_id
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="changewatch-findings")
        self._pending: deque[Future[None]] = deque()

    def submit(self, findings: list[Finding]) -> None:
        """Queue one batch; waits (and raises its error) if too many are pending."""
        while len(self._pending) >= self._MAX_PENDING:
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(self._store.add_findings, self._run_id, findings))

    def close(self) -> None:
        """Wait for every batch; raise the first error."""
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self._pool.shutdown(wait=True)

    def abandon(self) -> None:
        """After an error elsewhere: drop what has not started, wait for the rest quietly."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pending.clear()


def _close_failed(store: ReconcileStore, run_id: int, clock: Callable[[], datetime]) -> None:
    """Best effort: the store itself may be what failed."""
    try:
        store.finish_run(run_id, now=clock(), status="failed", totals={}, errors=0)
    except Exception:
        return
