"""The SeenSet contract on every backend (memory, file, Bloom, Redis): adds, ageing under a
driven clock, forgetting and routing; file failures; seen-set URLs."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from changewatch.errors import (
    ConfigError,
    ForgetNotSupportedError,
    InvalidURLError,
    SeenSetError,
)
from changewatch.seen import (
    FileExactSeenSet,
    MemorySeenSet,
    RoutedSeenSet,
    SeenSet,
    open_seen_set,
)
from changewatch.urls import url_digest

from ..redis_fixtures import delete_keys, redis_test_url, unique_key, with_query

STATS_KEYS = {"kind", "items", "capacity", "bytes", "error_rate", "estimated_error_rate"}
HEADER_SIZE = 56


def _digest(n: int) -> bytes:
    return hashlib.blake2b(n.to_bytes(8, "big"), digest_size=16).digest()


# --- the contract, on every backend ---------------------------------------------------------

BACKENDS: dict[str, Callable[[Path], str]] = {
    "memory": lambda tmp: "memory:",
    "file": lambda tmp: f"file:{tmp}/s.seen",
    "file-url": lambda tmp: f"file://{tmp}/u.seen?kind=exact&checkpoint=3",
    "file-bloom": lambda tmp: f"file:{tmp}/b.seen?kind=bloom&capacity=10000&error_rate=0.001",
    # capacity 64: the contract's batches grow sub-filters; 1e-9 keeps false positives out.
    "file-scalable": lambda tmp: (
        f"file:{tmp}/c.seen?kind=bloom&capacity=64&error_rate=1e-9&scalable=1"
    ),
    "redis-set": lambda tmp: "kind=set",
    "redis-bloom": lambda tmp: "kind=bloom&capacity=10000&error_rate=0.001",
}


@pytest.fixture(params=sorted(BACKENDS))
def seen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SeenSet]:
    """A fresh, empty seen-set of each backend, closed (and its Redis keys deleted) after."""
    url = BACKENDS[request.param](tmp_path)
    prefix = None
    if request.param.startswith("redis"):
        prefix = unique_key(request.node.name)
        url = with_query(redis_test_url(), f"{url}&key={prefix}")
    seen_set = open_seen_set(url)
    yield seen_set
    seen_set.close()
    if prefix is not None:
        client = redis.Redis.from_url(redis_test_url())
        try:
            delete_keys(client, prefix)
        finally:
            client.close()


def test_backend_types(tmp_path: Path) -> None:
    """memory: builds a MemorySeenSet, file: a FileExactSeenSet; both satisfy SeenSet."""
    memory = open_seen_set("memory:")
    file_set = open_seen_set(f"file:{tmp_path}/s.seen")
    try:
        assert type(memory) is MemorySeenSet
        assert type(file_set) is FileExactSeenSet
        assert isinstance(memory, SeenSet)
        assert isinstance(file_set, SeenSet)
    finally:
        file_set.close()


def test_add_true_then_false(seen: SeenSet) -> None:
    """add answers True the first time a digest is seen, False afterwards."""
    digest = url_digest("http://example.com/")
    assert digest not in seen
    assert seen.add(digest) is True
    assert seen.add(digest) is False
    assert seen.add(url_digest("HTTP://EXAMPLE.COM:80/#x")) is False
    assert digest in seen
    assert seen.add(_digest(2)) is True


def test_add_many_in_order_with_repeats(seen: SeenSet) -> None:
    """add_many answers per digest, in order; a repeat inside the batch is False."""
    seen.add(_digest(1))
    batch = [_digest(0), _digest(1), _digest(2), _digest(0), _digest(3), _digest(2)]
    assert seen.add_many(batch) == [True, False, True, False, True, False]
    assert seen.add_many([]) == []
    assert seen.add_many(iter([_digest(3), _digest(4)])) == [False, True]
    assert all(_digest(n) in seen for n in range(5))
    assert _digest(5) not in seen


def test_contains(seen: SeenSet) -> None:
    """__contains__ reports exactly the added digests, and False for other objects."""
    added = [_digest(n) for n in range(0, 100, 2)]
    seen.add_many(added)
    assert all(digest in seen for digest in added)
    assert not any(_digest(n) in seen for n in range(1, 100, 2))
    assert "http://example.com/never-added" not in seen
    assert None not in seen


def test_stats(seen: SeenSet) -> None:
    """stats has the common keys; items counts distinct digests; exact sets have no error."""
    stats = seen.stats()
    assert set(stats) >= STATS_KEYS
    assert stats["items"] == 0
    seen.add_many([_digest(n % 7) for n in range(20)])
    stats = seen.stats()
    assert stats["items"] == 7
    assert stats["bytes"] > 0
    if stats["kind"] in {"memory-exact", "file-exact", "redis-set"}:
        assert stats["capacity"] is None
        assert stats["error_rate"] == 0.0
        assert stats["estimated_error_rate"] == 0.0
    else:
        assert stats["kind"] in {"file-bloom", "file-bloom-scalable", "redis-bloom"}
        assert stats["bits"] > 0
        assert 0.0 < stats["estimated_error_rate"] < stats["error_rate"]


@pytest.mark.parametrize(
    "bad",
    [b"", b"x" * 15, b"x" * 17, b"x" * 32, bytearray(16), None, 16],
)
def test_non_digest_refused(seen: SeenSet, bad: object) -> None:
    """Anything but a str URL or 16 bytes raises TypeError, and changes nothing."""
    with pytest.raises(TypeError, match="16-byte"):
        seen.add(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="16-byte"):
        seen.add_many([_digest(1), bad, _digest(2)])  # type: ignore[list-item]
    assert _digest(1) not in seen
    assert seen.stats()["items"] == 0


def test_urls_are_canonicalised_and_bad_urls_refused(seen: SeenSet) -> None:
    """A str is a URL: canonical twins are one entry; an invalid URL adds nothing at all."""
    assert seen.add("http://Example.com:80/a?utm_source=x#top") is True
    assert seen.add("http://example.com/a") is False
    assert url_digest("http://example.com/a") in seen
    assert "HTTP://EXAMPLE.COM/a" in seen
    with pytest.raises(InvalidURLError):
        seen.add_many(["http://example.com/b", "not a url", "http://example.com/c"])
    assert "http://example.com/b" not in seen
    assert seen.stats()["items"] == 1


def test_concurrent_adds_answer_true_once(seen: SeenSet) -> None:
    """With threads racing on the same digests, each digest is reported new exactly once."""
    digests = [_digest(n) for n in range(500)]
    answers: list[list[bool]] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        order = digests[:]
        random.Random(seed).shuffle(order)
        got = [seen.add(d) for d in order[:250]] + seen.add_many(order[250:])
        with lock:
            answers.append([d for d, new in zip(order, got, strict=True) if new])

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    new = [d for per_thread in answers for d in per_thread]
    assert sorted(new) == sorted(digests)
    assert seen.stats()["items"] == 500


# --- the file backend -----------------------------------------------------------------------


def test_file_persists_across_close_and_reopen(tmp_path: Path) -> None:
    """Digests added before close() are there after reopening; new ones are not."""
    url = f"file:{tmp_path}/s.seen"
    first = open_seen_set(url)
    assert first.add_many([_digest(n) for n in range(100)]) == [True] * 100
    first.close()
    first.close()  # a second close does nothing
    second = open_seen_set(url)
    try:
        assert second.stats()["items"] == 100
        assert all(_digest(n) in second for n in range(100))
        assert second.add(_digest(5)) is False
        assert second.add(_digest(100)) is True
    finally:
        second.close()


def test_file_closed_set_refuses_adds(tmp_path: Path) -> None:
    """After close(), add and add_many raise SeenSetError rather than losing digests."""
    seen = open_seen_set(f"file:{tmp_path}/s.seen")
    seen.close()
    with pytest.raises(SeenSetError, match="closed"):
        seen.add(_digest(1))
    with pytest.raises(SeenSetError, match="closed"):
        seen.add_many([_digest(1)])


def test_file_empty_set_close_writes_a_readable_file(tmp_path: Path) -> None:
    """Closing an untouched new set writes a valid empty file (not a missing or empty one)."""
    path = tmp_path / "s.seen"
    open_seen_set(f"file:{path}").close()
    assert path.stat().st_size == HEADER_SIZE
    reopened = open_seen_set(f"file:{path}")
    assert reopened.stats()["items"] == 0
    reopened.close()


def test_file_checkpoint_writes_before_close(tmp_path: Path) -> None:
    """With checkpoint=2, the file holds the digests after every 2 additions, before close."""
    path = tmp_path / "s.seen"
    seen = open_seen_set(f"file:{path}?checkpoint=2")
    try:
        seen.add(_digest(1))
        assert not path.exists()
        seen.add(_digest(1))  # a repeat is not an addition
        assert not path.exists()
        seen.add(_digest(2))
        assert path.stat().st_size == HEADER_SIZE + 2 * 16
        seen.add_many([_digest(3), _digest(4), _digest(5)])
        assert path.stat().st_size == HEADER_SIZE + 5 * 16
        assert seen.stats()["unsaved"] == 0
        snapshot = path.read_bytes()
    finally:
        seen.close()
    assert path.read_bytes() == snapshot


def test_file_time_checkpoint_saves_while_adding(tmp_path: Path) -> None:
    """checkpoint_s: an addition after the interval saves the file before close()."""
    path = tmp_path / "t.seen"
    seen = open_seen_set(f"file:{path}?checkpoint_s=0.2")
    try:
        seen.add(_digest(1))
        assert not path.exists()
        time.sleep(0.3)
        seen.add(_digest(2))
        assert path.exists()
        other = _copy_and_read(tmp_path, path)
        assert {_digest(1), _digest(2)} <= other
    finally:
        seen.close()


def _copy_and_read(tmp_path: Path, path: Path) -> set[bytes]:
    copy = tmp_path / "copy.seen"
    copy.write_bytes(path.read_bytes())
    reader = open_seen_set(f"file:{copy}")
    try:
        return {d for d in (_digest(n) for n in range(5)) if d in reader}
    finally:
        reader.close()


def test_file_batch_with_bad_digest_does_not_desync_file(tmp_path: Path) -> None:
    """A batch refused for a bad digest adds nothing, so memory and file stay in step."""
    path = tmp_path / "s.seen"
    seen = open_seen_set(f"file:{path}?checkpoint=1")
    seen.add(_digest(1))
    with pytest.raises(TypeError):
        seen.add_many([_digest(2), b"short"])
    assert _digest(2) not in seen
    seen.close()
    reopened = open_seen_set(f"file:{path}")
    try:
        assert reopened.add(_digest(2)) is True
    finally:
        reopened.close()


_OPEN_IN_CHILD = """
import sys
from changewatch.errors import SeenSetError
from changewatch.seen import open_seen_set
try:
    open_seen_set(sys.argv[1]).close()
