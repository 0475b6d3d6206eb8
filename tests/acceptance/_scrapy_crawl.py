"""Run one real Scrapy crawl in this process and write what happened as JSON.

Usage: ``python _scrapy_crawl.py CONFIG.json``. The config holds ``start_urls``, ``settings``
(Scrapy settings, merged over quick local-crawl defaults) and ``out`` (the result file). The
spider follows every ``<a href>`` on the same host; every start request goes through the
duplicate filter (``dont_filter=False``), so several processes may start at one URL. On close
it writes ``{"reason", "stats", "parsed": {url: meta["changewatch"] or null}, "failed": [url]}``
(requests whose download failed, handled by an errback so Scrapy logs no traceback).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess

QUICK_SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_DELAY": 0,
    "ROBOTSTXT_OBEY": False,
    "RETRY_ENABLED": False,
    "COOKIES_ENABLED": False,
    "CONCURRENT_REQUESTS": 4,
}


class LinkSpider(scrapy.Spider):
    """Follows links, records the pages that reach ``parse`` and their decisions."""

    name = "links"

    def __init__(self, first: list[str], out: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.first = first
        self.out = out
        self.parsed: dict[str, Any] = {}
        self.failed: list[str] = []

    async def start(self) -> Any:
        for url in self.first:
            yield scrapy.Request(url, dont_filter=False, errback=self.download_failed)

    def parse(self, response: Any) -> Any:
        self.parsed[response.url] = response.meta.get("changewatch")
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse, errback=self.download_failed)

    def download_failed(self, failure: Any) -> None:
        self.failed.append(failure.request.url)

    def closed(self, reason: str) -> None:
        stats = dict(self.crawler.stats.get_stats())
        Path(self.out).write_text(
            json.dumps(
                {"reason": reason, "stats": stats, "parsed": self.parsed, "failed": self.failed},
                default=str,
            )
        )


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    process = CrawlerProcess(settings={**QUICK_SETTINGS, **config["settings"]})
    process.crawl(LinkSpider, first=config["start_urls"], out=config["out"])
    process.start()


if __name__ == "__main__":
    main(sys.argv[1])
