"""Pages and store queries shared by the integration tests."""

from __future__ import annotations

import random
from typing import Any

import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.store.tables import page_snapshots, page_versions

_WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "river",
    "stone",
    "cloud",
    "maple",
    "harbour",
    "lantern",
    "meadow",
    "orchard",
    "pebble",
    "quartz",
]


def words(seed: int, n: int = 400) -> list[str]:
    """``n`` words drawn deterministically from a small vocabulary."""
    rng = random.Random(seed)
    return [rng.choice(_WORDS) for _ in range(n)]


def page(text_words: list[str], *, head_extra: str = "", nonce: str = "abc123") -> str:
    """A full HTML page whose visible text is ``text_words``, with invisible noise around it."""
    body = " ".join(text_words)
    return (
        f"<!doctype html><html><head><title>Page</title>{head_extra}"
        f'<script nonce="{nonce}">window.token = "{nonce}";</script></head>'
        f"<body><!-- rendered {nonce} --><p>{body}</p></body></html>"
    )


def long_page(seed: int = 0) -> str:
    """A 400-word page; :func:`one_word_edit` of it stays within SimHash distance 3."""
    return page(words(seed))


def one_word_edit(seed: int = 0) -> str:
    """:func:`long_page` with one word replaced (SimHash distance 1 for seed 0: in a long
    page a one-word edit moves few bits, sometimes none)."""
    edited = words(seed)
    edited[200] = "zeppelin"
    return page(edited)


def rewrite(seed: int = 0) -> str:
    """An unrelated page of the same length as :func:`long_page`."""
    return page(words(seed + 1000))


def snapshot_rows(watch: ChangeWatch) -> list[Any]:
    """Every ``page_snapshots`` row, ordered by URL digest."""
    with watch.store.engine.connect() as conn:
        return list(
            conn.execute(sa.select(page_snapshots).order_by(page_snapshots.c.url_digest)).all()
        )


def version_rows(watch: ChangeWatch) -> list[Any]:
    """Every ``page_versions`` row, ordered by URL digest and version number."""
    with watch.store.engine.connect() as conn:
        return list(
            conn.execute(
                sa.select(page_versions).order_by(
                    page_versions.c.url_digest, page_versions.c.version_no
                )
            ).all()
        )


def snapshot(watch: ChangeWatch, digest: bytes) -> Any:
    """The ``page_snapshots`` row of one page."""
    with watch.store.engine.connect() as conn:
        return conn.execute(
            sa.select(page_snapshots).where(page_snapshots.c.url_digest == digest)
        ).one()


def counts(watch: ChangeWatch) -> tuple[int, int, int]:
    """(snapshot rows, version rows, total fetch_count) — "was anything written?"."""
    with watch.store.engine.connect() as conn:
        snaps = conn.execute(sa.select(sa.func.count()).select_from(page_snapshots)).scalar_one()
        versions = conn.execute(sa.select(sa.func.count()).select_from(page_versions)).scalar_one()
        fetches = conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(page_snapshots.c.fetch_count), 0))
        ).scalar_one()
    return int(snaps), int(versions), int(fetches)


def terminate_other_connections(url: str) -> None:
    """An administrator's kill of every other connection to ``url``'s Postgres database."""
    killer = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with killer.connect() as conn:
            conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
    finally:
        killer.dispose()
