"""ChangewatchDupeFilter as Scrapy's own dupefilter tests exercise RFPDupeFilter, and beyond.

Real Scrapy crawlers, schedulers, requests, signals and fingerprinters; real files for
``JOBDIR``; the shared Redis for the retry set shared by two crawl processes' filters.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy import FormRequest, Request
from scrapy.core.scheduler import Scheduler
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.internet.error import ConnectionLost

from changewatch.errors import ConfigError
from changewatch.scrapy import (
    ChangewatchDupeFilter,
    ChangewatchFailureMiddleware,
    retry_url_for,
)
from changewatch.urls import url_digest

from ..redis_fixtures import delete_keys, redis_test_url, unique_key, with_query

DUPEFILTER = "changewatch.scrapy.ChangewatchDupeFilter"


class CaseInsensitiveFingerprinter:
    """A REQUEST_FINGERPRINTER_CLASS that ignores the case of URLs (Scrapy's own test case)."""

    def fingerprint(self, request: Any) -> bytes:
        return hashlib.sha1(request.url.lower().encode()).digest()


class ApiParametersFingerprinter:
    """A fingerprinter that adds meaning: the API parameters in ``meta`` (scrapy-zyte-api)."""

    def fingerprint(self, request: Any) -> bytes:
        params = repr(sorted(request.meta.get("api", {}).items()))
        return hashlib.sha1(f"{request.url} {params}".encode()).digest()


def _filter(**settings: Any) -> tuple[ChangewatchDupeFilter, Any]:
    crawler = get_crawler(settings_dict={"DUPEFILTER_CLASS": DUPEFILTER, **settings})
    return ChangewatchDupeFilter.from_crawler(crawler), crawler


def _fail(crawler: Any, request: Request, status: int = 503) -> None:
    """The final response of a request, as the engine signals it after RetryMiddleware."""
    from scrapy import signals

    crawler.signals.send_catch_log(
        signal=signals.response_received,
        response=Response(request.url, status=status, request=request),
        request=request,
        spider=None,
    )


# --- Scrapy's dupefilter behaviours -------------------------------------------------------------


def test_the_scheduler_builds_it_from_the_crawler_with_debug() -> None:
    """Scheduler.from_crawler builds a ChangewatchDupeFilter and passes DUPEFILTER_DEBUG."""
    crawler = get_crawler(settings_dict={"DUPEFILTER_CLASS": DUPEFILTER, "DUPEFILTER_DEBUG": True})
    scheduler = Scheduler.from_crawler(crawler)
    assert isinstance(scheduler.df, ChangewatchDupeFilter)
    assert scheduler.df.debug is True
    scheduler.df.close("finished")


def test_filter() -> None:
    """A request is new once; another URL is new; the same URL again is seen."""
    dupefilter, _ = _filter()
    dupefilter.open()
    r1, r2, r3 = (Request(f"http://scrapytest.org/{n}") for n in (1, 2, 2))
    assert not dupefilter.request_seen(r1)
    assert dupefilter.request_seen(r1)
    assert not dupefilter.request_seen(r2)
    assert dupefilter.request_seen(r3)
    dupefilter.close("finished")


@pytest.mark.parametrize("query", ["", "?kind=bloom&capacity=1000", "?max_age=7d&window=1d"])
def test_jobdir_persists_what_was_scheduled(tmp_path: Path, query: str) -> None:
    """With JOBDIR, a filter closed and built again remembers r1 and learns r2."""
    settings = {"JOBDIR": str(tmp_path), "CHANGEWATCH_SEEN_URL": f"file:{query}"}
    r1, r2 = Request("http://scrapytest.org/1"), Request("http://scrapytest.org/2")
    first, _ = _filter(**settings)
    assert not first.request_seen(r1)
    assert first.request_seen(r1)
    first.close("finished")
    second, _ = _filter(**settings)
    assert second.request_seen(r1)
    assert not second.request_seen(r2)
    assert second.request_seen(r2)
    second.close("finished")


def test_a_custom_fingerprinter_is_honoured_for_gets() -> None:
    """A case-insensitive REQUEST_FINGERPRINTER_CLASS makes /index.html and /INDEX.html one."""
    r1 = Request("http://scrapytest.org/index.html")
    r2 = Request("http://scrapytest.org/INDEX.html")
    default, _ = _filter()
    assert not default.request_seen(r1)
    assert not default.request_seen(r2)
    custom, crawler = _filter(REQUEST_FINGERPRINTER_CLASS=CaseInsensitiveFingerprinter)
    assert custom.key_by == "fingerprint"
    assert not custom.request_seen(r1)
    assert custom.request_seen(r2)
    assert crawler.stats.get_value("changewatch/dupefilter/by_request") == 2


def test_a_fingerprinter_that_adds_meaning_keeps_requests_apart() -> None:
    """Two requests to one URL with other API parameters are two requests, not one."""
    dupefilter, _ = _filter(REQUEST_FINGERPRINTER_CLASS=ApiParametersFingerprinter)
    url = "http://shop.example/item/7"
    assert not dupefilter.request_seen(Request(url, meta={"api": {"browserHtml": True}}))
    assert not dupefilter.request_seen(Request(url, meta={"api": {"screenshot": True}}))
    assert dupefilter.request_seen(Request(url, meta={"api": {"screenshot": True}}))


def test_canonical_url_keying_can_be_chosen_explicitly() -> None:
    """CHANGEWATCH_DUPEFILTER_KEY="url": a custom fingerprinter, but canonical-URL keys."""
    dupefilter, _ = _filter(
        REQUEST_FINGERPRINTER_CLASS=ApiParametersFingerprinter, CHANGEWATCH_DUPEFILTER_KEY="url"
    )
    url = "http://shop.example/item/7?utm_source=mail"
    assert not dupefilter.request_seen(Request(url, meta={"api": {"a": 1}}))
    assert dupefilter.request_seen(Request("http://shop.example/item/7", meta={"api": {"b": 2}}))
    assert url_digest(url) in dupefilter.seen
    keyed, _ = _filter(CHANGEWATCH_DUPEFILTER_KEY="fingerprint")
    assert keyed.key_by == "fingerprint"
    with pytest.raises(ConfigError, match="CHANGEWATCH_DUPEFILTER_KEY"):
        _filter(CHANGEWATCH_DUPEFILTER_KEY="host")


def test_log_and_stats_like_rfpdupefilter(caplog: pytest.LogCaptureFixture) -> None:
    """As the scheduler calls it: the first duplicate logged (all with DEBUG, with the referer)."""
    for debug in (False, True):
        crawler = get_crawler(
            settings_dict={"DUPEFILTER_CLASS": DUPEFILTER, "DUPEFILTER_DEBUG": debug}
        )
        scheduler = Scheduler.from_crawler(crawler)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="changewatch.scrapy"):
            for _ in range(3):  # Scheduler.enqueue_request's two calls
                request = Request(
                    "http://scrapytest.org/a", headers={"Referer": "http://r.example/"}
                )
                if scheduler.df.request_seen(request):
                    scheduler.df.log(request, None)
        messages = [r.getMessage() for r in caplog.records if "Filtered duplicate" in r.message]
        assert len(messages) == (2 if debug else 1)
        if debug:
            assert all("referer: http://r.example/" in m for m in messages)
        else:
            assert "no more duplicates will be shown" in messages[0]
        assert crawler.stats.get_value("dupefilter/filtered") == 2
        assert crawler.stats.get_value("changewatch/dupefilter/filtered") == 2
        assert crawler.stats.get_value("changewatch/dupefilter/new") == 1
        scheduler.df.close("finished")


