"""The Redis seen-sets (kind=set and kind=bloom) against the real Redis server of this machine."""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable, Iterator

import pytest
import redis
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from changewatch.bloom import bloom_size, positions
from changewatch.errors import ConfigError, SeenSetError, SeenSetUnavailableError
from changewatch.seen import SeenSet, open_seen_set
from changewatch.seen.redis import (
    BlockLayout,
    RedisBloomSeenSet,
    RedisSeenSet,
    block_positions,
    block_tags,
    bloom_block_layout,
)
from changewatch.seen.redis.layout import TARGET_BLOCK_BITS
from changewatch.urls import url_digest

from ..redis_fixtures import (
    assert_bloom_race,
    assert_exact_race,
    delete_keys,
    redis_test_url,
    run_ageing_race,
    run_race,
    unique_key,
    with_query,
)

STATS_KEYS = {"kind", "capacity", "items", "bits", "bytes", "error_rate", "estimated_error_rate"}
KINDS = {
    "set": "kind=set",
    "bloom": "kind=bloom&capacity=100000&error_rate=0.001",
}
OpenSeen = Callable[[str], SeenSet]


def _digest(n: int) -> bytes:
    return hashlib.blake2b(n.to_bytes(8, "big"), digest_size=16).digest()


def _digests(start: int, stop: int) -> list[bytes]:
    return [_digest(n) for n in range(start, stop)]


@pytest.fixture(scope="module")
def redis_url() -> str:
    """The test server's URL (db 15 by default); skips locally, fails under CI, without it."""
    return redis_test_url()


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    """A plain redis-py client on the test database, to look at the keys."""
    plain = redis.Redis.from_url(redis_url)
    yield plain
    plain.close()


@pytest.fixture
def key(client: redis.Redis, request: pytest.FixtureRequest) -> Iterator[str]:
    """A key prefix of this test only; every key under it is deleted afterwards."""
    prefix = unique_key(request.node.name)
    yield prefix
    delete_keys(client, prefix)


@pytest.fixture
def open_seen(redis_url: str, key: str) -> Iterator[OpenSeen]:
    """Factory: ``open_seen("kind=…&…")`` → a seen-set under the test's key, closed after."""
    opened: list[SeenSet] = []

    def make(query: str) -> SeenSet:
        seen = open_seen_set(with_query(redis_url, f"key={key}&{query}"))
        opened.append(seen)
        return seen

    yield make
    for seen in opened:
        seen.close()


@pytest.fixture(params=sorted(KINDS))
def seen(request: pytest.FixtureRequest, open_seen: OpenSeen) -> SeenSet:
    """A fresh Redis seen-set of each kind."""
    return open_seen(KINDS[request.param])


# --- the contract, on both kinds --------------------------------------------------------


def test_kinds_build_their_classes(open_seen: OpenSeen) -> None:
    """kind=set builds a RedisSeenSet, kind=bloom a RedisBloomSeenSet; both are SeenSets."""
    exact, bloom = open_seen(KINDS["set"]), open_seen(KINDS["bloom"])
    assert type(exact) is RedisSeenSet
    assert type(bloom) is RedisBloomSeenSet
    assert isinstance(exact, SeenSet)
    assert isinstance(bloom, SeenSet)


def test_add_true_then_false(seen: SeenSet) -> None:
    """add answers True the first time a digest is seen, False afterwards."""
    digest = url_digest("http://example.com/")
    assert digest not in seen
    assert seen.add(digest) is True
    assert seen.add(digest) is False
    assert digest in seen
    assert seen.add(_digest(2)) is True


def test_str_urls_are_canonicalised(seen: SeenSet) -> None:
    """A str URL is canonicalised first: http://A.com/x#f and http://a.com/x are one URL."""
    assert seen.add("http://A.com/x#f") is True
    assert seen.add("http://a.com/x") is False
    assert "HTTP://a.com:80/x" in seen
    assert url_digest("http://a.com/x") in seen
    assert seen.add_many(["http://a.com/y", "http://A.COM/y#top"]) == [True, False]


