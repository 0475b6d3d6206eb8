"""atheris target: canonicalise / url_digest on fuzzer-made URLs (not collected by pytest).

    python tests/fuzz/atheris_urls.py -atheris_runs=100000 [-max_len=512] [corpus_dir]

Fails on any exception other than InvalidURLError, on a canonical URL that is not a fixed
point, and on a digest that differs between the URL and its canonical form.
"""

from __future__ import annotations

import sys
from typing import Any

_urls: Any = None
_errors: Any = None


def test_one_input(data: bytes) -> None:
    """One fuzzer input: the bytes as text, as a URL, then as a URL after an http(s) prefix."""
    import atheris

    fdp = atheris.FuzzedDataProvider(data)
    prefix = ("", "http://", "https://", "https://example.com/")[fdp.ConsumeIntInRange(0, 3)]
    url = prefix + fdp.ConsumeUnicodeNoSurrogates(4096)
    try:
        canonical = _urls.canonicalise(url)
    except _errors.InvalidURLError as exc:
        if not exc.reason:
            raise AssertionError(f"InvalidURLError without a reason for {url!r}") from exc
        return
    if _urls.canonicalise(canonical) != canonical:
        raise AssertionError(f"not a fixed point: {url!r} → {canonical!r}")
    if _urls.url_digest(url) != _urls.digest_canonical(canonical):
        raise AssertionError(f"digest differs for {url!r}")


def main() -> None:
    """Instrument changewatch's URL code and fuzz it."""
    global _urls, _errors
    import atheris

    with atheris.instrument_imports(include=["changewatch"]):
        import changewatch.errors as errors
        import changewatch.urls as urls
    _urls, _errors = urls, errors
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
