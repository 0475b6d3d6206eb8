"""ChangewatchMiddleware on real Scrapy responses and a real SQLite store."""

from __future__ import annotations

import json
import logging
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.test import get_crawler

from changewatch.scrapy import ChangewatchMiddleware, UnchangedResponse

PAGE = "<html><body><h1>Prices</h1><p>Bikes from 300 euros, boats from 9000.</p></body></html>"

Make = Callable[..., tuple[ChangewatchMiddleware, Any]]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Make]:
    """Factory of middlewares built by from_crawler over one SQLite store; closed after."""
    built: list[ChangewatchMiddleware] = []

    def make_(**settings: Any) -> tuple[ChangewatchMiddleware, Any]:
        crawler = get_crawler(
            settings_dict={
                "CHANGEWATCH_DATABASE_URL": f"sqlite:///{tmp_path / 'cw.db'}",
                **settings,
            }
        )
        middleware = ChangewatchMiddleware.from_crawler(crawler)
        built.append(middleware)
        return middleware, crawler.stats

    yield make_
    for middleware in built:
        middleware.spider_closed()


def _response(
    url: str, body: bytes, content_type: str | None = "text/html; charset=utf-8", status: int = 200
) -> tuple[Request, Any]:
    request = Request(url)
    headers = {"Content-Type": content_type} if content_type else {}
    cls = HtmlResponse if content_type is None or "html" in content_type else TextResponse
    return request, cls(url, body=body, headers=headers, status=status, request=request)


def test_new_then_unchanged_is_dropped(make: Make) -> None:
    """A first fetch is new (meta set); the same page again raises UnchangedResponse."""
    middleware, stats = make()
    request, response = _response("http://example.com/p", PAGE.encode())
    assert middleware.process_response(request, response) is response
    meta = request.meta["changewatch"]
    assert meta["kind"] == "new"
    assert meta["parse"] is True
    assert json.loads(json.dumps(meta)) == meta
    assert pickle.loads(pickle.dumps(meta)) == meta
    request, response = _response("http://example.com/p", PAGE.encode())
    with pytest.raises(UnchangedResponse) as caught:
        middleware.process_response(request, response)
    assert caught.value.decision["kind"] == "unchanged"
    assert stats.get_value("changewatch/new") == 1
    assert stats.get_value("changewatch/unchanged") == 1
    assert stats.get_value("changewatch/dropped") == 1


def test_a_redirect_stub_of_a_stored_page_is_never_dropped(make: Make) -> None:
    """A meta-refresh stub in place of a stored page is unchanged (the stored version kept)
    but passes, marked ``redirect_to``, so that MetaRefreshMiddleware or the spider follows
    it to the page it names."""
    middleware, stats = make()
    request, response = _response("http://example.com/p", PAGE.encode())
    middleware.process_response(request, response)
    stub = b'<meta http-equiv="refresh" content="0; url=/p/"><p>Redirecting</p>'
    request, response = _response("http://example.com/p", stub)
    assert middleware.process_response(request, response) is response
    meta = request.meta["changewatch"]
    assert (meta["kind"], meta["path"], meta["parse"]) == ("unchanged", "redirect", False)
    assert meta["redirect_to"] == "http://example.com/p/"
    assert stats.get_value("changewatch/redirect") == 1
    assert stats.get_value("changewatch/dropped") is None


def test_pass_mode_attaches_unchanged(make: Make) -> None:
    """With CHANGEWATCH_UNCHANGED = "pass" an unchanged page reaches the spider, marked."""
    middleware, stats = make(CHANGEWATCH_UNCHANGED="pass")
    for _ in range(2):
        request, response = _response("http://example.com/p", PAGE.encode())
        assert middleware.process_response(request, response) is response
    assert request.meta["changewatch"]["kind"] == "unchanged"
    assert stats.get_value("changewatch/dropped") is None


def test_changed_and_minor_pages_are_marked(make: Make) -> None:
    """An edit is decided changed (or minor) and the page passes with its distance."""
    middleware, stats = make()
    url = "http://example.com/p"
    middleware.process_response(*_response(url, PAGE.encode()))
    request, response = _response(url, PAGE.replace("Prices", "Old price list").encode())
    assert middleware.process_response(request, response) is response
    assert request.meta["changewatch"]["kind"] in ("minor", "changed")
    assert request.meta["changewatch"]["distance"] > 0
    assert stats.get_value("changewatch/changed", 0) + stats.get_value("changewatch/minor", 0) == 1


def test_non_html_and_non_200_pass_untouched(make: Make) -> None:
    """JSON, a 404, a POST's answer and dont_changewatch requests are not decided nor counted."""
    middleware, stats = make()
    cases = [
        _response("http://example.com/a.json", b'{"a": 1}', "application/json"),
        _response("http://example.com/missing", PAGE.encode(), status=404),
    ]
    skipped = Request("http://example.com/skip", meta={"dont_changewatch": True})
    posted = Request("http://example.com/search", method="POST", body=b"q=bikes")
    for request in (skipped, posted):
        cases.append((request, HtmlResponse(request.url, body=PAGE.encode(), request=request)))
    for request, response in cases:
        assert middleware.process_response(request, response) is response
        assert "changewatch" not in request.meta
    assert not [k for k in stats.get_stats() if k.startswith("changewatch/")]