def test_add_many_in_order_with_repeats(seen: SeenSet) -> None:
    """add_many answers per digest, in order; a repeat inside the batch is False."""
    seen.add(_digest(1))
    batch = [_digest(0), _digest(1), _digest(2), _digest(0), _digest(3), _digest(2)]
    assert seen.add_many(batch) == [True, False, True, False, True, False]
    assert seen.add_many([]) == []
    assert seen.add_many(iter([_digest(3), _digest(4)])) == [False, True]


def test_add_many_across_chunks_and_pipelines(seen: SeenSet) -> None:
    """A 120k batch (many script calls, three pipelines) keeps order; repeats are new once."""
    fresh = _digests(1000, 61000)
    batch = fresh + fresh  # every digest twice, the repeats in later chunks and pipelines
    answers = seen.add_many(batch)
    assert answers == [True] * len(fresh) + [False] * len(fresh)
    assert seen.add_many(fresh[::1000]) == [False] * 60


def test_contains(seen: SeenSet) -> None:
    """__contains__ reports the added digests, and False for other objects."""
    seen.add_many(_digests(0, 3))
    assert all(d in seen for d in _digests(0, 3))
    assert _digest(3) not in seen
    assert b"short" not in seen
    assert 42 not in seen
    assert None not in seen


def test_contains_many(seen: SeenSet) -> None:
    """contains_many answers membership for a batch, in order, without adding."""
    seen.add_many(_digests(0, 100))
    checked = _digests(50, 150)
    assert seen.contains_many(checked) == [True] * 50 + [False] * 50  # type: ignore[attr-defined]
    assert seen.add_many(_digests(100, 101)) == [True]


def test_bad_items_are_refused_before_anything_is_added(seen: SeenSet) -> None:
    """A batch with one bad item raises TypeError and adds none of the others."""
    with pytest.raises(TypeError):
        seen.add_many([_digest(0), b"not sixteen"])
    assert _digest(0) not in seen


def test_stats(seen: SeenSet) -> None:
    """stats() has every contract key; items counts the adds; the kind names the backend."""
    seen.add_many(_digests(0, 500))
    stats = seen.stats()
    assert stats.keys() >= STATS_KEYS
    assert stats["items"] == 500
    assert stats["bytes"] > 0
    if stats["kind"] == "redis-set":
        assert (stats["capacity"], stats["bits"], stats["error_rate"]) == (None, None, 0.0)
        assert stats["estimated_error_rate"] == 0.0
    else:
        assert stats["kind"] == "redis-bloom"
        assert stats["capacity"] == 100_000
        assert stats["bits"] >= bloom_size(100_000, 0.001)[0]
        assert stats["error_rate"] == 0.001
        assert 0 < stats["estimated_error_rate"] < 1e-9


def test_two_clients_share_one_seen_set(seen: SeenSet, open_seen: OpenSeen) -> None:
    """A second client on the same key sees the first one's URLs, and the items count adds up."""
    query = KINDS["set" if seen.stats()["kind"] == "redis-set" else "bloom"]
    other = open_seen(query)
    assert seen.add_many(_digests(0, 10)) == [True] * 10
    assert other.add_many(_digests(5, 15)) == [False] * 5 + [True] * 5
    seen.stats()  # a Bloom client sends its count with its next round trip, or here
    assert other.stats()["items"] == 15
    assert seen.stats()["items"] == 15


