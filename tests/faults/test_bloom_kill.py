"""A file Bloom filter whose writer is SIGKILLed while saving after every add."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from changewatch.seen import FileBloomSeenSet


def _digests(start: int, count: int) -> list[bytes]:
    return [
        hashlib.blake2b(n.to_bytes(8, "big"), digest_size=16).digest()
        for n in range(start, start + count)
    ]


_SAVER = """
import sys
from changewatch.seen import FileBloomSeenSet
import hashlib
seen = FileBloomSeenSet(sys.argv[1], capacity=200_000, error_rate=0.001, checkpoint_items=1)
n = 0
print("ready", flush=True)
while True:
    seen.add(hashlib.blake2b(n.to_bytes(8, "big"), digest_size=16).digest())
    n += 1
"""


def test_kill_during_saves_leaves_old_or_new_file(tmp_path: Path) -> None:
    """SIGKILL while a process saves after every add: the file always opens, never broken."""
    path = tmp_path / "k.seen"
    for delay in (0.3, 0.45, 0.6):
        proc = subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        seen = FileBloomSeenSet(path, capacity=200_000, error_rate=0.001)
        try:
            count = seen.stats()["items"]
            assert count > 0
            assert all(d in seen for d in _digests(0, count))
        finally:
            seen.close()
