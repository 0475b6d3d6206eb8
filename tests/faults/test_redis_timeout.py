"""A Redis reply that times out while the server is busy, and the retry that follows.

A private ``redis-server`` (:mod:`._redis_server`) is kept busy by another client running a
long Lua script, longer than the seen-set's socket timeout. The seen-set's add is queued
behind it, times out (``SeenSetUnavailableError``), and runs anyway once the server is free.
The caller retries, as docs/reliability.md says; the retry must get the answers of the add
that timed out, not "seen" for every URL.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from changewatch.errors import SeenSetUnavailableError
from changewatch.seen import SeenSet, open_seen_set

from ._redis_server import PrivateRedis

KINDS = {
    "set": "kind=set",
    "bloom": "kind=bloom&capacity=10000&error_rate=0.0001",
    "set-ageing": "kind=set&max_age=3600&window=900",
    "bloom-ageing": "kind=bloom&capacity=10000&error_rate=0.0001&max_age=3600&window=900",
}
BUSY_S = 2.0
TIMEOUT_S = 0.3

# Keeps the server busy for ARGV[1] seconds: nothing else runs meanwhile (under the default
# busy-reply-threshold of 5 s the server does not even answer BUSY; it just does not read).
_BUSY = """
local start = redis.call('TIME')
while true do
  local now = redis.call('TIME')
  if (now[1] - start[1]) + (now[2] - start[2]) / 1e6 > tonumber(ARGV[1]) then return 1 end
end
"""


@pytest.fixture
def server(tmp_path: Path) -> PrivateRedis:
    """A private redis-server on a free port, killed after the test."""
    private = PrivateRedis(tmp_path)
    private.start()
    yield private
    private.kill()


def _keep_busy(port: int, seconds: float, started: threading.Event) -> None:
    client = redis.Redis(port=port, socket_timeout=seconds + 30)
    try:
        started.set()
        client.eval(_BUSY, 0, seconds)
    finally:
        client.close()


def _busy(server: PrivateRedis) -> threading.Thread:
    """Start the long script in another client; return once it is running."""
    # Connected before the script starts: redis-py's handshake on a new connection would wait
    # for the busy server without a timeout.
    probe = redis.Redis(
        port=server.port,
        socket_timeout=0.2,
        socket_connect_timeout=0.2,
        retry=Retry(NoBackoff(), 0),  # redis-py would retry a timed-out PING by itself
    )
    probe.ping()
    started = threading.Event()
    thread = threading.Thread(target=_keep_busy, args=(server.port, BUSY_S, started))
    thread.start()
    started.wait(5)
    try:  # wait until the server stops answering: the script runs
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                probe.ping()
                time.sleep(0.02)
            except redis.TimeoutError:
                break
    finally:
        probe.close()
    return thread


def _add_with_retries(seen: SeenSet, urls: list[str]) -> tuple[list[bool], int]:
    """add_many, retried on SeenSetUnavailableError (docs/reliability.md); answers, failures."""
    failures = 0
    while True:
        try:
            return seen.add_many(urls), failures
        except SeenSetUnavailableError:
            failures += 1
            assert failures < 100
            time.sleep(0.05)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_retried_add_gets_the_answers_of_the_add_that_timed_out(
    server: PrivateRedis, kind: str
) -> None:
    """200 URLs added while the server is busy: the retry answers all 200 new, then seen."""
    url = f"{server.url}?{KINDS[kind]}&key=cw-timeout&timeout={TIMEOUT_S}"
    seen = open_seen_set(url)
    urls = [f"https://example.com/page/{i}" for i in range(200)]
    try:
        assert seen.add_many(urls[:1]) == [True]  # connected and scripts loaded
        busy = _busy(server)
        answers, failures = _add_with_retries(seen, urls)
        busy.join(timeout=30)
        assert failures >= 1, "the add did not time out: the test proves nothing"
        assert answers == [False] + [True] * 199
        assert seen.add_many(urls) == [False] * 200  # a repeat after success is not a retry
        assert seen.add("https://example.com/page/0") is False
    finally:
        seen.close()


@pytest.mark.parametrize("kind", ["set", "bloom"])
def test_a_retry_of_part_of_the_batch_gets_its_answers(server: PrivateRedis, kind: str) -> None:
    """Retrying URL by URL (a dupefilter's retry) still reports each lost add new, once."""
    url = f"{server.url}?{KINDS[kind]}&key=cw-timeout-part&timeout={TIMEOUT_S}"
    seen = open_seen_set(url)
    urls = [f"https://example.com/part/{i}" for i in range(50)]
    try:
        seen.add("https://example.com/warm-up")
        busy = _busy(server)
        with pytest.raises(SeenSetUnavailableError):
            seen.add_many(urls)
        busy.join(timeout=30)
        first = [_add_with_retries(seen, [u])[0][0] for u in urls[:25]]
        rest, _ = _add_with_retries(seen, urls[25:] + urls[:5])
        assert first == [True] * 25
        assert rest == [True] * 25 + [False] * 5
    finally:
        seen.close()


def test_two_workers_racing_a_timed_out_add_each_url_new_once(server: PrivateRedis) -> None:
    """A second client adding the same URLs meanwhile: each URL is new for exactly one of them."""
    url = f"{server.url}?kind=set&key=cw-timeout-race&timeout={TIMEOUT_S}"
    slow, other = open_seen_set(url), open_seen_set(url.replace(f"{TIMEOUT_S}", "10"))
    urls = [f"https://example.com/race/{i}" for i in range(100)]
    try:
        slow.add("https://example.com/warm-up")
        other.add("https://example.com/warm-up-2")
        busy = _busy(server)
        with pytest.raises(SeenSetUnavailableError):
            slow.add_many(urls)
        theirs = other.add_many(urls[::2])  # queued behind the slow one's lost add
        busy.join(timeout=30)
        mine, _ = _add_with_retries(slow, urls)
        told = [int(m) + (int(theirs[i // 2]) if i % 2 == 0 else 0) for i, m in enumerate(mine)]
        assert told == [1] * 100
    finally:
        slow.close()
        other.close()
