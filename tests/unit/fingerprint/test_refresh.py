"""Redirect stubs: the refresh value as HTML reads it, and what makes a page a stub."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changewatch.fingerprint import fingerprint
from changewatch.fingerprint.refresh import MAX_REDIRECT_DELAY, parse_refresh, redirect_target

PAGE = "https://example.com/en/policy"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("0; url=https://example.com/new", (0, "https://example.com/new")),
        ("0;URL=/new", (0, "/new")),
        ("  3 , url = '/a b'  ", (3, "/a b")),
        ('1; url="/quoted"; ignored', (1, "/quoted")),
        ("2.5; url=/fraction", (2, "/fraction")),
        (".5; url=/dot", (0, "/dot")),
        ("0; /without-url-key", (0, "/without-url-key")),
        ("0 https://example.com/space", (0, "https://example.com/space")),
        ("300", (300, None)),
        ("5;", (5, None)),
        ("0; url=", (0, None)),
    ],
)
def test_refresh_values_are_read_as_html_reads_them(
    content: str, expected: tuple[int, str | None]
) -> None:
    assert parse_refresh(content) == expected


@pytest.mark.parametrize(
    "content", ["", "soon", "x0; url=/a", "0x; url=/a", "-1; url=/a", "٠; url=/a"]
)
def test_values_that_are_no_refresh(content: str) -> None:
    assert parse_refresh(content) is None


def test_hostile_values_cost_nothing_and_redirect_nowhere() -> None:
    """A delay of 5,000 digits (past int()'s 4,300-digit limit) waits forever; a value past
    8 KiB is not read; schemes other than http(s) and unparsable URLs are no redirect."""
    assert parse_refresh("9" * 5000 + "; url=/a") == (10**9, "/a")
    assert redirect_target("9" * 5000 + "; url=/a", None, PAGE) is None
    assert parse_refresh("0; url=/" + "a" * 10_000) is None
    for target in ("javascript:alert(1)", "data:text/html,hi", "mailto:a@b.c", "http://[::1"):
        assert redirect_target(f"0; url={target}", None, PAGE) is None, target


def test_what_makes_a_page_a_stub() -> None:
    assert redirect_target("0; url=/en/policy/", None, PAGE) == "https://example.com/en/policy/"
    assert redirect_target("0; url=/en/policy", None, PAGE) is None  # the page itself
    assert redirect_target("0; url=HTTPS://EXAMPLE.com:443/en/policy", None, PAGE) is None
    assert redirect_target(f"{MAX_REDIRECT_DELAY}; url=/b", None, PAGE) is not None
    assert redirect_target(f"{MAX_REDIRECT_DELAY + 1}; url=/b", None, PAGE) is None
    assert redirect_target("0; url=b", "https://cdn.example.org/x/", PAGE) == (
        "https://cdn.example.org/x/b"
    )
    # Without the page's URL a relative target cannot be resolved: no redirect is claimed.
    assert redirect_target("0; url=/b", None, None) is None
    assert redirect_target("0; url=https://example.com/b", None, None) == "https://example.com/b"


def test_fingerprint_names_the_target_of_a_stub_only() -> None:
    stub = '<head><META HTTP-EQUIV="Refresh" CONTENT="0; URL=/moved"></head><p>Moved.</p>'
    assert fingerprint(stub, url=PAGE).redirect_to == "https://example.com/moved"
    # The first refresh counts, as in browsers; one in the body counts too (parsers move it).
    two = (
        '<meta http-equiv=refresh content="0; url=/one">'
        '<meta http-equiv=refresh content="0; url=/two">'
    )
    assert fingerprint(two, url=PAGE).redirect_to == "https://example.com/one"
    assert fingerprint("<p>x</p><meta http-equiv=refresh content='0;url=/b'>", url=PAGE).redirect_to
    assert (
        fingerprint('<meta http-equiv="content-type" content="text/html">', url=PAGE).redirect_to
        is None
    )
    assert fingerprint('<meta name="refresh" content="0; url=/x">', url=PAGE).redirect_to is None


@given(st.text(max_size=200))
def test_any_refresh_value_parses_or_is_refused_without_raising(content: str) -> None:
    parsed = parse_refresh(content)
    assert parsed is None or parsed[0] >= 0
    redirect_target(content, None, PAGE)


def test_a_page_of_real_content_with_a_quick_refresh_is_content() -> None:
    """A refresh can never hide an edit to a page's text: past 100 words of main content
    the page is compared as content, whatever its refresh says (chrome words don't count)."""
    refresh = '<meta http-equiv="refresh" content="0; url=/elsewhere">'
    prose = "<p>" + "The council approved the budget for the coming year. " * 15 + "</p>"
    assert fingerprint(refresh + prose, url=PAGE).redirect_to is None
    menu = "<nav>" + "".join(f"<a href='/s{i}'>Section {i}</a>" for i in range(80)) + "</nav>"
    stub = f"{refresh}{menu}<main><p>This page has moved.</p></main>"
    assert fingerprint(stub, url=PAGE).redirect_to == "https://example.com/elsewhere"
