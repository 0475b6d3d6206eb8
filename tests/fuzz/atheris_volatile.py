"""atheris target: label-stamp stripping on fuzzer-made text (not collected by pytest).

    python tests/fuzz/atheris_volatile.py -atheris_runs=100000 [-max_len=65536] [corpus_dir]

Fails on any exception, on a second pass that removes more than the first (not idempotent),
and on a result that is not the input's own words in order.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

_fp: Any = None


def test_one_input(data: bytes) -> None:
    """One fuzzer input: text, normalised, stripped twice."""
    import atheris

    fdp = atheris.FuzzedDataProvider(data)
    text = _fp.normalise_text(fdp.ConsumeUnicodeNoSurrogates(65536))
    once = _fp.strip_volatile(text)
    if _fp.strip_volatile(once) != once:
        raise AssertionError(f"not idempotent on {text!r:.200}")
    words = iter(text.split(" "))
    if not all(word in words for word in once.split(" ") if word):
        raise AssertionError(f"kept words not in order on {text!r:.200}")


def main() -> None:
    """Instrument changewatch's fingerprint code and fuzz it."""
    global _fp
    import atheris

    with atheris.instrument_imports(include=["changewatch"]):
        # the module, not the function changewatch re-exports under the same name
        _fp = importlib.import_module("changewatch.fingerprint")
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
