"""The vanished step of a reconcile run: count, judge with the shrink guard, then report.

For each host whose walk was complete, the stored pages no sitemap listed are *counted*
first — from the host's in-memory index, or by streaming its stored digests — and the
count is judged by the shrink guard (:func:`~changewatch.reconcile.guard.shrink_verdict`)
against the host's last accepted run (``reconcile_hosts``). Only a count the guard accepts
(or one the caller forces) is reported: each vanished page becomes a finding. A withheld
host says why in :attr:`~changewatch.reconcile.values.HostResult.vanished_withheld`.

Hosts looked up in batches stream their stored digests twice (once to count, once to
report): memory stays flat, whatever their size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from changewatch.reconcile.guard import ShrinkGuard, shrink_verdict
from changewatch.reconcile.index import DigestTable
from changewatch.reconcile.values import Finding, HostResult, WalkOutcome
from changewatch.store.reconcile import DEFAULT_LOOKUP_BATCH, ReconcileStore

if TYPE_CHECKING:
    from changewatch.reconcile.job import _State

__all__ = ["Stopped", "report_vanished"]

#: Findings flushed to the sink at a time (as the job does).
_FLUSH_AT = 1_000


class Stopped(Exception):  # noqa: N818 - internal control flow, re-raised by the job
    """The caller asked the run to stop."""


def report_vanished(
    state: _State,
    outcome: WalkOutcome,
    *,
    guard: ShrinkGuard | None,
    force: bool,
    should_stop: Callable[[], bool] | None,
) -> None:
    """Count, judge and report the vanished pages of every complete host of ``outcome``."""
    for host in sorted(outcome.complete_hosts):
        result = state.host(host)
        index = state.indexes.get(host)
        table = state.tables.get(host) or DigestTable()
        if index is not None:
            gone = index.unlisted_digests()
            result.stored = len(index)
            count = len(gone) // 16
        else:
            result.stored, count = _count(state.store, host, table, should_stop)
        if guard is not None and count:
            unlisted = [gone] if index is not None else _unlisted(state.store, host, table)
            result.shrink = _judge(state.store, guard, result, count, unlisted)
        if result.shrink is not None and not force:
            result.vanished_withheld = f"shrink guard: {result.shrink}"
            continue
        result.vanished_checked = True
        if index is not None:
            _report_in_memory(state, result, gone, should_stop)
        else:
            _report_batched(state, result, table, should_stop)


def _judge(
    store: ReconcileStore,
    guard: ShrinkGuard,
    result: HostResult,
    count: int,
    unlisted: Iterable[bytes],
) -> str | None:
    """The shrink guard's verdict on the ``count`` vanished pages of ``result.host``
    (``unlisted``: their digests, in pieces, read only if the host has a previous run)."""
    previous = store.previous_host(result.host)
    newly = count
    if previous is not None:
        before = DigestTable()
        for digests in store.vanished_digests(previous.run_id, result.host):
            before.add_many(b"".join(digests))
        if len(before):
            for blob in unlisted:
                newly -= int(np.count_nonzero(before.contains_many(blob)))
    assert result.stored is not None
    return shrink_verdict(
        guard,
        stored=result.stored,
        listed=result.distinct_listed,
        vanished=count,
        newly=newly,
        previous=previous,
    )


def _unlisted(store: ReconcileStore, host: str, table: DigestTable) -> Iterator[bytes]:
    """The digests of ``host``'s stored pages its listing missed, a scan batch at a time
    (a host looked up in batches, whose stored pages are not in memory)."""
    for digests in store.host_digests(host):
        listed = table.contains_many(b"".join(digests))
        yield b"".join(d for d, seen in zip(digests, listed.tolist(), strict=True) if not seen)


def _count(
    store: ReconcileStore,
    host: str,
    table: DigestTable,
    should_stop: Callable[[], bool] | None,
) -> tuple[int, int]:
    """``(stored, unlisted)`` pages of a host looked up in batches: one digest scan."""
    stored = unlisted = 0
    for digests in store.host_digests(host):
        stored += len(digests)
        listed = table.contains_many(b"".join(digests))
        unlisted += len(digests) - int(np.count_nonzero(listed))
        if should_stop is not None and should_stop():
            raise Stopped
    return stored, unlisted


def _report_batched(
    state: _State,
    result: HostResult,
    table: DigestTable,
    should_stop: Callable[[], bool] | None,
) -> None:
    """Stream the host's stored digests again; those no entry listed have vanished."""
    for digests in state.store.host_digests(result.host):
        listed = table.contains_many(b"".join(digests))
        gone = [d for d, seen in zip(digests, listed.tolist(), strict=True) if not seen]
        for start in range(0, len(gone), DEFAULT_LOOKUP_BATCH):
            _emit(state, result, gone[start : start + DEFAULT_LOOKUP_BATCH])
        if should_stop is not None and should_stop():
            raise Stopped


def _report_in_memory(
    state: _State, result: HostResult, gone: bytes, should_stop: Callable[[], bool] | None
) -> None:
    """The vanished pages of a host read whole: the rows no entry marked listed."""
    step = 16 * DEFAULT_LOOKUP_BATCH
    for start in range(0, len(gone), step):
        part = gone[start : start + step]
        _emit(state, result, [part[i : i + 16] for i in range(0, len(part), 16)])
        if should_stop is not None and should_stop():
            raise Stopped


def _emit(state: _State, result: HostResult, digests: list[bytes]) -> None:
    for digest, url, last_seen in state.store.pages(digests):
        result.vanished += 1
        state.findings.append(
            Finding("vanished", result.host, url, digest, stored_last_seen=last_seen)
        )
    if len(state.findings) >= _FLUSH_AT:
        state.flush()
