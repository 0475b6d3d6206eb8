"""The triggers that keep ``page_simhashes``: each SimHash a stored page holds, about once.

Near-duplicate search (:mod:`changewatch.store.near`) reads the band buckets of
``page_simhashes`` rather than those of ``page_snapshots``: real fingerprints cluster
(thousands of stored pages on a few dozen SimHashes of one page's near-copies), and a bucket
of distinct SimHashes stays small where a bucket of pages does not.

After an insert into ``page_snapshots``, and after an update that changes its ``simhash``,
a trigger adds the new SimHash unless the table has it. No unique key, on purpose: with one,
two transactions storing the same new SimHash would wait on each other, and two batches
storing two such SimHashes in opposite orders would deadlock; without, a rare duplicate row
can appear (two writers adding one value at once), which the search de-duplicates.

The table must always hold every SimHash a committed row holds, and a writer whose trigger
found its SimHash there adds nothing: it relies on a row it did not write. So only
:func:`prune_simhashes` deletes from it (``changewatch prune``), and only while no page can
be written: on Postgres it holds ``page_snapshots`` in ``SHARE`` mode for the delete (which
waits for the writers in flight to commit and holds new ones back for one short batch, so
the delete's check sees every committed page), on SQLite a write transaction (one writer at
a time). A SimHash no page holds any more costs one entry a band until then.

Migration 0013 created these triggers with its own frozen copy of this SQL;
tests/integration/store/test_frozen_migrations.py checks the two agree, and the
hash-partitioning of ``changewatch db upgrade --partitions`` creates them again from here.
"""

from __future__ import annotations

import logging
import time

import sqlalchemy as sa
from sqlalchemy import bindparam, func, tuple_
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from changewatch.store.tables import page_simhashes, page_snapshots
from changewatch.store.types import simhash_band_expr

__all__ = ["TRIGGER_NAMES", "prune_simhashes", "trigger_statements"]

#: The triggers on ``page_snapshots``, in creation order.
TRIGGER_NAMES = ("tr_page_snapshots_simhash_insert", "tr_page_snapshots_simhash_update")

# Add NEW.simhash unless present; the lookup is an index scan of the band-3 index.
_ADD = (
    "INSERT INTO page_simhashes (simhash) SELECT NEW.simhash WHERE NOT EXISTS ("
    "SELECT 1 FROM page_simhashes WHERE (simhash & 65535) = (NEW.simhash & 65535) "
    "AND simhash = NEW.simhash);"
)


def trigger_statements(dialect: str) -> list[str]:
    """The ``CREATE`` statements of the triggers (and, on Postgres, of their function)."""
    insert, update = TRIGGER_NAMES
    if dialect == "postgresql":
        return [
            "CREATE OR REPLACE FUNCTION page_simhashes_add() RETURNS trigger "
            f"LANGUAGE plpgsql AS $$ BEGIN {_ADD} RETURN NULL; END $$",
            f"CREATE TRIGGER {insert} AFTER INSERT ON page_snapshots "
            "FOR EACH ROW EXECUTE FUNCTION page_simhashes_add()",
            f"CREATE TRIGGER {update} AFTER UPDATE OF simhash ON page_snapshots "
            "FOR EACH ROW WHEN (OLD.simhash IS DISTINCT FROM NEW.simhash) "
            "EXECUTE FUNCTION page_simhashes_add()",
        ]
    return [
        f"CREATE TRIGGER {insert} AFTER INSERT ON page_snapshots BEGIN {_ADD} END",
        f"CREATE TRIGGER {update} AFTER UPDATE OF simhash ON page_snapshots "
        f"WHEN OLD.simhash IS NOT NEW.simhash BEGIN {_ADD} END",
    ]


log = logging.getLogger(__name__)

#: How long a prune waits for ``page_snapshots``' lock (writers queue behind the wait): past
#: it the batch is tried again, at most :data:`_LOCK_ATTEMPTS` times, then the prune stops.
_LOCK_TIMEOUT = "1s"
_LOCK_ATTEMPTS = 5

_SIM = page_simhashes.c
# Band 3's index is ((simhash & 65535), simhash): walked in that order, batch by batch.
_KEY = tuple_(simhash_band_expr(_SIM.simhash, 3), _SIM.simhash)
_AFTER = tuple_(bindparam("after_band"), bindparam("after_simhash", type_=_SIM.simhash.type))
_UNHELD = ~sa.exists().where(page_snapshots.c.simhash == _SIM.simhash)
_NEXT = (
    sa.select(_KEY.clauses[0].label("band"), _SIM.simhash, _UNHELD.label("unheld"))
    .where(_KEY > _AFTER)
    .order_by(_KEY.clauses[0], _SIM.simhash)
    .limit(bindparam("batch"))
)
_LAST = tuple_(bindparam("last_band"), bindparam("last_simhash", type_=_SIM.simhash.type))
_DELETE = sa.delete(page_simhashes).where(_KEY > _AFTER, _KEY <= _LAST, _UNHELD)
_COUNT = sa.select(func.count()).select_from(page_simhashes).where(_UNHELD)


def prune_simhashes(engine: Engine, *, dry_run: bool = False, batch_size: int = 5_000) -> int:
    """Delete the rows of ``page_simhashes`` whose SimHash no stored page holds (with
    ``dry_run``, count them); the number deleted.

    The table is read in batches of ``batch_size`` rows without a lock; a batch holding such
    rows is deleted again in one statement that checks each row's holders under the lock of
    the module docstring, so a page written meanwhile keeps its SimHash. When the lock cannot
    be had (a writer's transaction left open), the prune stops with a warning; what it
    deleted until then stays deleted and the rest waits for the next prune.
    """
    if dry_run:
        with engine.connect() as conn:
            return int(conn.execute(_COUNT).scalar_one())
    postgres = engine.dialect.name == "postgresql"
    removed = 0
    after = {"after_band": -1, "after_simhash": 0}
    while True:
        with engine.connect() as conn:
            rows = conn.execute(_NEXT, after | {"batch": batch_size}).all()
        if not rows:
            return removed
        last = {"last_band": rows[-1].band, "last_simhash": rows[-1].simhash}
        if any(r.unheld for r in rows):
            deleted = _delete_locked(engine, after | last, postgres)
            if deleted is None:
                log.warning(
                    "prune: page_snapshots stayed locked by a writer; %d unheld SimHashes "
                    "removed, the rest is left for the next prune",
                    removed,
                )
                return removed
            removed += deleted
        if len(rows) < batch_size:
            return removed
        after = {"after_band": last["last_band"], "after_simhash": last["last_simhash"]}


def _delete_locked(engine: Engine, params: dict[str, int], postgres: bool) -> int | None:
    """Delete the unheld rows of one batch's key range while no page can be written; ``None``
    if the lock was not had in :data:`_LOCK_ATTEMPTS` tries."""
    for attempt in range(_LOCK_ATTEMPTS):
        try:
            with engine.begin() as conn:
                if postgres:
                    conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{_LOCK_TIMEOUT}'")
                    conn.exec_driver_sql("LOCK TABLE page_snapshots IN SHARE MODE")
                return int(conn.execute(_DELETE, params).rowcount or 0)
        except OperationalError as exc:
            if not _lock_refused(exc):
                raise
            time.sleep(0.1 * (attempt + 1))
    return None


def _lock_refused(exc: OperationalError) -> bool:
    """Postgres's lock_not_available (the timeout above) or SQLite's busy database."""
    code = getattr(exc.orig, "sqlstate", None)
    return code == "55P03" or "locked" in str(exc.orig) or "busy" in str(exc.orig)