# --- TTL ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_ttl_expires_every_key(
    kind: str, open_seen: OpenSeen, client: redis.Redis, key: str
) -> None:
    """With ttl=1 every key of the seen-set expires after a second; the URL is new again."""
    seen = open_seen(f"{KINDS[kind]}&ttl=1")
    assert seen.add_many(_digests(0, 50)) == [True] * 50
    keys = list(client.scan_iter(match=f"{key}*"))
    assert keys
    assert all(0 < client.pttl(k) <= 1000 for k in keys)
    time.sleep(1.5)
    assert list(client.scan_iter(match=f"{key}*")) == []
    assert seen.add(_digest(0)) is True
    assert all(0 < client.pttl(k) <= 1000 for k in client.scan_iter(match=f"{key}*"))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_ttl_window_starts_at_the_first_add(kind: str, open_seen: OpenSeen) -> None:
    """Later adds do not extend the TTL (EXPIRE NX): it bounds the crawl from its start."""
    seen = open_seen(f"{KINDS[kind]}&ttl=1")
    assert seen.add(_digest(0)) is True
    time.sleep(0.7)
    assert seen.add(_digest(1)) is True  # a sliding TTL would now run until t=1.7 s
    time.sleep(0.6)
    assert seen.add_many([_digest(0), _digest(1)]) == [True, True]


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("other", "named"),
    [
        ("capacity=2000&error_rate=0.01", "capacity=1000"),
        ("capacity=1000&error_rate=0.001", "error_rate=0.01"),
        ("capacity=1000&error_rate=0.01&blocks=17", "blocks=16"),
    ],
)
def test_bloom_parameter_mismatch_is_refused(open_seen: OpenSeen, other: str, named: str) -> None:
    """Opening a Bloom key with other parameters raises SeenSetError naming the stored ones."""
    open_seen("kind=bloom&capacity=1000&error_rate=0.01").add(_digest(0))
    with pytest.raises(SeenSetError, match=named):
        open_seen(f"kind=bloom&{other}")
    assert _digest(0) in open_seen("kind=bloom&capacity=1000&error_rate=0.01")


def test_set_and_bloom_cannot_share_a_key(open_seen: OpenSeen, redis_url: str) -> None:
    """A kind=bloom open on a kind=set key is refused, and the other way round."""
    open_seen("kind=set").add(_digest(0))
    with pytest.raises(SeenSetError, match="cannot share its key"):
        open_seen("kind=bloom&capacity=1000")
    bloom_key = unique_key("bloom-first")
    url = with_query(redis_url, f"key={bloom_key}")
    bloom = open_seen_set(with_query(url, "kind=bloom&capacity=1000"))
    try:
        with pytest.raises(SeenSetError, match="kind=bloom seen-set"):
            open_seen_set(with_query(url, "kind=set"))
    finally:
        bloom.close()
        delete_keys(redis.Redis.from_url(redis_url), bloom_key)


def test_a_key_of_another_type_is_refused(
    open_seen: OpenSeen, client: redis.Redis, key: str
) -> None:
    """A key holding a string (not ours) is refused with SeenSetError naming its type."""
    client.set(key, b"not a set")
    with pytest.raises(SeenSetError, match="string"):
        open_seen("kind=set")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis://127.0.0.1:6379/15?kind=cuckoo", "kind='cuckoo'"),
        ("redis://127.0.0.1:6379/15?kind=bloom&capacity=0", "capacity='0'"),
        ("redis://127.0.0.1:6379/15?kind=bloom&error_rate=2", "error_rate='2'"),
        ("redis://127.0.0.1:6379/15?kind=bloom&blocks=5000", "blocks must be between"),
        ("redis://127.0.0.1:6379/15?kind=set&colour=red", "unknown option"),
        ("redis://127.0.0.1:6379/15?ttl=-1", "ttl='-1'"),
        ("redis://127.0.0.1:6379/15?ttl=soon", "ttl='soon'"),
        ("redis://127.0.0.1:6379/15?timeout=0", "timeout='0'"),
        ("redis://127.0.0.1:6379/15?kind=set&capacity=10", "only apply to kind=bloom"),
        ("redis://127.0.0.1:6379/15?key=", "must not be empty"),
        ("redis://127.0.0.1:6379/15?kind=bloom&key=a{b}", "must not contain"),
        ("redis://127.0.0.1:6379/db?kind=set", "is not a number"),
        ("redis://127.0.0.1:99999/15", "port"),
        ("redis+cluster://127.0.0.1:7000/3", "no databases"),
    ],
)
def test_bad_urls_raise_config_error(url: str, message: str) -> None:
    """A malformed redis:// URL raises ConfigError naming the problem, before connecting."""
    with pytest.raises(ConfigError, match=message):
        open_seen_set(url)