def test_xhtml_and_headerless_html_are_decided(make: Make) -> None:
    """application/xhtml+xml is HTML; so is a response Scrapy typed as HTML without a header."""
    middleware, _ = make()
    for request, response in (
        _response("http://example.com/x", PAGE.encode(), "application/xhtml+xml"),
        _response("http://example.com/h", PAGE.encode(), None),
    ):
        middleware.process_response(request, response)
        assert request.meta["changewatch"]["kind"] == "new"


def test_content_type_charset_reaches_should_parse(make: Make) -> None:
    """One text in windows-1251, then UTF-8, labelled only by the header: unchanged."""
    middleware, _ = make(CHANGEWATCH_UNCHANGED="pass")
    text = "<html><body><p>Цены на велосипеды и лодки</p></body></html>"
    url = "http://example.com/ru"
    middleware.process_response(
        *_response(url, text.encode("cp1251"), "text/html; charset=windows-1251")
    )
    request, response = _response(url, text.encode("utf-8"), "text/html; charset=utf-8")
    middleware.process_response(request, response)
    assert request.meta["changewatch"]["kind"] == "unchanged"
    assert request.meta["changewatch"]["path"] == "normalised"


def test_errors_fail_open_and_are_counted(make: Make, caplog: pytest.LogCaptureFixture) -> None:
    """A page changewatch cannot decide passes to the spider; errors counted, warned once."""
    middleware, stats = make(CHANGEWATCH_MAX_PAGE_BYTES=64)
    with caplog.at_level(logging.DEBUG, logger="changewatch.scrapy"):
        for n in range(3):
            request, response = _response(f"http://example.com/{n}", PAGE.encode())
            assert middleware.process_response(request, response) is response
            assert request.meta["changewatch"]["kind"] is None
            assert "PageTooLargeError" in request.meta["changewatch"]["error"]
    assert stats.get_value("changewatch/errors") == 3
    assert stats.get_value("changewatch/errors/PageTooLargeError") == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1


def test_bad_unchanged_setting_is_refused(make: Make) -> None:
    """CHANGEWATCH_UNCHANGED accepts drop or pass only, with a message naming it."""
    with pytest.raises(ValueError, match="CHANGEWATCH_UNCHANGED"):
        make(CHANGEWATCH_UNCHANGED="skip")


def _with_validators(url: str, body: bytes, **headers: str) -> tuple[Request, Any]:
    request = Request(url)
    response = HtmlResponse(
        url,
        body=body,
        headers={"Content-Type": "text/html; charset=utf-8", **headers},
        request=request,
    )
    return request, response


def test_conditional_get_sends_stored_validators_and_records_a_304(make: Make) -> None:
    """With CHANGEWATCH_CONDITIONAL_GET: the stored ETag/Last-Modified go out as
    If-None-Match/If-Modified-Since; the 304 answer is unchanged, dropped, counted."""
    middleware, stats = make(CHANGEWATCH_CONDITIONAL_GET=True)
    url = "http://example.com/p"
    fresh = Request(url)
    middleware.process_request(fresh)
    assert b"If-None-Match" not in fresh.headers  # never stored: nothing to send
    last_modified = "Wed, 21 Oct 2026 07:28:00 GMT"
    request, response = _with_validators(
        url, PAGE.encode(), ETag='"v1"', **{"Last-Modified": last_modified}
    )
    assert middleware.process_response(request, response) is response
    again = Request(url)
    middleware.process_request(again)
    assert again.headers[b"If-None-Match"] == b'"v1"'
    assert again.headers[b"If-Modified-Since"] == last_modified.encode()
    not_modified = HtmlResponse(url, body=b"", status=304, request=again)
    with pytest.raises(UnchangedResponse) as caught:
        middleware.process_response(again, not_modified)
    assert caught.value.decision["kind"] == "unchanged"
    assert caught.value.decision["path"] == "not-modified"
    history = middleware.watch.history(url)
    assert len(history) == 1  # a 304 is a fetch, not a version
    assert stats.get_value("changewatch/conditional") == 1
    assert stats.get_value("changewatch/not_modified") == 1
    assert stats.get_value("changewatch/unchanged") == 1


def test_conditional_get_is_off_by_default_and_respects_the_spider(make: Make) -> None:
    """Off by default; on, a request with its own validators or dont_changewatch is left
    alone, and a 304 the middleware did not ask for passes untouched."""
    url = "http://example.com/p"
    middleware, _ = make()
    request, response = _with_validators(url, PAGE.encode(), ETag='"v1"')
    middleware.process_response(request, response)
    plain = Request(url)
    middleware.process_request(plain)
    assert b"If-None-Match" not in plain.headers
    middleware, _ = make(CHANGEWATCH_CONDITIONAL_GET=True)
    own = Request(url, headers={"If-None-Match": '"mine"'})
    middleware.process_request(own)
    assert own.headers[b"If-None-Match"] == b'"mine"'
    skipped = Request(url, meta={"dont_changewatch": True})
    middleware.process_request(skipped)
    assert b"If-None-Match" not in skipped.headers
    unasked = HtmlResponse(url, body=b"", status=304, request=own)
    assert middleware.process_response(own, unasked) is unasked
