"""Conditional GET: validators stored on every decision path, 304s, statuses (both dialects)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from changewatch import ChangeWatch
from changewatch.errors import PageNotStoredError, UnexpectedStatusError

from ._pages import counts, long_page, one_word_edit, rewrite, snapshot

URL = "https://example.com/article"
IMF = "Sun, 06 Nov 1994 08:49:37 GMT"
IMF2 = "Mon, 07 Nov 1994 08:49:37 GMT"


def test_conditional_headers_round_trip(watch: ChangeWatch) -> None:
    """ETag and Last-Modified given with a page come back as If-None-Match/If-Modified-Since."""
    assert watch.conditional_headers(URL) == {}  # never stored
    watch.should_parse(URL, long_page(), headers={"ETag": '"v1"', "Last-Modified": IMF})
    assert watch.conditional_headers(URL) == {"If-None-Match": '"v1"', "If-Modified-Since": IMF}
    # Another spelling of the same URL finds the same page.
    assert watch.conditional_headers("HTTPS://EXAMPLE.COM/article#top") == {
        "If-None-Match": '"v1"',
        "If-Modified-Since": IMF,
    }


@pytest.mark.parametrize(
    ("second", "path"),
    [
        (long_page, "raw"),  # one-statement fast path
        (lambda: long_page().replace("abc123", "zzz999"), "normalised"),
        (one_word_edit, "simhash"),
        (rewrite, "simhash"),
    ],
)
def test_validators_updated_on_every_path(
    watch: ChangeWatch, second: Callable[[], str], path: str
) -> None:
    """Each decision path (raw, normalised, minor, changed) stores the response's validators."""
    watch.should_parse(URL, long_page(), headers={"etag": '"v1"'})
    d = watch.should_parse(URL, second(), headers={"ETAG": 'W/"v2"', "last-modified": IMF2})
    assert d.path == path
    row = snapshot(watch, d.url_digest)
    assert (row.etag, row.last_modified) == ('W/"v2"', IMF2)


def test_garbage_validators_are_ignored(watch: ChangeWatch) -> None:
    """Malformed ETag / Last-Modified are not stored and do not erase good ones."""
    d = watch.should_parse(URL, long_page(), headers={"ETag": "not quoted", "Last-Modified": "x"})
    row = snapshot(watch, d.url_digest)
    assert (row.etag, row.last_modified) == (None, None)
    watch.should_parse(URL, long_page(), headers={"ETag": '"good"', "Last-Modified": IMF})
    watch.should_parse(URL, long_page(), headers={"ETag": '"' + "x" * 300 + '"'})
    watch.should_parse(URL, long_page(), etag="bad etag", last_modified="Feb 30 nonsense")
    assert watch.conditional_headers(URL) == {"If-None-Match": '"good"', "If-Modified-Since": IMF}


def test_not_modified_records_unchanged_without_a_body(watch: ChangeWatch) -> None:
    """A 304 counts a fetch and moves last_seen, adds no version, refreshes the validators."""
    first = watch.should_parse(URL, long_page(), headers={"ETag": '"v1"'})
    before = snapshot(watch, first.url_digest)
    watch._clock.advance(60)  # type: ignore[attr-defined]
    for body in (None, b"", ""):
        d = watch.should_parse(URL, body, status=304, headers={"ETag": '"v1b"'})
        assert (d.kind, d.path, bool(d)) == ("unchanged", "not-modified", False)
        assert (d.content_sha256, d.simhash, d.version) == (
            first.content_sha256,
            first.simhash,
            1,
        )
    after = snapshot(watch, first.url_digest)
    assert after.fetch_count == before.fetch_count + 3
    assert after.last_seen > before.last_seen
    assert after.raw_sha256 == before.raw_sha256
    assert (after.version_count, after.etag) == (1, '"v1b"')
    assert len(watch.history(URL)) == 1


def test_not_modified_for_an_unknown_page_writes_nothing(watch: ChangeWatch) -> None:
    """A 304 for a page never stored is a clear error, and nothing is written."""
    with pytest.raises(PageNotStoredError, match="never stored") as info:
        watch.should_parse(URL, None, status=304)
    assert info.value.url == URL
    assert counts(watch) == (0, 0, 0)


def test_not_modified_with_a_body_is_refused(watch: ChangeWatch) -> None:
    """A 304 carrying a body is refused, nothing written."""
    watch.should_parse(URL, long_page())
    with pytest.raises(ValueError, match="304"):
        watch.should_parse(URL, long_page(), status=304)
    assert counts(watch) == (1, 1, 1)


@pytest.mark.parametrize("status", [404, 500, 301, 199, 100, True])
def test_other_statuses_are_refused(watch: ChangeWatch, status: int) -> None:
    """Statuses other than 2xx and 304 raise UnexpectedStatusError naming the status."""
    with pytest.raises(UnexpectedStatusError, match=f"status {status}") as info:
        watch.should_parse(URL, long_page(), status=status)
    assert info.value.status == status
    assert isinstance(info.value, ValueError)
    assert counts(watch) == (0, 0, 0)
    assert watch.should_parse(URL, long_page(), status=203).kind == "new"


def test_many_accepts_pairs_and_triples(watch: ChangeWatch) -> None:
    """should_parse_many takes (url, html) and (url, html, headers) in one batch."""
    decisions = watch.should_parse_many(
        [
            (URL, long_page()),
            ("https://example.com/b", rewrite(), {"ETag": '"b1"'}),
            ("https://example.com/c", rewrite(5), None),
        ]
    )
    assert [d.kind for d in decisions] == ["new", "new", "new"]
    assert watch.conditional_headers("https://example.com/b") == {"If-None-Match": '"b1"'}
    assert watch.conditional_headers(URL) == {}
