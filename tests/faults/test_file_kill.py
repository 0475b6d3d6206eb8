"""File seen-sets under SIGKILL and a full disk: the file is the old or the new one, never broken.

A child process (:mod:`._file_saver`) grows and saves a file filter in a loop and is
SIGKILLed at random moments; a size-limited child (RLIMIT_FSIZE → EFBIG) and, where it can
be mounted, a tiny tmpfs (ENOSPC) stand in for a full disk.
"""

from __future__ import annotations

import contextlib
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from changewatch.errors import SeenSetError
from changewatch.seen import FileBloomSeenSet, FileExactSeenSet

from ._file_saver import BLOOM_CAPACITY, digests, open_set

SAVER = str(Path(__file__).with_name("_file_saver.py"))
STEP = 10_000
KILLS = 5
TIMEOUT_S = 30


def _generation(path: Path, kind: str) -> int:
    """The number of whole generations in the file; fails if it is not exactly some prefix."""
    seen = open_set(str(path), kind)
    try:
        n = len(seen)
        if kind == "exact":
            assert n % STEP == 0, f"{n} items: a partial save"
            generation = n // STEP
        else:  # a Bloom filter counts adds answered "new": its false positives are not counted
            assert n < BLOOM_CAPACITY // 2, f"{n} items: the filter is too full to count on"
            generation = -(-n // STEP)
            assert generation * STEP - n <= STEP // 100, f"{n} items: a partial save"
        if generation:
            last = generation * STEP - 1
            sample = [*random.Random(n).sample(range(last), 200), 0, last]
            assert all(d in seen for d in digests_at(sample))  # no add of the save is missing
        return generation
    finally:
        seen.close()


def digests_at(indices: list[int]) -> list[bytes]:
    return [digests(i, i + 1)[0] for i in indices]


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_sigkill_at_random_moments_leaves_the_old_or_the_new_file(
    tmp_path: Path, kind: str
) -> None:
    """5 SIGKILLs of a process saving in a loop: each time the file loads, old or new."""
    path = tmp_path / f"seen.{kind}"
    rng = random.Random()
    last = 0
    for _ in range(KILLS):
        with subprocess.Popen(
            [sys.executable, SAVER, str(path), kind, str(STEP)],
            stdout=subprocess.PIPE,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            reported = 0
            line = proc.stdout.readline()  # one save done: the file exists
            assert line.startswith("saved "), line
            reported = int(line.split()[1])
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=rng.uniform(0.0, 0.15))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=TIMEOUT_S)
            rest = proc.stdout.read().split()
            reported = max([reported, *(int(x) for x in rest if x.isdigit())])
        generation = _generation(path, kind)
        # The saves it reported are on disk; at most the one in flight may be, too.
        assert reported <= generation <= reported + 1
        assert generation >= last
        last = generation
    # Temporary files of killed saves are left beside the target, never in its place.
    assert all(
        p.name.startswith(f".{path.name}.")
        for p in tmp_path.iterdir()
        if p != path and not p.name.endswith(".lock")
    )


def _file_with(path: Path, kind: str, count: int) -> bytes:
    seen = open_set(str(path), kind)
    seen.add_many(digests(0, count))
    seen.close()
    return path.read_bytes()


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_file_size_limit_while_saving_raises_and_keeps_the_old_file(
    tmp_path: Path, kind: str
) -> None:
    """EFBIG (RLIMIT_FSIZE) during a save: a SeenSetError naming it; the old file intact."""
    path = tmp_path / f"seen.{kind}"
    old = _file_with(path, kind, 5_000)
    limit = len(old) // 2 if kind == "bloom" else len(old) + 1000
    proc = subprocess.run(
        [sys.executable, SAVER, str(path), kind, str(STEP), "--fsize", str(limit)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("error cannot save seen-set file"), proc.stdout
    assert "File too large" in proc.stdout
    assert "the previous file is intact" in proc.stdout
    assert path.read_bytes() == old
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert _generation_count(path, kind) == 5_000


def _generation_count(path: Path, kind: str) -> int:
    seen = open_set(str(path), kind)
    try:
        return len(seen)
    finally:
        seen.close()


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs (needs root, as on CI); skipped where mounting is not allowed."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_disk_full_while_saving_raises_and_keeps_the_old_file(tiny_tmpfs: Path) -> None:
    """ENOSPC on a full tmpfs: a SeenSetError naming it; the old file intact and loadable."""
    path = tiny_tmpfs / "seen.exact"
    old = _file_with(path, "exact", 8_000)  # 128 KB of a 256 KiB filesystem
    seen = FileExactSeenSet(path, checkpoint_s=1e9)
    seen.add_many(digests(8_000, 18_000))  # the new image needs 288 KB
    with pytest.raises(SeenSetError, match="No space left on device") as caught:
        seen.save()
    assert "the previous file is intact" in str(caught.value)
    with pytest.raises(SeenSetError):
        seen.close()  # the final save fails the same way; the lock is released regardless
    assert path.read_bytes() == old
    assert [p.name for p in tiny_tmpfs.iterdir() if p.name.endswith(".tmp")] == []
    assert _generation_count(path, "exact") == 8_000
    assert isinstance(FileBloomSeenSet, type)
