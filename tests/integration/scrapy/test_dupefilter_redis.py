"""ChangewatchDupeFilter when its Redis seen-set goes away: CHANGEWATCH_SEEN_ON_ERROR decides.

Runs a private ``redis-server`` on a free loopback port (the shared server is never stopped),
kills it mid-test, and checks both policies: ``raise`` and ``assume-new``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from scrapy import Request
from scrapy.utils.test import get_crawler

from changewatch.errors import SeenSetUnavailableError
from changewatch.scrapy import ChangewatchDupeFilter

from ..redis_fixtures import skip_or_fail

START_TIMEOUT_S = 10.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A private redis-server (no persistence) and its URL; stopped afterwards if still up."""
    server = shutil.which("redis-server")
    if not server:
        skip_or_fail("redis-server is needed to test an unreachable seen-set")
    assert server
    port = _free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        client = redis.Redis(port=port, socket_connect_timeout=1)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                client.ping()
                break
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.close()
        yield proc, f"redis://127.0.0.1:{port}/0?kind=bloom&key=cw-scrapy&timeout=1"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("policy", ["raise", "assume-new"])
def test_unreachable_redis_follows_seen_on_error(
    private_redis: tuple[subprocess.Popen[bytes], str], policy: str
) -> None:
    """raise: SeenSetUnavailableError reaches Scrapy; assume-new: scheduled, counted."""
    proc, url = private_redis
    crawler = get_crawler(
        settings_dict={"CHANGEWATCH_SEEN_URL": url, "CHANGEWATCH_SEEN_ON_ERROR": policy}
    )
    dupefilter = ChangewatchDupeFilter.from_crawler(crawler)
    assert dupefilter.request_seen(Request("http://example.com/a")) is False
    assert dupefilter.request_seen(Request("http://example.com/a")) is True
    proc.kill()
    proc.wait()
    if policy == "raise":
        with pytest.raises(SeenSetUnavailableError):
            dupefilter.request_seen(Request("http://example.com/b"))
    else:
        for _ in range(2):
            assert dupefilter.request_seen(Request("http://example.com/b")) is False
        assert crawler.stats.get_value("changewatch/dupefilter/errors") == 2
    assert crawler.stats.get_value("changewatch/dupefilter/new") == 1
    dupefilter.close("finished")
