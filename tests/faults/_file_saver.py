"""Child program for test_file_kill: grow a file seen-set and save it, forever.

``python _file_saver.py PATH KIND STEP``: generation g holds the digests of ``0 .. g·STEP-1``;
after each save it prints ``saved g``. The parent SIGKILLs it at a random moment.
Also ``python _file_saver.py PATH KIND STEP --fsize LIMIT``: with RLIMIT_FSIZE set to LIMIT
bytes (and SIGXFSZ ignored, so writes fail with EFBIG), add one generation to the existing
file, save, and print the error.
"""

from __future__ import annotations

import hashlib
import resource
import signal
import sys

from changewatch.errors import SeenSetError
from changewatch.seen import FileBloomSeenSet, FileExactSeenSet


def digests(start: int, stop: int) -> list[bytes]:
    return [hashlib.blake2b(str(i).encode(), digest_size=16).digest() for i in range(start, stop)]


#: Far above what the kill test can add (5 runs of at most ~0.15 s, ~10,000 items a save):
#: below capacity a Bloom filter's false positives stay negligible, so the count of adds it
#: answered "new" is a whole number of generations. At 400,000 a fast machine went past
#: capacity (470,000 adds) and 158 false positives broke that count.
BLOOM_CAPACITY = 4_000_000


def open_set(path: str, kind: str) -> FileExactSeenSet | FileBloomSeenSet:
    if kind == "bloom":
        return FileBloomSeenSet(path, capacity=BLOOM_CAPACITY, error_rate=0.001, checkpoint_s=1e9)
    return FileExactSeenSet(path, checkpoint_s=1e9)


def main() -> None:
    path, kind, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if len(sys.argv) > 4 and sys.argv[4] == "--fsize":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        seen = open_set(path, kind)
        have = len(seen)
        limit = int(sys.argv[5])
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        seen.add_many(digests(have, have + step))
        try:
            seen.save()
        except SeenSetError as exc:
            print(f"error {exc}", flush=True)
        else:
            print("saved", flush=True)
        sys.exit(0)  # without close(): it would only try the same save again
    seen = open_set(path, kind)
    generation = len(seen) // step
    while True:
        generation += 1
        seen.add_many(digests((generation - 1) * step, generation * step))
        seen.save()
        print(f"saved {generation}", flush=True)


if __name__ == "__main__":
    main()