except SeenSetError as exc:
    print("SeenSetError:", exc)
    sys.exit(3)
print("opened")
"""


def _open_in_child(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _OPEN_IN_CHILD, url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_file_second_process_refused_until_closed(tmp_path: Path) -> None:
    """While one process holds the file, another process's open raises SeenSetError."""
    url = f"file:{tmp_path}/s.seen"
    seen = open_seen_set(url)
    try:
        child = _open_in_child(url)
        assert child.returncode == 3, child.stderr
        assert "already open" in child.stdout
    finally:
        seen.close()
    child = _open_in_child(url)
    assert child.returncode == 0, child.stdout + child.stderr
    assert child.stdout.strip() == "opened"


def test_file_second_open_in_same_process_refused(tmp_path: Path) -> None:
    """flock is per open file description: a second open in the same process is refused too."""
    url = f"file:{tmp_path}/s.seen"
    seen = open_seen_set(url)
    try:
        with pytest.raises(SeenSetError, match="already open"):
            open_seen_set(url)
        with pytest.raises(SeenSetError, match="already open"):
            FileExactSeenSet(tmp_path / "s.seen")
    finally:
        seen.close()
    open_seen_set(url).close()


def _valid_file(tmp_path: Path, count: int = 3) -> Path:
    path = tmp_path / "s.seen"
    seen = open_seen_set(f"file:{path}")
    seen.add_many([_digest(n) for n in range(count)])
    seen.close()
    return path


