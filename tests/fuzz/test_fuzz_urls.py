"""Fuzz: canonicalise and url_digest on hostile URLs — a clear error or a stable answer, fast."""

from __future__ import annotations

import pytest
from hypothesis import given

from changewatch import canonicalise, url_digest
from changewatch.errors import InvalidURLError
from changewatch.urls import digest_canonical

from ._timing import assert_linear
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


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("dot segments", lambda n: "https://example.com/" + "a/../" * n + "x"),
        ("escapes", lambda n: "https://example.com/" + "%7e%41" * n),
        ("query params", lambda n: "https://example.com/?" + "&".join(f"p{i}=v" for i in range(n))),
        ("repeated params", lambda n: "https://example.com/?" + "a=1&" * n),
        ("empty segments", lambda n: "https://example.com" + "/" * n),
    ],
)
def test_canonicalise_time_grows_linearly(name: str, shape: object) -> None:
    """16× the input costs under 100× the time (quadratic: 256×), URL length cap lifted."""

    def uncapped(url: str) -> str:
        return canonicalise(url, max_length=10**8)

    assert_linear(uncapped, shape, (InvalidURLError,), label=name, cap=1 << 12)  # type: ignore[arg-type]
