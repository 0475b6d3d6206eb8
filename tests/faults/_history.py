"""Read a store's counters and history straight from its tables, for the fault and load suites."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import sqlalchemy as sa

from changewatch.store.tables import page_snapshots, page_versions


@dataclass(frozen=True)
class StoreState:
    """Per URL digest: fetch_count, version_count, and the version rows (number, kind, sha)."""

    fetches: dict[bytes, int]
    version_counts: dict[bytes, int]
    versions: dict[bytes, list[tuple[int, str, bytes]]]

    def assert_contiguous(self) -> None:
        """Every page's versions are numbered 1..version_count, the first one 'new' only."""
        for digest, count in self.version_counts.items():
            rows = self.versions.get(digest, [])
            assert [n for n, _, _ in rows] == list(range(1, count + 1)), digest.hex()
            assert [k for _, k, _ in rows][:1] == ["new"], digest.hex()
            assert "new" not in [k for _, k, _ in rows][1:], digest.hex()


def read_state(database_url: str) -> StoreState:
    """The whole store, on a connection of its own."""
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            snaps = conn.execute(
                sa.select(
                    page_snapshots.c.url_digest,
                    page_snapshots.c.fetch_count,
                    page_snapshots.c.version_count,
                )
            ).all()
            rows = conn.execute(
                sa.select(
                    page_versions.c.url_digest,
                    page_versions.c.version_no,
                    page_versions.c.kind,
                    page_versions.c.content_sha256,
                ).order_by(page_versions.c.url_digest, page_versions.c.version_no)
            ).all()
    finally:
        engine.dispose()
    versions: defaultdict[bytes, list[tuple[int, str, bytes]]] = defaultdict(list)
    for r in rows:
        versions[bytes(r.url_digest)].append((r.version_no, r.kind, bytes(r.content_sha256)))
    return StoreState(
        {bytes(s.url_digest): s.fetch_count for s in snaps},
        {bytes(s.url_digest): s.version_count for s in snaps},
        dict(versions),
    )
