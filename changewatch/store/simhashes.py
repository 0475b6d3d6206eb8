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
from sqlalchemy import bindparam, func
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
#: Values deleted under one lock at most: page writes wait for that one statement (1,000 on a
#: store of 760,000 pages in 16 hash partitions: about 0.1 s, most of it looking for each
#: value's holders in every partition; 100,000 unheld values went in 14 s).
_MAX_LOCKED = 1_000

_SIM = page_simhashes.c
_BAND = simhash_band_expr(_SIM.simhash, 3)
_UNHELD = ~sa.exists().where(page_snapshots.c.simhash == _SIM.simhash)
# The candidates: one anti-join (on Postgres a hash anti join, both tables read once; a
# walk probing page_snapshots' SimHash index row by row cost 20 s on 760,000 rows in 16
# partitions, the anti-join 0.9 s).
_CANDIDATES = sa.select(_BAND.label("band"), _SIM.simhash).where(_UNHELD)
# One batch of them, found again through band 3's index ((simhash & 65535), simhash) and
# checked again for holders.
_DELETE = sa.delete(page_simhashes).where(
    _BAND.in_(bindparam("bands", expanding=True)),
    _SIM.simhash.in_(bindparam("values", expanding=True, type_=_SIM.simhash.type)),
    _UNHELD,
)
_COUNT = sa.select(func.count()).select_from(page_simhashes).where(_UNHELD)


def prune_simhashes(engine: Engine, *, dry_run: bool = False, batch_size: int = 5_000) -> int:
    """Delete the rows of ``page_simhashes`` whose SimHash no stored page holds (with
    ``dry_run``, count them); the number deleted.

    The candidates are read without a lock, streamed ``batch_size`` at a time (at most
    :data:`_MAX_LOCKED`); each batch is deleted in one statement that checks each value's
    holders again under the lock of the module docstring, so a page written meanwhile keeps
    its SimHash. When the lock cannot be had (a writer's transaction left open), the prune
    stops with a warning; what it deleted until then stays deleted and the rest waits for the
    next prune.
    """
    if dry_run:
        with engine.connect() as conn:
            return int(conn.execute(_COUNT).scalar_one())
    postgres = engine.dialect.name == "postgresql"
    size = min(batch_size, _MAX_LOCKED)
    removed = 0
    with engine.connect() as reader:
        found = reader.execution_options(stream_results=True, yield_per=size).execute(_CANDIDATES)
        for part in found.partitions(size):
            params = {
                "bands": sorted({row.band for row in part}),
                "values": [row.simhash for row in part],
            }
            deleted = _delete_locked(engine, params, postgres)
            if deleted is None:
                log.warning(
                    "prune: page_snapshots stayed locked by a writer; %d unheld SimHashes "
                    "removed, the rest is left for the next prune",
                    removed,
                )
                break
            removed += deleted
    return removed


def _delete_locked(engine: Engine, params: dict[str, list[int]], postgres: bool) -> int | None:
    """Delete the unheld rows among one batch's values while no page can be written;
    ``None`` if the lock was not had in :data:`_LOCK_ATTEMPTS` tries."""
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
