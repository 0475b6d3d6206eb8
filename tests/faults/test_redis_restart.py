"""Redis killed and restarted under ``mark_seen``: the on_error policy, and no acked add lost.

Every test runs its own ``redis-server`` (AOF, ``appendfsync always``) on a free port in a
temporary directory and kills it with SIGKILL; the shared server is never touched.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from changewatch import ChangeWatch
from changewatch.errors import SeenSetError, SeenSetUnavailableError
from changewatch.metrics import PrometheusObserver

from ._redis_server import PrivateRedis


@pytest.fixture
def server(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A private redis-server, started; killed after the test."""
    directory = tmp_path / "redis"
    directory.mkdir()
    private = PrivateRedis(directory)
    private.start()
    yield private
    private.kill()


def _watch(tmp_path: Path, seen_url: str, **kwargs: object) -> ChangeWatch:
    return ChangeWatch(f"sqlite:///{tmp_path}/cw.db", seen_url, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["set", "bloom"])
def test_mark_seen_follows_on_error_and_keeps_acked_adds_across_kill_9(
    server: PrivateRedis, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Down: "raise" raises SeenSetUnavailableError, "assume-new" answers True; back: all kept."""
    seen_url = f"{server.url}?kind={kind}&key=fault&timeout=2&capacity=10000&error_rate=0.001"
    if kind == "set":
        seen_url = f"{server.url}?kind=set&key=fault&timeout=2"
    raising_observer, lenient_observer = PrometheusObserver(), PrometheusObserver()
    strict = _watch(tmp_path, seen_url, seen_on_error="raise", observer=raising_observer)
    lenient = _watch(tmp_path, seen_url, seen_on_error="assume-new", observer=lenient_observer)
    try:
        acked = [f"https://example.com/acked/{i}" for i in range(50)]
        assert strict.mark_seen_many(acked) == [True] * 50
        assert lenient.mark_seen(acked[0]) is False

        server.kill()
        with pytest.raises(SeenSetUnavailableError):
            strict.mark_seen("https://example.com/while-down")
        with caplog.at_level(logging.WARNING, logger="changewatch"):
            assert lenient.mark_seen(acked[1]) is True  # assumed new: fetched twice, never missed
        assert "assuming 1 URL(s) new" in caplog.text
        assert raising_observer.registry.get_sample_value("changewatch_seen_errors_total") == 1
        assert lenient_observer.registry.get_sample_value("changewatch_seen_errors_total") == 1

        server.start()  # replays the AOF
        assert strict.mark_seen_many(acked) == [False] * 50  # every acknowledged add survived
        assert strict.mark_seen("https://example.com/while-down") is True
        assert lenient.mark_seen("https://example.com/after") is True
    finally:
        strict.close()
        lenient.close()


@pytest.mark.parametrize("kind", ["set", "bloom"])
def test_kill_9_mid_stream_loses_no_acknowledged_add(
    server: PrivateRedis, tmp_path: Path, kind: str
) -> None:
    """A writer adds while the server is SIGKILLed at a random moment: each acked URL is kept."""
    seen_url = f"{server.url}?kind={kind}&key=stream&timeout=2"
    if kind == "bloom":
        seen_url += "&capacity=100000&error_rate=0.001"
    acked: list[str] = []
    stopped = threading.Event()
    failure: list[BaseException] = []
    watch = _watch(tmp_path, seen_url)

    def writer() -> None:
        n = 0
        try:
            while not stopped.is_set():
                batch = [f"https://example.com/s/{n + i}" for i in range(5)]
                answers = watch.mark_seen_many(batch)
                assert answers == [True] * 5
                acked.extend(batch)
                n += 5
        except SeenSetError:
            return  # the server went away: what was acked so far is what counts
        except BaseException as exc:
            failure.append(exc)

    try:
        thread = threading.Thread(target=writer)
        thread.start()
        threading.Event().wait(random.uniform(0.2, 0.6))
        server.kill()
        thread.join(timeout=30)
        stopped.set()
        assert not thread.is_alive()
        assert not failure, failure
        assert len(acked) > 20, "the writer never got going"
        server.start()
        assert all(url in watch.seen for url in acked)
        assert watch.mark_seen_many(acked) == [False] * len(acked)
    finally:
        watch.close()
