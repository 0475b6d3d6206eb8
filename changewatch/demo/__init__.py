"""``changewatch demo``: a small bundled website, crawled twice on the embedded default.

:func:`run_demo` serves the site on ``127.0.0.1``, crawls it with a SQLite store and file
seen-sets, changes it (noise on every page, a one-sentence edit, a rewrite, a page added and
one removed), crawls it again, and returns a :class:`DemoReport` with every decision.
"""

from changewatch.demo.crawl import (
    OUTCOMES,
    CrawlReport,
    DemoReport,
    PageHistory,
    PageOutcome,
    run_demo,
)

__all__ = ["OUTCOMES", "CrawlReport", "DemoReport", "PageHistory", "PageOutcome", "run_demo"]