def test_config_error_hides_the_password() -> None:
    """A ConfigError quoting the URL masks its password."""
    with pytest.raises(ConfigError) as info:
        open_seen_set("redis://:s3cret-pw@127.0.0.1:6379/15?kind=nope")
    assert "s3cret-pw" not in str(info.value)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_unreachable_server_is_unavailable_quickly(kind: str) -> None:
    """Port 1 → SeenSetUnavailableError (retryable) at once, naming host:port, not the password."""
    started = time.monotonic()
    with pytest.raises(SeenSetUnavailableError) as info:
        open_seen_set(f"redis://:s3cret-pw@127.0.0.1:1/15?{KINDS[kind]}&timeout=0.5")
    assert time.monotonic() - started < 2
    assert info.value.retryable is True
    assert "127.0.0.1:1" in str(info.value)
    assert "s3cret-pw" not in str(info.value)
    assert isinstance(info.value.__cause__, redis.ConnectionError)


def test_lost_scripts_are_loaded_again(seen: SeenSet, client: redis.Redis) -> None:
    """After SCRIPT FLUSH (a restarted server) adds and lookups still work (NOSCRIPT reload)."""
    seen.add_many(_digests(0, 10))
    client.script_flush()
    assert seen.add_many(_digests(5, 15)) == [False] * 5 + [True] * 5
    assert seen.contains_many(_digests(14, 16)) == [True, False]  # type: ignore[attr-defined]


# --- the Bloom layout -----------------------------------------------------------------------


def test_block_positions_are_the_core_positions() -> None:
    """Each digest's bits in its block are bloom.positions over the block; block = h1 mod B."""
    layout = BlockLayout(blocks=16, bits_per_block=599_067, hashes=7)
    digests = [*_digests(0, 300), b"\xff" * 16, bytes(16)]
    blocks, bits = block_positions(digests, layout)
    for digest, block, row in zip(digests, blocks.tolist(), bits.tolist(), strict=True):
        assert block == int.from_bytes(digest[:8], "big") % 16
        assert row == positions(digest, layout.bits_per_block, layout.hashes)


def test_block_layout_sizes() -> None:
    """At least 16 blocks, each ≤ 64 MiB and coprime with the count; bits ≥ the optimum."""
    for capacity, rate in [(1000, 0.01), (10**6, 0.001), (10**9, 0.01), (5 * 10**9, 0.001)]:
        layout = bloom_block_layout(capacity, rate)
        bits, hashes, _ = bloom_size(capacity, rate)
        assert layout.blocks >= 16
        assert layout.bits_per_block <= TARGET_BLOCK_BITS
        assert math.gcd(layout.blocks, layout.bits_per_block) == 1
        assert bits <= layout.bits < bits + 2 * layout.blocks
        assert layout.hashes == hashes
    assert bloom_block_layout(10**9, 0.01).blocks == 18
    assert bloom_block_layout(1000, 0.01, blocks=3).blocks == 3


def test_block_tags_spread_over_the_slot_space() -> None:
    """Block b's hash tag falls in the b-th equal share of the 16384 cluster slots."""
    for blocks in (1, 3, 16, 100):
        slots = [key_slot(tag.encode()) for tag in block_tags("changewatch:seen", blocks)]
        for block, slot in enumerate(slots):
            low = block * REDIS_CLUSTER_HASH_SLOTS // blocks
            assert low <= slot < (block + 1) * REDIS_CLUSTER_HASH_SLOTS // blocks
        assert len(set(slots)) == blocks


def test_each_url_touches_exactly_one_key(open_seen: OpenSeen, client: redis.Redis) -> None:
    """Adding one URL writes one block key (and nothing else besides the meta hash)."""
    seen = open_seen("kind=bloom&capacity=10000&error_rate=0.01")
    assert isinstance(seen, RedisBloomSeenSet)
    seen.add("https://example.com/one")
    written = [k for k in seen.block_keys if client.exists(k)]
    assert len(written) == 1
    assert client.exists(seen.meta_key)


