"""The Redis seen-sets on a real 3-node Redis Cluster of this machine's ``redis-server``."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from changewatch.errors import SeenSetUnavailableError
from changewatch.seen import open_seen_set
from changewatch.seen.redis import RedisBloomSeenSet, RedisSeenSet

from ..redis_fixtures import (
    assert_bloom_race,
    assert_exact_race,
    delete_keys,
    run_ageing_race,
    run_race,
    skip_or_fail,
    unique_key,
)

NODES = 3
START_TIMEOUT_S = 20


@dataclass
class Cluster:
    """A running local cluster: its node ports and a client on it."""

    ports: list[int]
    client: RedisCluster

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.ports[0]}"


def _free_ports(count: int) -> list[int]:
    """Loopback ports that are free, and so are their cluster-bus ports (port + 10000)."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port + 10000 > 65535 or port in ports:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


def _wait(condition: object, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if condition():  # type: ignore[operator]
                return
        except redis.RedisError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A 3-node Redis Cluster (no replicas) on free loopback ports; torn down afterwards."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if not server or not cli:
        skip_or_fail("redis-server and redis-cli are needed for the cluster tests")
    assert server
    assert cli
    workdir: Path = tmp_path_factory.mktemp("redis-cluster")
    ports = _free_ports(NODES)
    procs: list[subprocess.Popen[bytes]] = []
    client: RedisCluster | None = None
    try:
        for port in ports:
            procs.append(
                subprocess.Popen(
                    [server, "--port", str(port), "--cluster-enabled", "yes",
                     "--cluster-config-file", str(workdir / f"nodes-{port}.conf"),
                     "--dir", str(workdir), "--save", "", "--appendonly", "no",
                     "--bind", "127.0.0.1", "--daemonize", "no"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )  # fmt: skip
        for port in ports:
            node = redis.Redis(port=port, socket_connect_timeout=1)
            _wait(node.ping, f"redis-server on port {port}")
            node.close()
        subprocess.run(
            [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=START_TIMEOUT_S,
        )  # fmt: skip
        for port in ports:
            node = redis.Redis(port=port, socket_connect_timeout=1)
            _wait(lambda n=node: n.cluster("info")["cluster_state"] == "ok", "cluster_state:ok")
            node.close()
        client = RedisCluster(host="127.0.0.1", port=ports[0])
        yield Cluster(ports, client)
    finally:
        if client is not None:
            client.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def key(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A key prefix of this test only, deleted from every node afterwards."""
    prefix = unique_key(request.node.name)
    yield prefix
    for port in cluster.ports:
        node = redis.Redis(port=port)
        delete_keys(node, prefix)
        node.close()


def test_bloom_blocks_spread_over_every_node(cluster: Cluster, key: str) -> None:
    """The Bloom filter's block keys sit on slots of all three nodes, and each holds data."""
    seen = open_seen_set(f"{cluster.url}?kind=bloom&capacity=60000&error_rate=0.01&key={key}")
    try:
        assert isinstance(seen, RedisBloomSeenSet)
        assert seen.add_many([f"https://example.com/{i}" for i in range(2000)]).count(True) > 1990
        slots = [cluster.client.cluster_keyslot(k) for k in seen.block_keys]
        assert len(set(slots)) == len(seen.block_keys)
        owners = {cluster.client.get_node_from_key(k).port for k in seen.block_keys}  # type: ignore[no-untyped-call]
        assert owners == set(cluster.ports)
        holders = set()
        for port in cluster.ports:  # ask each node directly which blocks it stores
            node = redis.Redis(port=port)
            stored = [s for s in slots if node.cluster("countkeysinslot", s)]
            holders |= {port} if stored else set()
            node.close()
        assert holders == set(cluster.ports)
        stats = seen.stats()
        assert stats["items"] >= 1990
        assert stats["memory_usage"] > 0
        assert "https://example.com/7" in seen
    finally:
        seen.close()


def test_exact_set_works_through_the_cluster(cluster: Cluster, key: str) -> None:
    """kind=set through redis+cluster:// answers add, add_many, contains and stats."""
    seen = open_seen_set(f"{cluster.url}?kind=set&key={key}&ttl=60")
    try:
        assert isinstance(seen, RedisSeenSet)
        assert seen.add("https://example.com/a") is True
        assert seen.add_many(["https://example.com/a", "https://example.com/b"]) == [False, True]
        assert "https://example.com/b" in seen
        assert seen.stats()["items"] == 2
        assert 0 < cluster.client.ttl(key) <= 60
    finally:
        seen.close()


def test_unreachable_cluster_is_unavailable() -> None:
    """A redis+cluster:// URL on a closed port raises SeenSetUnavailableError at once."""
    started = time.monotonic()
    with pytest.raises(SeenSetUnavailableError, match=r"127\.0\.0\.1:1\b"):
        open_seen_set("redis+cluster://:pw-x9@127.0.0.1:1?timeout=0.5")
    assert time.monotonic() - started < 3


@pytest.mark.slow
def test_race_through_the_cluster(cluster: Cluster, key: str) -> None:
    """4 processes, 50k-of-60k samples each, via the cluster: exact once; Bloom never twice."""
    exact = f"{cluster.url}?kind=set&key={key}:set"
    news, added = run_race(exact, workers=4, total=60_000, sample=50_000, batch=5_000)
    assert_exact_race(news, added)
    bloom = f"{cluster.url}?kind=bloom&capacity=60000&error_rate=0.01&key={key}:bloom"
    news, added = run_race(bloom, workers=4, total=60_000, sample=50_000, batch=5_000)
    assert_bloom_race(news, added, 0.01)


@pytest.mark.parametrize("kind", ["set", "bloom"])
def test_ageing_and_forgetting_through_the_cluster(cluster: Cluster, key: str, kind: str) -> None:
    """Ageing (a driven clock) and forget on the cluster: every key of a group in one slot."""
    now = [100_000.0]
    query = "kind=set" if kind == "set" else "kind=bloom&capacity=5000&error_rate=1e-6"
    url = f"{cluster.url}?{query}&key={key}&max_age=30&window=10"
    seen = open_seen_set(url, clock=lambda: now[0])
    try:
        urls = [f"https://example.com/{i}" for i in range(300)]
        assert seen.add_many(urls) == [True] * 300
        now[0] += 39.9
        assert seen.add_many(urls[:10]) == [False] * 10
        if kind == "set":
            assert seen.forget(urls[0]) is True  # type: ignore[attr-defined]
            assert seen.add(urls[0]) is True
        now[0] += 0.1
        assert seen.add_many(urls[1:11]) == [True] * 10
        expected = [1, 10] if kind == "set" else [10]  # the re-add of urls[0] is in 10,003
        assert [g["entries"] for g in seen.stats()["generations"]] == expected
    finally:
        seen.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["set", "bloom"])
def test_race_across_a_generation_boundary_through_the_cluster(
    cluster: Cluster, key: str, kind: str
) -> None:
    """4 processes on an ageing cluster seen-set while a generation starts: none new twice."""
    query = "kind=set" if kind == "set" else "kind=bloom&capacity=60000&error_rate=0.01"
    url = f"{cluster.url}?{query}&key={key}:{kind}&max_age=30&window=10"
    news, added, spans = run_ageing_race(
        url, window_s=10, workers=4, total=60_000, sample=45_000, batch=3_000
    )
    assert all(last == first + 1 for first, last in spans), spans
    if kind == "set":
        assert_exact_race(news, added)
    else:
        assert_bloom_race(news, added, 0.01)
