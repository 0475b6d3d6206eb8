"""The SeenSet contract on every backend (memory, file, Bloom, Redis); file failures; URLs."""

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

from changewatch.errors import ConfigError, InvalidURLError, SeenSetError
from changewatch.seen import FileExactSeenSet, MemorySeenSet, SeenSet, open_seen_set
from changewatch.urls import url_digest

from .redis_fixtures import delete_keys, redis_test_url, unique_key, with_query

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
