"""The triggers that keep ``page_simhashes``: each SimHash a stored page holds, about once.

Near-duplicate search (:mod:`changewatch.store.near`) reads the band buckets of
``page_simhashes`` rather than those of ``page_snapshots``: real fingerprints cluster
(thousands of stored pages on a few dozen SimHashes of one page's near-copies), and a bucket
of distinct SimHashes stays small where a bucket of pages does not.

After an insert into ``page_snapshots``, and after an update that changes its ``simhash``,
a trigger adds the new SimHash unless the table has it. No unique key, on purpose: with one,
two transactions storing the same new SimHash would wait on each other, and two batches
storing two such SimHashes in opposite orders would deadlock; without, a rare duplicate row
can appear (two writers adding one value at once), which the search de-duplicates. Values are
never deleted, so the table always holds every SimHash a committed row holds: a transaction
that found the value committed relies on a row no one removes, and one that did not adds its
own in the same transaction as the page. A SimHash no page holds any more costs one entry a
band and matches no page.

Migration 0013 created these triggers with its own frozen copy of this SQL;
tests/integration/store/test_frozen_migrations.py checks the two agree, and the
hash-partitioning of ``changewatch db upgrade --partitions`` creates them again from here.
"""

from __future__ import annotations

__all__ = ["TRIGGER_NAMES", "trigger_statements"]

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