def test_request_bodies_are_part_of_a_requests_identity() -> None:
    """POSTs with other bodies are two requests, the same body one; a GET is another."""
    dupefilter, _ = _filter()
    url = "http://scrapytest.org/search"
    assert not dupefilter.request_seen(FormRequest(url, formdata={"q": "bikes"}))
    assert not dupefilter.request_seen(FormRequest(url, formdata={"q": "boats"}))
    assert dupefilter.request_seen(FormRequest(url, formdata={"q": "bikes"}))
    assert not dupefilter.request_seen(Request(url))
    assert not dupefilter.request_seen(Request(url, method="POST", body=b'{"q": 1}'))
    assert dupefilter.request_seen(Request(url, method="POST", body=b'{"q": 1}'))


# --- finally failed requests ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "query", ["", "?kind=bloom&capacity=1000", "?kind=bloom&capacity=1000&max_age=7d"]
)
def test_a_failed_request_is_scheduled_again_by_the_next_crawl(tmp_path: Path, query: str) -> None:
    """A 503 (exact: forgotten; Bloom: in the retry set) stays filtered now, is new next crawl."""
    settings = {"JOBDIR": str(tmp_path), "CHANGEWATCH_SEEN_URL": f"file:{query}"}
    failing, fine = Request("http://site.example/flaky"), Request("http://site.example/ok")
    first, crawler = _filter(**settings)
    assert not first.request_seen(failing)
    assert not first.request_seen(fine)
    _fail(crawler, failing, 503)
    _fail(crawler, fine, 200)
    assert first.request_seen(failing)  # no refetch loop within the crawl
    assert crawler.stats.get_value("changewatch/dupefilter/forgotten") == 1
    assert crawler.stats.get_value("changewatch/dupefilter/forgotten/503") == 1
    first.close("finished")
    assert (tmp_path / "changewatch.seen.retry").exists() == ("bloom" in query)
    second, crawler = _filter(**settings)
    assert not second.request_seen(failing)
    assert second.request_seen(failing)
    assert second.request_seen(fine)
    if "bloom" in query:
        assert crawler.stats.get_value("changewatch/dupefilter/retried") == 1
    second.close("finished")
    third, _ = _filter(**settings)
    assert third.request_seen(failing)  # it was fetched again: seen for good now
    third.close("finished")


