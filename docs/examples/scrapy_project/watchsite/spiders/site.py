"""A spider that follows a site's links and extracts only pages that changed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy


class SiteSpider(scrapy.Spider):
    """``scrapy crawl site -a start=URL``: every page of one host, items for changed pages.

    ``response.meta["changewatch"]`` holds the decision: ``kind`` (new, changed, minor,
    unchanged), ``parse`` (false only for unchanged), ``distance``, ``duplicate_of``...
    """

    name = "site"

    def __init__(self, start: str = "https://example.com/", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start]
        self.allowed_domains = [urlsplit(start).hostname or ""]

    def parse(self, response: Any) -> Iterator[Any]:
        decision = response.meta.get("changewatch") or {}
        # Links are followed on every page, changed or not (the duplicate filter keeps each
        # URL to one fetch per crawl).
        yield from response.follow_all(css="a::attr(href)", callback=self.parse)
        if decision.get("parse", True):  # new, changed, minor, or not decided (fail open)
            yield {
                "url": response.url,
                "kind": decision.get("kind"),
                "distance": decision.get("distance"),
                "title": response.css("title::text").get(),
                "headline": response.css("h1::text").get(),
            }
