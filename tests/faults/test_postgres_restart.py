"""Postgres lost in the middle of a ``should_parse_many`` batch: StoreError, retry, no loss.

The shared server is never touched: the store talks to it through a TCP proxy on 127.0.0.1
(:mod:`._proxy`) that cuts the connection at the batch's ``COMMIT`` — before the server sees
it (it rolls the transaction back, as a restart would) or after (it committed, but the answer
is lost). A second test terminates the backend with ``pg_terminate_backend`` mid-transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from changewatch import ChangeWatch, url_digest
from changewatch.errors import StoreError
from changewatch.metrics import PrometheusObserver

from ._history import read_state
from ._proxy import Mode, TcpProxy

pytestmark = pytest.mark.postgres

URLS = [f"https://example.com/fault/{i}" for i in range(12)]


def _page(i: int, edition: int) -> str:
    words = " ".join(f"word{(i * 7 + j) % 97}" for j in range(80))
    tail = f"edition {edition} {'x' * edition}"
    return f"<html><body><h1>Page {i}</h1><p>{words}</p><p>{tail}</p></body></html>"


def _batch(edition: int) -> list[tuple[str, str]]:
    """Half the pages changed in this edition; two new URLs each time."""
    pages = [(u, _page(i, edition if i % 2 else 0)) for i, u in enumerate(URLS)]
    pages += [
        (f"https://example.com/fault/new-{edition}-{k}", _page(100 + k, edition)) for k in range(2)
    ]
    return pages


@pytest.fixture
def proxied(make_pg_database: Callable[..., str]) -> Iterator[tuple[str, str, TcpProxy]]:
    """(direct URL, URL through the proxy, proxy) for a fresh migrated database."""
    direct = make_pg_database()
    url = make_url(direct)
    proxy = TcpProxy((url.host or "127.0.0.1", url.port or 5432))
    via = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    yield direct, via, proxy
    proxy.close()


@pytest.mark.parametrize("mode", ["before", "after"])
def test_connection_cut_at_commit_fails_the_batch_and_a_retry_loses_nothing(
    proxied: tuple[str, str, TcpProxy], mode: Mode
) -> None:
    """Cut at COMMIT: StoreError; the retry succeeds; versions neither lost nor duplicated."""
    direct, via, proxy = proxied
    observer = PrometheusObserver()
    with ChangeWatch(via, "memory:", observer=observer) as watch:
        assert all(d.kind == "new" for d in watch.should_parse_many(_batch(0)))
        before = read_state(direct)

        proxy.arm(b"COMMIT", mode)
        with pytest.raises(StoreError) as caught:
            watch.should_parse_many(_batch(1))
        assert caught.value.retryable
        assert proxy.cuts == 1
        after_cut = read_state(direct)
        if mode == "before":
            assert after_cut == before  # rolled back: nothing of the batch was written

        retry = watch.should_parse_many(_batch(1))
    state = read_state(direct)
    state.assert_contiguous()
    changed = {url_digest(u) for i, u in enumerate(URLS) if i % 2}
    new = {url_digest(u) for u, _ in _batch(1)} - {url_digest(u) for u in URLS}
    for digest in changed:
        assert state.version_counts[digest] == 2  # one version for the edition, never two
    for digest in {url_digest(u) for u in URLS} - changed:
        assert state.version_counts[digest] == 1
    for digest in new:
        assert state.version_counts[digest] == 1
    if mode == "before":
        kinds = {d.url_digest: d.kind for d in retry}
        assert all(kinds[digest] in ("minor", "changed") for digest in changed)
        assert sum(state.fetches.values()) == sum(before.fetches.values()) + len(_batch(1))
    else:
        # The lost answer hid a commit: the retry finds the edition stored, so it is unchanged
        # (nothing duplicated); the fetches of the batch are counted twice, as they were sent twice.
        assert all(d.kind == "unchanged" for d in retry)
        assert sum(state.fetches.values()) == sum(before.fetches.values()) + 2 * len(_batch(1))
    assert observer.registry.get_sample_value("changewatch_store_errors_total") == 1


def test_backend_terminated_mid_transaction_fails_the_batch_and_a_retry_succeeds(
    make_pg_database: Callable[..., str],
) -> None:
    """pg_terminate_backend between the lookup and the write: StoreError, then a clean retry."""
    database_url = make_pg_database()
    admin = sa.create_engine(database_url, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT")
    calls = {"n": 0}

    with ChangeWatch(database_url, "memory:") as watch:
        watch.should_parse_many(_batch(0))
        before = read_state(database_url)
        store = watch.store
        original = type(store).transaction

        def killing_transaction(self: object) -> Iterator[object]:
            calls["n"] += 1
            manager = original(self)  # type: ignore[arg-type]
            tx = manager.__enter__()
            if calls["n"] == 1:
                pid = tx._conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()  # type: ignore[attr-defined]
                with admin.connect() as conn:
                    conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            return _Reentered(manager, tx)

        store.transaction = killing_transaction.__get__(store)  # type: ignore[method-assign]
        try:
            with pytest.raises(StoreError):
                watch.should_parse_many(_batch(1))
            assert read_state(database_url) == before
            watch.should_parse_many(_batch(1))
        finally:
            del store.transaction  # type: ignore[method-assign]
    admin.dispose()
    state = read_state(database_url)
    state.assert_contiguous()
    assert (
        sum(state.version_counts.values())
        == sum(before.version_counts.values()) + len(URLS) // 2 + 2
    )


class _Reentered:
    """A context manager already entered: exits through the original one."""

    def __init__(self, manager: object, value: object) -> None:
        self._manager, self._value = manager, value

    def __enter__(self) -> object:
        return self._value

    def __exit__(self, *exc: object) -> object:
        return self._manager.__exit__(*exc)  # type: ignore[attr-defined]