def test_download_errors_reach_the_filter_through_the_failure_middleware() -> None:
    """ChangewatchFailureMiddleware.process_exception: the request is forgotten, by reason."""
    dupefilter, crawler = _filter()
    middleware = ChangewatchFailureMiddleware.from_crawler(crawler)
    request = Request("http://site.example/down")
    dupefilter.request_seen(request)
    assert middleware.process_exception(request, ConnectionLost()) is None
    assert url_digest(request.url) not in dupefilter.seen
    assert crawler.stats.get_value("changewatch/dupefilter/forgotten/ConnectionLost") == 1
    assert dupefilter.request_seen(request)


def test_forget_statuses_and_the_switch_are_settings() -> None:
    """CHANGEWATCH_FORGET_STATUSES chooses the statuses; CHANGEWATCH_FORGET_FAILED=False: none."""
    dupefilter, crawler = _filter(CHANGEWATCH_FORGET_STATUSES=[404])
    gone, busy = Request("http://site.example/gone"), Request("http://site.example/busy")
    dupefilter.request_seen(gone)
    dupefilter.request_seen(busy)
    _fail(crawler, gone, 404)
    _fail(crawler, busy, 503)
    assert url_digest(gone.url) not in dupefilter.seen
    assert url_digest(busy.url) in dupefilter.seen
    off, crawler = _filter(CHANGEWATCH_FORGET_FAILED=False)
    off.request_seen(busy)
    _fail(crawler, busy, 503)
    assert url_digest(busy.url) in off.seen
    assert off.retry is None
    with pytest.raises(ConfigError, match="CHANGEWATCH_FORGET_STATUSES"):
        _filter(CHANGEWATCH_FORGET_STATUSES=["soon"])


def test_a_routed_seen_set_forgets_exact_hosts_and_retries_the_rest(tmp_path: Path) -> None:
    """Routed: a failed URL of an exact host is forgotten, of another host put in the retry set."""
    url = f"file:{tmp_path}/r.seen?kind=route&exact_hosts=shop.example&capacity=1000"
    settings = {"CHANGEWATCH_SEEN_URL": url}
    exact, other = Request("http://shop.example/a"), Request("http://blog.example/b")
    first, crawler = _filter(**settings)
    first.request_seen(exact)
    first.request_seen(other)
    _fail(crawler, exact)
    _fail(crawler, other)
    assert url_digest(exact.url) not in first.seen.routes["exact"]  # type: ignore[attr-defined]
    assert url_digest(other.url) in first.seen.routes["bloom"]  # type: ignore[attr-defined]
    first.close("finished")
    second, _ = _filter(**settings)
    assert (second.request_seen(exact), second.request_seen(other)) == (False, False)
    assert (second.request_seen(exact), second.request_seen(other)) == (True, True)
    second.close("finished")


def test_two_processes_share_the_retry_set_and_one_schedules_it() -> None:
    """Redis: a request failed in crawl 1 is scheduled by exactly one of crawl 2's two filters."""
    key = unique_key("scrapy-retry")
    url = with_query(redis_test_url(), f"kind=bloom&capacity=1000&key={key}")
    request = Request("http://site.example/flaky")
    try:
        first, crawler = _filter(CHANGEWATCH_SEEN_URL=url)
        first.request_seen(request)
        _fail(crawler, request)
        first.close("finished")
        workers = [_filter(CHANGEWATCH_SEEN_URL=url)[0] for _ in range(2)]
        assert sorted(w.request_seen(request) for w in workers) == [False, True]
        for worker in workers:
            worker.close("finished")
    finally:
        client = redis.Redis.from_url(redis_test_url())
        delete_keys(client, key)
        client.close()


def test_retry_urls_sit_beside_the_seen_set() -> None:
    """The retry set's URL: memory, a .retry file, or key:retry on the same Redis server."""
    assert retry_url_for({}, "memory:?kind=bloom") == "memory:"
    assert (
        retry_url_for({}, "file:/j/changewatch.seen?kind=bloom") == "file:/j/changewatch.seen.retry"
    )
    assert retry_url_for({}, "redis://h/0?kind=bloom&key=k") == "redis://h/0?kind=set&key=k%3Aretry"
    mine = {"CHANGEWATCH_RETRY_SEEN_URL": "memory:"}
    assert retry_url_for(mine, "redis://h/0?kind=bloom") == "memory:"
