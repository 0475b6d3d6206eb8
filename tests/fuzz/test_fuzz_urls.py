"""Fuzz: canonicalise and url_digest on hostile URLs — a clear error or a stable answer, fast."""

from __future__ import annotations

import contextlib
import time

import pytest
from hypothesis import given

from changewatch import canonicalise, url_digest
from changewatch.errors import InvalidURLError
from changewatch.urls import digest_canonical

from .strategies import FUZZ, urls


@FUZZ
@given(urls())
def test_canonicalise_answers_or_names_the_problem(url: str) -> None:
    """Any URL: InvalidURLError with a reason, or a canonical URL that is a fixed point."""
    try:
        canonical = canonicalise(url)
    except InvalidURLError as exc:
        error = exc
    else:
        error = None
    if error is not None:
        assert error.reason
        assert error.url == url
        with pytest.raises(InvalidURLError):
            url_digest(url)
        return
    assert canonical.startswith(("http://", "https://"))
    assert canonicalise(canonical) == canonical
    assert "@" not in canonical.partition("://")[2].partition("/")[0]  # no userinfo kept
    digest = url_digest(url)
    assert len(digest) == 16
    assert digest == digest_canonical(canonical) == url_digest(canonical)


def _best_of(fn: object, arg: str, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        with contextlib.suppress(InvalidURLError):
            fn(arg)  # type: ignore[operator]
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("dot segments", lambda n: "https://example.com/" + "a/../" * n + "x"),
        ("escapes", lambda n: "https://example.com/" + "%7e%41" * n),
        ("query params", lambda n: "https://example.com/?" + "&".join(f"p{i}=v" for i in range(n))),
        ("repeated params", lambda n: "https://example.com/?" + "a=1&" * n),
        ("empty segments", lambda n: "https://example.com" + "/" * n),
        ("long host labels", lambda n: "https://" + "a." * n + "com/"),
    ],
)
def test_canonicalise_time_grows_linearly(name: str, shape: object) -> None:
    """16× the input costs under 100× the time (quadratic: 256×), best of 3, length cap lifted."""

    def uncapped(url: str) -> str:
        return canonicalise(url, max_length=10**8)

    t_small = max(_best_of(uncapped, shape(250)), 1e-4)  # type: ignore[operator]
    t_large = _best_of(uncapped, shape(4000))  # type: ignore[operator]
    assert t_large / t_small < 100, f"{name}: {t_small:.5f}s → {t_large:.5f}s"