def _flip(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x01]) + data[offset + 1 :]


CORRUPTIONS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "empty": (lambda data: b"", "empty"),
    "truncated-body": (lambda data: data[:-5], "truncated"),
    "truncated-one-digest": (lambda data: data[:-16], "truncated"),
    "truncated-header": (lambda data: data[:20], "truncated"),
    "trailing-bytes": (lambda data: data + b"\0", "trailing"),
    "flipped-body-byte": (lambda data: _flip(data, HEADER_SIZE + 7), "checksum"),
    "flipped-checksum-byte": (lambda data: _flip(data, 30), "checksum"),
    "random-bytes": (lambda data: random.Random(7).randbytes(300), "not a changewatch"),
    "short-random-bytes": (lambda data: b"\x89PNG\r\n", "not a changewatch seen-set"),
    "text-file": (lambda data: b"http://example.com/\n" * 10, "not a changewatch"),
    "wrong-version": (lambda data: data[:8] + b"\x00\x02" + data[10:], "version 2"),
    "wrong-kind": (lambda data: data[:10] + b"\x02" + data[11:], "kind 2"),
    "count-too-big": (
        lambda data: data[:16] + (4).to_bytes(8, "big") + data[24:],
        "truncated",
    ),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_file_damage_refused_never_read_as_empty(tmp_path: Path, name: str) -> None:
    """A damaged or foreign file raises SeenSetError naming the problem and the path."""
    damage, expected = CORRUPTIONS[name]
    path = _valid_file(tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(SeenSetError) as info:
        open_seen_set(f"file:{path}")
    assert expected in str(info.value)
    assert str(path) in str(info.value)
    # The failed open released its lock: a repaired file opens again.
    path.unlink()
    open_seen_set(f"file:{path}").close()


def test_file_unreadable_path_is_seen_set_error(tmp_path: Path) -> None:
    """A path that is a directory raises SeenSetError, not a bare OSError."""
    path = tmp_path / "dir.seen"
    path.mkdir()
    with pytest.raises(SeenSetError, match="cannot read"):
        open_seen_set(f"file:{path}")


# --- seen-set URLs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "no scheme"),
        ("memory", "no scheme"),
        ("redis-ish:", "unknown scheme"),
        ("file:", "names no file"),
        ("file://", "names no file"),
        ("file:?checkpoint=2", "names no file"),
        ("memory:?kind=cuckoo", "kind='cuckoo' is not one of exact, bloom"),
        ("memory:?x=1", "unknown option"),
        ("file:x?bogus=1", "unknown option(s) bogus"),
        ("file:x?checkpoint=abc", "checkpoint='abc' is not a whole number"),
        ("file:x?checkpoint=0", "checkpoint='0' must be a whole number of at least 1"),
        ("file:x?kind=cuckoo", "kind='cuckoo' is not one of exact, bloom"),
        ("file:x?kind=bloom&capacity=0", "capacity='0' must be a whole number"),
        ("file:x?kind=bloom&capacity=1.5", "capacity='1.5' is not a whole number"),
        ("file:x?kind=bloom&error_rate=0", "error_rate='0' must be between 0 and 1"),
        ("file:x?kind=bloom&error_rate=1.5", "error_rate='1.5' must be between 0 and 1"),
        ("file:x?kind=bloom&error_rate=abc", "error_rate='abc' is not a number"),
        ("file:x?kind=bloom&scalable=maybe", "scalable='maybe' is not a boolean"),
        ("file:x?kind=exact&kind=bloom", "option 'kind' given twice"),
    ],
)
def test_bad_seen_set_urls_raise_config_error(
    url: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Malformed seen-set URLs raise ConfigError naming the problem and create no file."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        open_seen_set(url)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)
    assert list(tmp_path.iterdir()) == []


def test_non_str_seen_set_url_is_config_error() -> None:
    """A non-str seen-set URL raises ConfigError."""
    with pytest.raises(ConfigError):
        open_seen_set(None)  # type: ignore[arg-type]


# --- ageing, on every backend (a driven clock) ------------------------------------------------

WINDOW_S = 10.0
MAX_AGE_S = 30.0
AGEING = f"max_age={MAX_AGE_S:g}&window={WINDOW_S:g}"
T0 = 100_000.0  # the start of generation 10,000

AGEING_BACKENDS: dict[str, Callable[[Path], str]] = {
    "memory": lambda tmp: f"memory:?{AGEING}",
    "memory-bloom": lambda tmp: f"memory:?kind=bloom&capacity=5000&error_rate=1e-6&{AGEING}",
    "file": lambda tmp: f"file:{tmp}/a.seen?{AGEING}",
    "file-bloom": lambda tmp: (
        f"file:{tmp}/ab.seen?kind=bloom&capacity=5000&error_rate=1e-6&{AGEING}"
    ),
    "redis-set": lambda tmp: f"kind=set&{AGEING}",
    "redis-bloom": lambda tmp: f"kind=bloom&capacity=5000&error_rate=1e-6&{AGEING}",
}
EXACT = {"memory", "file", "redis-set"}


class DrivenClock:
    """A clock the test moves: ``clock()`` is now, ``clock.at(t)`` sets it."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def at(self, now: float) -> DrivenClock:
        self.now = now
        return self


@pytest.fixture
def clock() -> DrivenClock:
    """A driven clock at the start of a generation."""
    return DrivenClock()


@pytest.fixture
def open_url(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., SeenSet]]:
    """Factory: ``open_url(url_or_query, clock)`` → a seen-set (Redis: a fresh key), closed."""
    opened: list[SeenSet] = []
    prefixes: list[str] = []

    def make(
        url: str, clock: DrivenClock | None = None, *, redis_key: str | None = None
    ) -> SeenSet:
        if url.startswith("kind="):
            prefix = redis_key or unique_key(request.node.name)
            prefixes.append(prefix)
            url = with_query(redis_test_url(), f"{url}&key={prefix}")
        seen = open_seen_set(url, clock=clock)
        opened.append(seen)
        return seen

    yield make
    for seen in opened:
        seen.close()
    if prefixes:
        client = redis.Redis.from_url(redis_test_url())
        try:
            for prefix in prefixes:
                delete_keys(client, prefix)
        finally:
            client.close()


@pytest.fixture(params=sorted(AGEING_BACKENDS))
def ageing_name(request: pytest.FixtureRequest) -> str:
    """The name of each ageing backend."""
    return str(request.param)


def test_ageing_forgets_between_max_age_and_max_age_plus_window(
    ageing_name: str, tmp_path: Path, open_url: Callable[..., SeenSet], clock: DrivenClock
) -> None:
    """An entry is seen up to max_age after its add, and new again by max_age + window."""
    seen = open_url(AGEING_BACKENDS[ageing_name](tmp_path), clock)
    first, last = "https://example.com/first", "https://example.com/last"
    assert seen.add(first) is True  # at the start of its window: forgotten after 40 s
    clock.at(T0 + WINDOW_S - 0.01)
    assert seen.add(last) is True  # at its end: forgotten after 30.01 s
    for now in (T0 + 5, T0 + MAX_AGE_S, T0 + MAX_AGE_S + WINDOW_S - 0.01):
        clock.at(now)
        assert first in seen
        assert last in seen
        assert seen.add_many([first, last]) == [False, False]  # a re-add does not extend life
    clock.at(T0 + MAX_AGE_S + WINDOW_S)
    assert first not in seen
    assert last not in seen
    assert seen.add_many([first, last, first]) == [True, True, False]
    assert seen.stats()["items"] == 2


def test_ageing_stats_list_each_live_generation(
    ageing_name: str, tmp_path: Path, open_url: Callable[..., SeenSet], clock: DrivenClock
) -> None:
    """stats() lists the live generations oldest first: age, entries, fill and error rate."""
    seen = open_url(AGEING_BACKENDS[ageing_name](tmp_path), clock)
    seen.add_many([f"https://example.com/a{i}" for i in range(30)])
    clock.at(T0 + 2 * WINDOW_S + 1)
    seen.add_many([f"https://example.com/b{i}" for i in range(20)])
    stats = seen.stats()
    assert (stats["max_age_s"], stats["window_s"], stats["live_generations"]) == (30, 10, 4)
    rows = stats["generations"]
    assert [(r["generation"], r["entries"]) for r in rows] == [(10_000, 30), (10_002, 20)]
    assert [r["age_s"] for r in rows] == [21.0, 1.0]
    assert [r["expires_in_s"] for r in rows] == [19.0, 39.0]
    assert stats["items"] == 50
    for row in rows:
        if ageing_name in EXACT:
            assert (row["fill"], row["estimated_error_rate"]) == (None, 0.0)
        else:
            assert 0 < row["fill"] < 0.05
            assert 0 < row["estimated_error_rate"] < 1e-6
    clock.at(T0 + 4 * WINDOW_S)  # the first generation is gone
    assert [r["generation"] for r in seen.stats()["generations"]] == [10_002]


def test_ageing_never_goes_back_a_generation(
    ageing_name: str, tmp_path: Path, open_url: Callable[..., SeenSet], clock: DrivenClock
) -> None:
    """A clock that steps back keeps reading the newest generation written (no URL new twice)."""
    seen = open_url(AGEING_BACKENDS[ageing_name](tmp_path), clock)
    clock.at(T0 + 3 * WINDOW_S)
    assert seen.add("https://example.com/late") is True
    clock.at(T0 + 2 * WINDOW_S)  # one window back
    assert seen.add("https://example.com/late") is False
    assert "https://example.com/late" in seen


@pytest.mark.parametrize("name", ["file", "file-bloom"])
def test_ageing_file_keeps_its_generations_across_reopen(
    name: str, tmp_path: Path, open_url: Callable[..., SeenSet], clock: DrivenClock
) -> None:
    """An ageing file saves every generation; reopened later, the expired ones are gone."""
    url = AGEING_BACKENDS[name](tmp_path)
    seen = open_url(url, clock)
    seen.add("https://example.com/old")
    clock.at(T0 + 2 * WINDOW_S)
    seen.add("https://example.com/new")
    seen.close()
    reopened = open_url(url, clock.at(T0 + 39))
    assert "https://example.com/old" in reopened
    reopened.close()
    again = open_url(url, clock.at(T0 + 41))
    assert "https://example.com/old" not in again
    assert "https://example.com/new" in again


@pytest.mark.parametrize("name", ["file", "file-bloom"])
def test_ageing_file_refuses_other_ageing_parameters(
    name: str, tmp_path: Path, open_url: Callable[..., SeenSet], clock: DrivenClock
) -> None:
    """A file made with one max_age/window (or none) is refused under another, naming both."""
    url = AGEING_BACKENDS[name](tmp_path)
    open_url(url, clock).close()
    with pytest.raises(SeenSetError, match=r"max_age=30s,? window=10s"):
        open_seen_set(url.replace("max_age=30", "max_age=60"), clock=clock)
    with pytest.raises(SeenSetError, match="max_age"):
        open_seen_set(url.replace(f"&{AGEING}", "").replace(f"?{AGEING}", ""), clock=clock)
    (tmp_path / "plain").mkdir()
    plain = AGEING_BACKENDS[name](tmp_path / "plain")
    plain = plain.replace(f"&{AGEING}", "").replace(f"?{AGEING}", "")
    open_url(plain).close()
    with pytest.raises(SeenSetError, match="without max_age"):
        open_seen_set(f"{plain}{'&' if '?' in plain else '?'}{AGEING}", clock=clock)


@pytest.mark.parametrize("name", ["redis-set", "redis-bloom"])
def test_ageing_redis_refuses_other_parameters_on_its_key(
    name: str, open_url: Callable[..., SeenSet], clock: DrivenClock
) -> None:
    """A Redis key made ageing is refused by another max_age and by a plain open, and back."""
    key = unique_key(f"ageing-key-{name}")
    open_url(AGEING_BACKENDS[name](Path()), clock, redis_key=key).add("https://a.example/")
    with pytest.raises(SeenSetError, match="max_age"):
        open_url(AGEING_BACKENDS[name](Path()).replace("max_age=30", "max_age=60"), redis_key=key)
    plain = AGEING_BACKENDS[name](Path()).replace(f"&{AGEING}", "")
    with pytest.raises(SeenSetError, match=r"ageing|max_age"):
        open_url(plain, redis_key=key)
    other = unique_key(f"plain-key-{name}")
    open_url(plain, redis_key=other).add("https://a.example/")
    with pytest.raises(SeenSetError):
        open_url(AGEING_BACKENDS[name](Path()), clock, redis_key=other)


# --- forgetting ---------------------------------------------------------------------------------

FORGETTING = {
    "memory": lambda tmp: "memory:",
    "memory-ageing": lambda tmp: f"memory:?{AGEING}",
    "file": lambda tmp: f"file:{tmp}/f.seen",
    "file-ageing": lambda tmp: f"file:{tmp}/fa.seen?{AGEING}",
    "redis-set": lambda tmp: "kind=set",
    "redis-set-ageing": lambda tmp: f"kind=set&{AGEING}",
}
NOT_FORGETTING = {
    "memory-bloom": lambda tmp: "memory:?kind=bloom&capacity=1000",
    "file-bloom": lambda tmp: f"file:{tmp}/fb.seen?kind=bloom&capacity=1000",
    "file-bloom-ageing": lambda tmp: f"file:{tmp}/fba.seen?kind=bloom&capacity=1000&{AGEING}",
    "redis-bloom": lambda tmp: "kind=bloom&capacity=1000",
    "redis-bloom-ageing": lambda tmp: f"kind=bloom&capacity=1000&{AGEING}",
}


@pytest.mark.parametrize("name", sorted(FORGETTING))
def test_exact_sets_forget_one_url(
    name: str, tmp_path: Path, open_url: Callable[..., SeenSet], clock: DrivenClock
) -> None:
    """forget removes a URL (True), the next add answers new; a URL never added: False."""
    seen = open_url(FORGETTING[name](tmp_path), clock)
    urls = [f"https://example.com/{i}" for i in range(10)]
    seen.add_many(urls)
    clock.at(T0 + WINDOW_S)  # ageing sets: the URLs are in an older generation now
    assert seen.forget(urls[3]) is True  # type: ignore[attr-defined]
    assert urls[3] not in seen
    assert seen.forget_many([urls[3], urls[4], "https://example.com/never"]) == [  # type: ignore[attr-defined]
        False,
        True,
        False,
    ]
    assert seen.add_many(urls) == [False] * 3 + [True, True] + [False] * 5
    with pytest.raises(TypeError):
        seen.forget_many([urls[0], b"short"])  # type: ignore[attr-defined]
    assert urls[0] in seen  # the batch with a bad item removed nothing
    assert seen.stats()["items"] == 10


@pytest.mark.parametrize("name", ["file", "file-ageing"])
def test_file_forget_is_saved(
    name: str, tmp_path: Path, open_url: Callable[..., SeenSet], clock: DrivenClock
) -> None:
    """A forgotten URL stays forgotten after close and reopen."""
    url = FORGETTING[name](tmp_path)
    seen = open_url(url, clock)
    seen.add_many(["https://example.com/a", "https://example.com/b"])
    seen.close()
    seen = open_url(url, clock)
    seen.forget("https://example.com/a")  # type: ignore[attr-defined]
    seen.close()
    again = open_url(url, clock)
    assert "https://example.com/a" not in again
    assert "https://example.com/b" in again


@pytest.mark.parametrize("name", sorted(NOT_FORGETTING))
def test_bloom_filters_refuse_to_forget_and_say_why(
    name: str, tmp_path: Path, open_url: Callable[..., SeenSet], clock: DrivenClock
) -> None:
    """forget on a Bloom filter raises ForgetNotSupportedError naming max_age; no change."""
    seen = open_url(NOT_FORGETTING[name](tmp_path), clock)
    seen.add("https://example.com/a")
    for call in (
        lambda: seen.forget("https://example.com/a"),  # type: ignore[attr-defined]
        lambda: seen.forget_many(["https://example.com/a"]),
    ):  # type: ignore[attr-defined]
        with pytest.raises(ForgetNotSupportedError, match="max_age") as info:
            call()
        assert isinstance(info.value, SeenSetError)
    assert "https://example.com/a" in seen


# --- routing --------------------------------------------------------------------------------------

ROUTED = {
    "memory": lambda tmp: "memory:?kind=route",
    "file": lambda tmp: f"file:{tmp}/r.seen?kind=route",
    "redis": lambda tmp: "kind=route",
}
HOSTS = "exact_hosts=shop.example.com,.example.org"


@pytest.mark.parametrize("scheme", sorted(ROUTED))
@pytest.mark.parametrize("ageing", [False, True])
def test_routed_seen_set_sends_listed_hosts_to_the_exact_route(
    scheme: str,
    ageing: bool,
    tmp_path: Path,
    open_url: Callable[..., SeenSet],
    clock: DrivenClock,
) -> None:
    """Listed hosts and domains go to an exact set, the rest to a Bloom filter; stats per route."""
    base = ROUTED[scheme](tmp_path)
    url = f"{base}{'&' if '?' in base or base.startswith('kind=') else '?'}{HOSTS}"
    url += "&capacity=1000&error_rate=0.0001"
    seen = open_url(f"{url}&{AGEING}" if ageing else url, clock)
    assert isinstance(seen, RoutedSeenSet)
    exact = ["https://shop.example.com/a", "https://example.org/b", "https://www.example.org/c"]
    rest = ["https://example.com/d", "https://shop.example.com.evil.net/e"]
    assert [seen.route_of(u) for u in exact + rest] == ["exact"] * 3 + ["bloom"] * 2
    assert seen.add_many([*exact, *rest, exact[0]]) == [True] * 5 + [False]
    assert all(u in seen for u in exact + rest)
    stats = seen.stats()
    assert stats["kind"] == "routed"
    assert stats["items"] == 5
    assert (stats["routes"]["exact"]["items"], stats["routes"]["bloom"]["items"]) == (3, 2)
    assert stats["routes"]["exact"]["estimated_error_rate"] == 0.0
    assert stats["error_rate"] == 0.0001
    assert seen.forget(exact[1]) is True
    assert seen.add(exact[1]) is True
    with pytest.raises(ForgetNotSupportedError, match="Bloom route"):
        seen.forget_many([exact[0], rest[0]])
    assert exact[0] in seen  # refused whole: nothing forgotten
    with pytest.raises(TypeError, match="routes by host"):
        seen.add(url_digest(exact[0]))
    if ageing:
        clock.at(T0 + MAX_AGE_S + WINDOW_S)
        assert seen.add_many([exact[0], rest[0]]) == [True, True]


def test_routed_policy_file_with_patterns_and_own_route_urls(
    tmp_path: Path, open_url: Callable[..., SeenSet]
) -> None:
    """policy=TOML: hosts, URL patterns and the routes' own seen-set URLs."""
    policy = tmp_path / "routes.toml"
    policy.write_text(
        'exact_hosts = ["shop.example.com"]\n'
        "exact_url_patterns = ['^https://news\\.example\\.com/2026/']\n"
        f'exact = "file:{tmp_path}/mine.exact"\n'
        'bloom = "memory:?kind=bloom&capacity=500"\n'
    )
    seen = open_url(f"memory:?kind=route&policy={policy}")
    assert isinstance(seen, RoutedSeenSet)
    assert seen.route_of("https://news.example.com/2026/story") == "exact"
    assert seen.route_of("https://news.example.com/2025/story") == "bloom"
    seen.add_many(["https://news.example.com/2026/story", "https://shop.example.com/"])
    assert seen.stats()["routes"]["exact"]["kind"] == "file-exact"
    assert seen.stats()["routes"]["bloom"]["capacity"] == 500
    seen.close()
    assert (tmp_path / "mine.exact").is_file()


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("exact_hosts = 'shop.example.com'\n", "exact_hosts must be a list"),
        ("exact_hosts = ['a b']\n", "is not a host name"),
        ("exact_url_patterns = ['(']\n", "is not a regex"),
        ("colour = 'red'\n", "unknown field(s) colour"),
        ("exact_hosts = [\n", "is not valid TOML"),
        ("exact = 'memory:?kind=bloom'\nexact_hosts = ['a.example']\n", "not an exact seen-set"),
    ],
)
def test_bad_route_policies_raise_config_error(tmp_path: Path, policy: str, message: str) -> None:
    """A malformed policy file raises ConfigError naming the problem."""
    path = tmp_path / "p.toml"
    path.write_text(policy)
    with pytest.raises(ConfigError) as info:
        open_seen_set(f"memory:?kind=route&policy={path}")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("memory:?max_age=abc", "max_age='abc' is not a duration"),
        ("memory:?max_age=0", "max_age='0' must be a positive duration"),
        ("memory:?window=10", "window= needs max_age="),
        ("memory:?max_age=7d&window=5h", "whole number of windows"),
        ("memory:?max_age=10&window=20", "whole number of windows"),
        ("file:x?kind=bloom&scalable=1&max_age=1d", "scalable= does not combine with max_age="),
        ("memory:?kind=route", "kind=route needs exact_hosts="),
        ("memory:?kind=route&exact_hosts=a/b", "is not a host name"),
        (
            "memory:?kind=route&policy=/nonexistent.toml",
            "policy='/nonexistent.toml' cannot be read",
        ),
        ("memory:?kind=route&exact_hosts=a.example&bogus=1", "unknown option(s) bogus"),
        ("redis://127.0.0.1:6379/15?ttl=60&max_age=1d", "ttl= does not combine with max_age="),
        ("redis://127.0.0.1:6379/15?replay_s=0", "replay_s='0' must be a positive duration"),
        ("redis://127.0.0.1:6379/15?max_age=1d&key=a{b}", "must not contain { or }"),
    ],
)
def test_bad_ageing_and_route_urls_raise_config_error(
    url: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Malformed ageing, replay and route options raise ConfigError naming the parameter."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        open_seen_set(url)
    assert message in str(info.value)
    assert list(tmp_path.iterdir()) == []
