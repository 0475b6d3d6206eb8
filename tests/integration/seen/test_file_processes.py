"""File seen-sets across processes: a fork after opening, and opening through a symlink.

Real forked children (``multiprocessing``'s fork start method, as Scrapy and Celery workers
are made) and real symlinks; a third process is a fresh interpreter.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from changewatch.errors import SeenSetError
from changewatch.seen import SeenSet, open_seen_set

CHILDREN = 8
ADDS_PER_CHILD = 250  # 2,000 adds in all, as in issue 15

_OPEN_IN_CHILD = """
import sys
from changewatch.errors import SeenSetError
from changewatch.seen import open_seen_set
try:
    seen = open_seen_set(sys.argv[1])
except SeenSetError as exc:
    print("SeenSetError:", exc)
    sys.exit(3)
answers = seen.add_many([bytes([i % 256, i // 256]) * 8 for i in range(int(sys.argv[2]))])
seen.close()
print("opened", sum(answers))
"""


def _digest(n: int) -> bytes:
    return hashlib.blake2b(n.to_bytes(8, "big"), digest_size=16).digest()


def _open_elsewhere(url: str, adds: int = 0) -> subprocess.CompletedProcess[str]:
    """Open ``url`` in a fresh interpreter (a third process), add ``adds`` digests, close."""
    return subprocess.run(
        [sys.executable, "-c", _OPEN_IN_CHILD, url, str(adds)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _child(seen: SeenSet, index: int, results: Any) -> None:
    """In a forked child: try to add this child's digests, then close the inherited set."""
    outcome: list[str] = []
    for n in range(index * ADDS_PER_CHILD, (index + 1) * ADDS_PER_CHILD):
        try:
            outcome.append("new" if seen.add(_digest(10_000 + n)) else "seen")
        except SeenSetError as exc:
            outcome.append(f"refused: {exc}")
    try:
        seen.close()
        outcome.append("closed")
    except SeenSetError as exc:
        outcome.append(f"close refused: {exc}")
    results.put((index, outcome))


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_forked_children_are_refused_and_the_parent_keeps_its_lock(
    tmp_path: Path, kind: str
) -> None:
    """8 forked children × 250 adds are refused, their close() keeps the lock, nothing is lost."""
    url = f"file:{tmp_path}/s.seen?kind={kind}&checkpoint=1"
    seen = open_seen_set(url)
    assert seen.add_many([_digest(n) for n in range(100)]) == [True] * 100
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    children = [ctx.Process(target=_child, args=(seen, i, results)) for i in range(CHILDREN)]
    for child in children:
        child.start()
    outcomes = dict(results.get(timeout=60) for _ in children)
    for child in children:
        child.join(timeout=60)
        assert child.exitcode == 0
    try:
        for outcome in outcomes.values():
            *adds, last = outcome
            assert len(adds) == ADDS_PER_CHILD
            assert all(a.startswith("refused") for a in adds), adds[:3]
            assert "fork" in adds[0]
            assert str(os.getpid()) in adds[0]  # names the process that holds it
            assert last == "closed"
        # The children's close() released nothing: a third process is still refused.
        third = _open_elsewhere(url)
        assert third.returncode == 3, third.stdout + third.stderr
        assert "already open" in third.stdout
        # The parent goes on, and its file holds exactly what it added.
        assert seen.add(_digest(100)) is True
    finally:
        seen.close()
    reopened = open_seen_set(url)
    try:
        assert all(_digest(n) in reopened for n in range(101))
        assert reopened.stats()["items"] == 101
    finally:
        reopened.close()


def test_a_child_that_opens_after_the_fork_may_use_the_file(tmp_path: Path) -> None:
    """Opening in the child, once the parent closed, works: the refusal is for inherited sets."""
    url = f"file:{tmp_path}/s.seen"
    seen = open_seen_set(url)
    seen.add(_digest(1))
    seen.close()
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()

    def reopen_and_add(results: Any) -> None:
        mine = open_seen_set(url)
        results.put((mine.add(_digest(1)), mine.add(_digest(2))))
        mine.close()

    child = ctx.Process(target=reopen_and_add, args=(results,))
    child.start()
    assert results.get(timeout=60) == (False, True)
    child.join(timeout=60)
    reopened = open_seen_set(url)
    try:
        assert _digest(2) in reopened
    finally:
        reopened.close()


@pytest.mark.parametrize("kind", ["exact", "bloom"])
def test_a_symlink_and_its_target_share_one_lock(tmp_path: Path, kind: str) -> None:
    """Open through a symlink: the target's path is locked, so opening the target is refused."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "s.seen"
    link = tmp_path / "link.seen"
    link.symlink_to(target)
    via_link = open_seen_set(f"file:{link}?kind={kind}")
    try:
        other = _open_elsewhere(f"file:{target}?kind={kind}", adds=300)
        assert other.returncode == 3, other.stdout + other.stderr
        assert "already open" in other.stdout
        assert via_link.add_many([_digest(n) for n in range(300)]) == [True] * 300
    finally:
        via_link.close()
    assert link.is_symlink(), "the save replaced the symlink by a file"
    assert os.readlink(link) == str(target)
    assert target.is_file()
    # The other way round: the target held, the link refused.
    via_target = open_seen_set(f"file:{target}?kind={kind}")
    try:
        other = _open_elsewhere(f"file:{link}?kind={kind}", adds=300)
        assert other.returncode == 3, other.stdout + other.stderr
    finally:
        via_target.close()
    reopened = open_seen_set(f"file:{link}?kind={kind}")
    try:
        assert all(_digest(n) in reopened for n in range(300))
        assert reopened.stats()["path"] == str(target)
    finally:
        reopened.close()


def test_a_relative_symlink_to_a_missing_file_creates_the_target(tmp_path: Path) -> None:
    """A dangling symlink names where the file goes: it is created there, the link kept."""
    (tmp_path / "data").mkdir()
    link = tmp_path / "seen.link"
    link.symlink_to(Path("data") / "crawl.seen")
    seen = open_seen_set(f"file:{link}")
    seen.add(_digest(7))
    seen.close()
    assert link.is_symlink()
    assert (tmp_path / "data" / "crawl.seen").is_file()
    assert not (tmp_path / "seen.link.lock").exists()
    assert (tmp_path / "data" / "crawl.seen.lock").exists()


def test_a_symlink_loop_is_a_seen_set_error(tmp_path: Path) -> None:
    """A path that is a symlink loop raises SeenSetError naming it, not a bare OSError."""
    loop = tmp_path / "loop.seen"
    loop.symlink_to(loop)
    with pytest.raises(SeenSetError, match=r"loop\.seen"):
        open_seen_set(f"file:{loop}")
