"""The Scrapy duplicate filter's keys and settings, with real Scrapy requests and crawlers."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from scrapy import FormRequest, Request
from scrapy.utils.request import RequestFingerprinter
from scrapy.utils.test import get_crawler

from changewatch.errors import ConfigError
from changewatch.scrapy import (
    ChangewatchDupeFilter,
    request_key,
    seen_url_for,
)
from changewatch.seen import MemorySeenSet
from changewatch.urls import url_digest

FP = RequestFingerprinter()


class _BodylessFingerprinter:
    """A custom REQUEST_FINGERPRINTER_CLASS that ignores bodies (as some projects do)."""

    def fingerprint(self, request: Any) -> bytes:
        return request.url.encode()[:20].ljust(20, b"-")


def _key(request: Any, fingerprinter: Any = FP) -> tuple[bytes, str]:
    return request_key(request, fingerprinter)


def test_get_is_keyed_by_the_changewatch_url_digest() -> None:
    """A GET's key is url_digest(url): the key mark_seen and the store use."""
    key, how = _key(Request("http://Example.com:80/a?b=2&a=1&utm_source=x#frag"))
    assert how == "url"
    assert key == url_digest("http://example.com/a?a=1&b=2")


def test_equivalent_get_urls_share_a_key_and_different_ones_do_not() -> None:
    """Canonicalisation merges spellings of one page, and only those."""
    a = _key(Request("http://example.com/list?page=2&sort=asc"))[0]
    b = _key(Request("http://EXAMPLE.com/list?sort=asc&page=2&utm_campaign=z"))[0]
    c = _key(Request("http://example.com/list?page=3&sort=asc"))[0]
    assert a == b
    assert a != c


def test_post_is_keyed_by_its_body() -> None:
    """Two POSTs to one URL with other forms are two requests; the same form is one."""
    url = "http://example.com/search"
    one = _key(FormRequest(url, formdata={"q": "bikes"}))
    other = _key(FormRequest(url, formdata={"q": "boats"}))
    again = _key(FormRequest(url, formdata={"q": "bikes"}))
    assert one[1] == "request"
    assert one[0] != other[0]
    assert one == again
    assert one[0] != _key(Request(url))[0]


def test_post_with_tracking_parameter_in_body_is_not_merged() -> None:
    """URL canonicalisation never touches a body: utm_source in a form stays significant."""
    url = "http://example.com/form"
    plain = _key(Request(url, method="POST", body=b"a=1"))[0]
    tracked = _key(Request(url, method="POST", body=b"a=1&utm_source=x"))[0]
    assert plain != tracked


def test_body_digest_keeps_forms_apart_under_a_bodyless_fingerprinter() -> None:
    """A fingerprinter that ignores bodies still yields one key per body."""
    url = "http://example.com/search"
    fp = _BodylessFingerprinter()
    assert fp.fingerprint(Request(url, method="POST", body=b"q=1")) == fp.fingerprint(
        Request(url, method="POST", body=b"q=2")
    )
    a = _key(Request(url, method="POST", body=b"q=1"), fp)[0]
    b = _key(Request(url, method="POST", body=b"q=2"), fp)[0]
    assert a != b


def test_head_and_get_with_body_are_keyed_by_request() -> None:
    """HEAD does not filter the GET after it; a GET with a body is keyed by its body."""
    url = "http://example.com/a"
    get = _key(Request(url))
    head = _key(Request(url, method="HEAD"))
    with_body = _key(Request(url, body=b'{"query": 1}'))
    assert head[1] == "request"
    assert with_body[1] == "request"
    assert len({get[0], head[0], with_body[0]}) == 3


def test_invalid_url_falls_back_to_the_request_key() -> None:
    """A URL changewatch cannot canonicalise (data:) is still deduplicated, by request."""
    first = _key(Request("data:text/plain,hello"))
    assert first[1] == "invalid_url"
    assert first == _key(Request("data:text/plain,hello"))
    assert first[0] != _key(Request("data:text/plain,bye"))[0]
    assert len(first[0]) == 16


def _filter(**settings: Any) -> tuple[ChangewatchDupeFilter, Any]:
    crawler = get_crawler(settings_dict=settings)
    return ChangewatchDupeFilter.from_crawler(crawler), crawler.stats


def test_request_seen_filters_repeats_and_counts_them() -> None:
    """The second request for a page is seen; stats count new and filtered."""
    dupefilter, stats = _filter()
    assert dupefilter.request_seen(Request("http://example.com/a?x=1&y=2")) is False
    assert dupefilter.request_seen(Request("http://example.com/a?y=2&x=1")) is True
    assert dupefilter.request_seen(Request("http://example.com/b")) is False
    assert stats.get_value("changewatch/dupefilter/new") == 2
    assert stats.get_value("changewatch/dupefilter/filtered") == 1
    dupefilter.close("finished")


