"""Retention: delete old ``page_versions`` rows, never a page's current or latest N versions.

A row is removed when all three hold: it was last seen before ``now - older_than``; it is not
among the latest ``keep_versions`` of its page (``version_no <= version_count - keep``); and
it is not the current version (``keep`` is at least 1). ``page_snapshots`` is never touched:
``version_count`` keeps counting versions ever made (it is the current version's number, and
the CHECK ``fetch_count >= version_count`` and the decision path rely on it), so history
after pruning has gaps in its version numbers, and ``page_changes.previous_content_sha256``
is NULL where the previous version was removed.

Deletion runs in bounded batches (``batch_size`` rows per transaction), walking the
``(url_digest, version_no)`` index in order, so crawlers writing at the same time wait at most
one short batch. A row that qualifies keeps qualifying while crawlers write: ``version_count``
only grows and a superseded version's ``last_seen`` is never moved again.

Stored texts (``page_texts``, kept once per content hash when ``store_text`` is on) that no
version row refers to any more are deleted afterwards, if they were first stored before the
cut-off too (a text stored since belongs to a version being written). A version written
during the prune that returns to a text deleted in that same moment loses its text (``diff``
then says so); nothing else is affected.

Chrome and outlink changes (``page_chrome_changes``) seen before the cut-off go with them, in
batches in ``seen_at`` order: those of fetches that left the content unchanged, and those
whose content version has been removed (``page_history`` shows them only beside their
version). They only ever qualify more: ``seen_at`` is never moved and a version removed is
never made again.

Reconcile runs (``reconcile_runs`` with their ``reconcile_hosts`` and ``reconcile_findings``:
a run of a 10M-URL site can record millions of findings) started before the cut-off go too,
findings first in batches, except a run still ``running`` and, for each host, its latest
``complete`` run and its latest accepted one (the shrink guard's baseline, docs/reconcile.md):
what the store last knew of every host stays whatever the cut-off.

The SimHashes of ``page_simhashes`` (near-duplicate search's buckets) that no stored page
holds any more are deleted last (:func:`prune_simhashes`): every change of a page leaves its
old SimHash there, so without it the buckets a search reads would grow with every change
ever stored (5% of the pages changing a day is 18 times the store's SimHashes in a year),
not with the pages stored.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy import bindparam, func, tuple_
from sqlalchemy.engine import Engine

from changewatch.store.simhashes import prune_simhashes
from changewatch.store.tables import (
    page_chrome_changes,
    page_snapshots,
    page_texts,
    page_versions,
    reconcile_findings,
    reconcile_hosts,
    reconcile_runs,
)
from changewatch.store.writes import chunks
from changewatch.values import PruneReport

__all__ = ["DEFAULT_PRUNE_BATCH", "check_prune_args", "prune_versions"]

#: Version rows deleted per transaction.
DEFAULT_PRUNE_BATCH = 5_000

_SNAP = page_snapshots.c
_VER = page_versions.c


def check_prune_args(keep_versions: int, older_than: timedelta, batch_size: int) -> None:
    """``ValueError`` naming the bad argument."""
    if isinstance(keep_versions, bool) or not isinstance(keep_versions, int) or keep_versions < 1:
        raise ValueError(f"keep_versions must be an integer >= 1, got {keep_versions!r}")
    if not isinstance(older_than, timedelta) or older_than < timedelta(0):
        raise ValueError(f"older_than must be a non-negative timedelta, got {older_than!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")


def _prunable() -> Any:
    return sa.and_(
        _VER.last_seen < bindparam("cutoff", type_=_VER.last_seen.type),
        _VER.version_no <= _SNAP.version_count - bindparam("keep"),
    )


# The next batch of prunable rows after a (url_digest, version_no) position, in index order.
_NEXT_BATCH = (
    sa.select(_VER.url_digest, _VER.version_no, _SNAP.host)
    .join(page_snapshots, _SNAP.url_digest == _VER.url_digest)
    .where(
        tuple_(_VER.url_digest, _VER.version_no)
        > tuple_(bindparam("after_digest"), bindparam("after_version")),
        _prunable(),
    )
    .order_by(_VER.url_digest, _VER.version_no)
    .limit(bindparam("batch"))
)

_CHROME = page_chrome_changes.c
_BEFORE_CUTOFF = _CHROME.seen_at < bindparam("cutoff", type_=_CHROME.seen_at.type)
_SAME_FETCH = sa.and_(_VER.url_digest == _CHROME.url_digest, _VER.first_seen == _CHROME.seen_at)
# A chrome change before the cut-off that page_history shows apart from any stored version.
_CHROME_PRUNABLE = sa.and_(
    _BEFORE_CUTOFF,
    sa.or_(~_CHROME.content_changed, ~sa.exists().where(_SAME_FETCH)),
)
_CHROME_BATCH = (
    sa.select(_CHROME.id)
    .where(_CHROME_PRUNABLE)
    .order_by(_CHROME.seen_at, _CHROME.id)
    .limit(bindparam("batch"))
)
# A dry run: the versions are still there, so a change beside a version that the prune would
# remove counts too.
_KEPT_VERSION = (
    sa.exists().where(_SAME_FETCH, _SNAP.url_digest == _VER.url_digest).where(~_prunable())
)
_CHROME_COUNT = (
    sa.select(func.count())
    .select_from(page_chrome_changes)
    .where(_BEFORE_CUTOFF, sa.or_(~_CHROME.content_changed, ~_KEPT_VERSION))
)

_RUN, _RUN_HOST, _FINDING = reconcile_runs.c, reconcile_hosts.c, reconcile_findings.c
# Each host's latest complete run, and its latest accepted one (vanished computed).
_LATEST_COMPLETE = (
    sa.select(func.max(_RUN_HOST.run_id))
    .join(reconcile_runs, _RUN.id == _RUN_HOST.run_id)
    .where(_RUN.status == "complete")
    .group_by(_RUN_HOST.host)
)
_BASELINES = _LATEST_COMPLETE.where(_RUN_HOST.vanished_checked.is_(True))
_OLD_RUNS = (
    sa.select(_RUN.id)
    .where(_RUN.started_at < bindparam("cutoff", type_=_RUN.started_at.type))
    .where(_RUN.status != "running")
    .order_by(_RUN.id)
)
_RUN_FINDINGS = (
    sa.select(_FINDING.id)
    .where(_FINDING.run_id == bindparam("run"))
    .order_by(_FINDING.id)
    .limit(bindparam("batch"))
)

_COUNT = (
    sa.select(_SNAP.host, func.count())
    .select_from(page_versions.join(page_snapshots, _SNAP.url_digest == _VER.url_digest))
    .where(_prunable())
    .group_by(_SNAP.host)
)


def prune_versions(
    engine: Engine,
    keep_versions: int,
    older_than: timedelta,
    now: datetime,
    *,
    dry_run: bool = False,
    batch_size: int = DEFAULT_PRUNE_BATCH,
) -> PruneReport:
    """Delete (or count, with ``dry_run``) the prunable version rows; see the module doc."""
    check_prune_args(keep_versions, older_than, batch_size)
    cutoff = now - older_than
    params: dict[str, Any] = {"cutoff": cutoff, "keep": keep_versions}
    if dry_run:
        with engine.connect() as conn:
            counts = {str(h): int(n) for h, n in conn.execute(_COUNT, params).all()}
            chrome = int(conn.execute(_CHROME_COUNT, params).scalar_one())
            old_runs = _old_runs(conn, cutoff)
            findings = _count_findings(conn, old_runs)
        simhashes = prune_simhashes(engine, dry_run=True, batch_size=batch_size)
        return PruneReport(
            cutoff,
            keep_versions,
            True,
            dict(sorted(counts.items())),
            chrome_changes_removed=chrome,
            reconcile_runs_removed=len(old_runs),
            reconcile_findings_removed=findings,
            simhashes_removed=simhashes,
        )
    removed: Counter[str] = Counter()
    after: tuple[bytes, int] = (b"", 0)
    batches = 0
    while True:
        with engine.begin() as conn:
            rows = conn.execute(
                _NEXT_BATCH,
                params | {"after_digest": after[0], "after_version": after[1], "batch": batch_size},
            ).all()
            if not rows:
                break
            keys = [(bytes(r.url_digest), int(r.version_no)) for r in rows]
            deleted = conn.execute(
                sa.delete(page_versions)
                .where(
                    tuple_(_VER.url_digest, _VER.version_no).in_(bindparam("keys", expanding=True))
                )
                .returning(_VER.url_digest, _VER.version_no),
                {"keys": keys},
            ).all()
            gone = {(bytes(d), int(v)) for d, v in deleted}
            removed.update(
                str(r.host) for r in rows if (bytes(r.url_digest), int(r.version_no)) in gone
            )
            after = keys[-1]
            batches += 1
        if len(rows) < batch_size:
            break
    texts = _prune_texts(engine, cutoff) if removed else 0
    chrome = _prune_chrome_changes(engine, cutoff, batch_size)
    runs, findings = _prune_reconcile_runs(engine, cutoff, batch_size)
    simhashes = prune_simhashes(engine, batch_size=batch_size)
    return PruneReport(
        cutoff,
        keep_versions,
        False,
        dict(sorted(removed.items())),
        batches,
        texts_removed=texts,
        chrome_changes_removed=chrome,
        reconcile_runs_removed=runs,
        reconcile_findings_removed=findings,
        simhashes_removed=simhashes,
    )


def _prune_chrome_changes(engine: Engine, cutoff: datetime, batch_size: int) -> int:
    """Delete the prunable chrome changes (the module docstring), ``batch_size`` a
    transaction, oldest first; the number deleted."""
    return _delete_in_batches(
        engine, _CHROME_BATCH, {"cutoff": cutoff}, page_chrome_changes.c.id, batch_size
    )


def _delete_in_batches(
    engine: Engine, ids_query: Any, params: dict[str, Any], key: Any, batch_size: int
) -> int:
    """Delete the rows whose ``key`` ``ids_query`` returns (its next ``batch_size``, given
    ``params``), a transaction a batch, until it returns fewer; the number deleted."""
    removed = 0
    while True:
        with engine.begin() as conn:
            ids = list(conn.execute(ids_query, params | {"batch": batch_size}).scalars())
            if ids:
                conn.execute(
                    sa.delete(key.table).where(key.in_(bindparam("ids", expanding=True))),
                    {"ids": ids},
                )
        removed += len(ids)
        if len(ids) < batch_size:
            return removed


def _old_runs(conn: Any, cutoff: datetime) -> list[int]:
    """The reconcile runs a prune removes (the module docstring), oldest first."""
    kept = set(conn.execute(_LATEST_COMPLETE).scalars()) | set(conn.execute(_BASELINES).scalars())
    return [run for run in conn.execute(_OLD_RUNS, {"cutoff": cutoff}).scalars() if run not in kept]


def _count_findings(conn: Any, runs: list[int]) -> int:
    """The findings of ``runs``."""
    count = sa.select(func.count()).where(_FINDING.run_id.in_(bindparam("runs", expanding=True)))
    return sum(int(conn.execute(count, {"runs": list(part)}).scalar_one()) for part in chunks(runs))


def _prune_reconcile_runs(engine: Engine, cutoff: datetime, batch_size: int) -> tuple[int, int]:
    """Delete the old reconcile runs: each one's findings ``batch_size`` a transaction, then
    its host rows and the run; the runs and the findings deleted."""
    with engine.connect() as conn:
        runs = _old_runs(conn, cutoff)
    findings = 0
    for run in runs:
        findings += _delete_in_batches(engine, _RUN_FINDINGS, {"run": run}, _FINDING.id, batch_size)
        with engine.begin() as conn:
            conn.execute(sa.delete(reconcile_hosts).where(_RUN_HOST.run_id == run))
            conn.execute(sa.delete(reconcile_runs).where(_RUN.id == run))
    return len(runs), findings


def _prune_texts(engine: Engine, cutoff: datetime) -> int:
    """Delete the stored texts first stored before ``cutoff`` that no version refers to."""
    referenced = sa.exists().where(_VER.content_sha256 == page_texts.c.content_sha256)
    with engine.begin() as conn:
        result = conn.execute(
            sa.delete(page_texts).where(page_texts.c.first_stored < cutoff, ~referenced)
        )
    return int(result.rowcount or 0)
