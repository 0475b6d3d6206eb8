"""atheris target: normalise / fingerprint on fuzzer-made HTML (not collected by pytest).

    python tests/fuzz/atheris_html.py -atheris_runs=100000 [-max_len=65536] [corpus_dir]

Feeds the raw bytes (any encoding, any content type) and fails on any exception, and on a
fingerprint that disagrees with the normalised text it should be built from.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

_fp: Any = None

_CONTENT_TYPES = (None, "text/html", "text/html; charset=utf-16", "application/pdf", "text/x-bogus")


def test_one_input(data: bytes) -> None:
    """One fuzzer input: a content type, then the body as bytes or as decoded text."""
    import atheris

    fdp = atheris.FuzzedDataProvider(data)
    content_type = _CONTENT_TYPES[fdp.ConsumeIntInRange(0, len(_CONTENT_TYPES) - 1)]
    as_text = fdp.ConsumeBool()
    body: str | bytes = (
        fdp.ConsumeUnicodeNoSurrogates(65536) if as_text else fdp.ConsumeBytes(65536)
    )
    text = _fp.normalise(body, content_type)
    fp = _fp.fingerprint(body, content_type)
    if not fp.binary and fp.content_sha256 != _fp.content_sha256(text):
        raise AssertionError("fingerprint disagrees with normalise")
    if not 0 <= fp.simhash < 2**64:
        raise AssertionError(f"simhash out of range: {fp.simhash}")


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