def test_dont_filter_is_neither_filtered_nor_recorded() -> None:
    """dont_filter requests always pass and leave no trace in the seen-set."""
    seen = MemorySeenSet()
    dupefilter = ChangewatchDupeFilter(seen)
    url = "http://example.com/login"
    assert dupefilter.request_seen(Request(url, dont_filter=True)) is False
    assert dupefilter.request_seen(Request(url, dont_filter=True)) is False
    assert url_digest(url) not in seen
    assert dupefilter.request_seen(Request(url)) is False
    assert dupefilter.request_seen(Request(url)) is True


def test_log_reports_the_first_duplicate_or_all_with_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Like RFPDupeFilter: one message, or one per duplicate with DUPEFILTER_DEBUG."""
    for debug, expected in ((False, 1), (True, 3)):
        dupefilter, stats = _filter(DUPEFILTER_DEBUG=debug)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="changewatch.scrapy"):
            for _ in range(3):
                dupefilter.log(Request("http://example.com/a"), None)
        messages = [r.getMessage() for r in caplog.records if "Filtered duplicate" in r.message]
        assert len(messages) == expected
        assert stats.get_value("dupefilter/filtered") == 3


def test_seen_url_defaults_to_memory_or_a_file_in_jobdir(tmp_path: Path) -> None:
    """Unset: memory: without JOBDIR, an exact file in JOBDIR with it."""
    assert seen_url_for(get_crawler().settings) == "memory:"
    settings = get_crawler(settings_dict={"JOBDIR": str(tmp_path / "job")}).settings
    assert seen_url_for(settings) == f"file:{tmp_path / 'job' / 'changewatch.seen'}"


def test_fileless_file_url_goes_into_jobdir_or_is_refused(tmp_path: Path) -> None:
    """file:?kind=bloom… lands in JOBDIR; without JOBDIR it is a ConfigError naming it."""
    bloom = "file:?kind=bloom&capacity=1000"
    settings = get_crawler(
        settings_dict={"JOBDIR": str(tmp_path), "CHANGEWATCH_SEEN_URL": bloom}
    ).settings
    assert (
        seen_url_for(settings) == f"file:{tmp_path / 'changewatch.seen'}?kind=bloom&capacity=1000"
    )
    with pytest.raises(ConfigError, match="JOBDIR"):
        seen_url_for(get_crawler(settings_dict={"CHANGEWATCH_SEEN_URL": bloom}).settings)
    explicit = f"file:{tmp_path / 'mine.seen'}"
    assert seen_url_for(get_crawler(settings_dict={"CHANGEWATCH_SEEN_URL": explicit}).settings) == (
        explicit
    )


def test_jobdir_filter_persists_across_instances(tmp_path: Path) -> None:
    """A filter closed and rebuilt on the same JOBDIR remembers what it scheduled."""
    settings = {"JOBDIR": str(tmp_path), "CHANGEWATCH_SEEN_URL": "file:?kind=bloom"}
    first, _ = _filter(**settings)
    assert first.request_seen(Request("http://example.com/a")) is False
    first.close("shutdown")
    second, _ = _filter(**settings)
    assert second.request_seen(Request("http://example.com/a")) is True
    assert second.request_seen(Request("http://example.com/b")) is False
    second.close("finished")


def test_bad_seen_on_error_setting_is_refused() -> None:
    """CHANGEWATCH_SEEN_ON_ERROR accepts raise or assume-new only."""
    with pytest.raises(ConfigError, match="CHANGEWATCH_SEEN_ON_ERROR"):
        _filter(CHANGEWATCH_SEEN_ON_ERROR="ignore")


def test_canon_policy_setting_shapes_the_keys(tmp_path: Path) -> None:
    """CHANGEWATCH_CANON_POLICY's rules apply to the filter's keys (here: drop_params)."""
    policy = tmp_path / "policy.toml"
    policy.write_text('drop_params = ["ref_src"]\n')
    dupefilter, _ = _filter(CHANGEWATCH_CANON_POLICY=str(policy))
    assert dupefilter.request_seen(Request("http://example.com/a?id=1")) is False
    assert dupefilter.request_seen(Request("http://example.com/a?id=1&ref_src=mail")) is True
    plain, _ = _filter()
    assert plain.request_seen(Request("http://example.com/a?id=1")) is False
    assert plain.request_seen(Request("http://example.com/a?id=1&ref_src=mail")) is False