def test_bloom_has_no_false_negatives(open_seen: OpenSeen) -> None:
    """Every one of 100,000 added digests is reported present, and never new again."""
    seen = open_seen("kind=bloom&capacity=100000&error_rate=0.01")
    added = _digests(0, 100_000)
    seen.add_many(added)
    assert all(seen.contains_many(added))  # type: ignore[attr-defined]
    assert not any(seen.add_many(added[::7]))


def test_bloom_false_positive_rate_at_capacity(open_seen: OpenSeen) -> None:
    """At capacity (50,000, p=0.01) the measured rate on 100,000 new digests is p ± 15%."""
    seen = open_seen("kind=bloom&capacity=50000&error_rate=0.01")
    assert sum(seen.add_many(_digests(0, 50_000))) > 49_900
    present = seen.contains_many(_digests(10**6, 10**6 + 100_000))  # type: ignore[attr-defined]
    rate = sum(present) / 100_000
    assert 0.0085 <= rate <= 0.0115, rate
    assert 0.0085 <= seen.stats()["estimated_error_rate"] <= 0.0115


def test_overfill_is_reported_and_warned_once(
    open_seen: OpenSeen, caplog: pytest.LogCaptureFixture
) -> None:
    """Past capacity the estimated rate exceeds error_rate and one warning is logged."""
    seen = open_seen("kind=bloom&capacity=2000&error_rate=0.01")
    with caplog.at_level(logging.WARNING, logger="changewatch"):
        for start in range(0, 6000, 500):
            seen.add_many(_digests(start, start + 500))
        stats = seen.stats()
        seen.stats()
    assert stats["estimated_error_rate"] > 0.01 * 5
    warnings = [r for r in caplog.records if "overfull" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING
    assert warnings[0].name == "changewatch"


def test_at_capacity_there_is_no_warning(
    open_seen: OpenSeen, caplog: pytest.LogCaptureFixture
) -> None:
    """Filled to 90% of its capacity, the filter stays under its rate and says nothing."""
    seen = open_seen("kind=bloom&capacity=20000&error_rate=0.01")
    with caplog.at_level(logging.WARNING, logger="changewatch"):
        seen.add_many(_digests(0, 18_000))
        assert seen.stats()["estimated_error_rate"] < 0.01
    assert not [r for r in caplog.records if "overfull" in r.getMessage()]


# --- the race -------------------------------------------------------------------------------


@pytest.mark.slow
def test_race_four_processes_exact(redis_url: str, key: str) -> None:
    """4 processes add 150k-of-200k overlapping samples: each digest is new exactly once."""
    url = with_query(redis_url, f"key={key}&kind=set")
    news, added = run_race(url, workers=4, total=200_000, sample=150_000, batch=5_000)
    assert_exact_race(news, added)


@pytest.mark.slow
def test_race_four_processes_bloom(redis_url: str, key: str) -> None:
    """4 processes through one Bloom filter: no digest new twice, ≥ (1−2p) of them new once."""
    url = with_query(redis_url, f"key={key}&kind=bloom&capacity=200000&error_rate=0.01")
    news, added = run_race(url, workers=4, total=200_000, sample=150_000, batch=5_000)
    assert_bloom_race(news, added, 0.01)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["set", "bloom"])
def test_race_across_a_generation_boundary(
    redis_url: str, key: str, client: redis.Redis, kind: str
) -> None:
    """4 processes race on one ageing seen-set while a new generation starts: no URL new twice."""
    query = "kind=set" if kind == "set" else "kind=bloom&capacity=200000&error_rate=0.01"
    url = with_query(redis_url, f"key={key}&{query}&max_age=30&window=10")
    news, added, spans = run_ageing_race(
        url, window_s=10, workers=4, total=120_000, sample=90_000, batch=3_000
    )
    assert all(last == first + 1 for first, last in spans), spans  # every clock crossed it
    if kind == "set":
        assert_exact_race(news, added)
    else:
        assert_bloom_race(news, added, 0.01)
    names = [k.decode() for k in client.scan_iter(match=f"{key}*:g*", count=1000)]
    written = {n.rpartition(":g")[2] for n in names if ":r:" not in n}
    assert len(written) == 2, written  # both generations were written
