"""atheris target: the streaming sitemap parser on fuzzer-made bodies (not collected by pytest).

    python tests/fuzz/atheris_sitemaps.py -atheris_runs=100000 [-max_len=65536] [corpus_dir]

Fails on any exception other than SitemapError, on an entry that is not an absolute http(s)
URL, and when feeding the body in two chunks answers differently from feeding it whole.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

_parse: Any = None
_errors: Any = None

SITEMAP = "https://example.com/sitemap.xml"


def _answer(chunks: list[bytes]) -> tuple[str, list[Any]]:
    parser = _parse.SitemapParser(SITEMAP)
    try:
        entries = [e for chunk in chunks for e in parser.feed(chunk)]
        entries += parser.close()
    except _errors.SitemapError as exc:
        return type(exc).__name__, []
    return "ok", entries


def test_one_input(data: bytes) -> None:
    """One fuzzer input: parsed whole and in two chunks, split at a fuzzer-chosen point."""
    import atheris

    fdp = atheris.FuzzedDataProvider(data)
    cut = fdp.ConsumeIntInRange(0, 1 << 16)
    body = fdp.ConsumeBytes(1 << 16)
    whole = _answer([body])
    for entry in whole[1]:
        if not entry.loc.startswith(("http://", "https://")):
            raise AssertionError(f"entry is not an absolute http(s) URL: {entry.loc!r}")
    split = _answer([body[:cut], body[cut:]])
    if split != whole:
        raise AssertionError(f"chunked answer differs: {split[0]} vs {whole[0]}")


def main() -> None:
    """Instrument changewatch's sitemap parser and fuzz it."""
    global _parse, _errors
    import atheris

    with atheris.instrument_imports(include=["changewatch"]):
        _parse = importlib.import_module("changewatch.sitemaps.parse")
        _errors = importlib.import_module("changewatch.errors")
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
