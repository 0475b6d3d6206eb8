"""Scrapy settings of the example project: changewatch is switched on by the first block.

Run from this directory:  scrapy crawl site -a start=https://example.com/ -O items.jsonl
"""

BOT_NAME = "watchsite"
SPIDER_MODULES = ["watchsite.spiders"]
NEWSPIDER_MODULE = "watchsite.spiders"

# -- changewatch -----------------------------------------------------------------------------
# Deduplicate scheduled requests through a changewatch seen-set...
DUPEFILTER_CLASS = "changewatch.scrapy.ChangewatchDupeFilter"
# ...and decide, per HTML response, whether the page changed since the last crawl.
# 580: after HttpCompressionMiddleware (590) and RedirectMiddleware (600) have run.
DOWNLOADER_MIDDLEWARES = {"changewatch.scrapy.ChangewatchMiddleware": 580}

# The snapshot store: a SQLite file here; Postgres for many crawler processes, e.g.
# "postgresql+psycopg://crawler@db.internal/changewatch" (run `changewatch db upgrade` once).
CHANGEWATCH_DATABASE_URL = "sqlite:///changewatch.db"

# The seen-set behind the duplicate filter. A Bloom filter in JOBDIR (a few bits per URL,
# saved on close, so `-s JOBDIR=crawls/site-1` pauses and resumes); without JOBDIR use a
# path ("file:site.seen?kind=bloom&…"), or Redis to share one filter between processes:
# "redis://127.0.0.1:6379/0?kind=bloom&key=watchsite&capacity=10000000&error_rate=0.001".
CHANGEWATCH_SEEN_URL = "memory:"

# A link-following crawl must read the links of unchanged pages too: pass them to the
# spider, marked. A recrawl driven by a sitemap or a URL list can drop them ("drop").
CHANGEWATCH_UNCHANGED = "pass"

# -- plain Scrapy ----------------------------------------------------------------------------
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_DELAY = 0.25
TELNETCONSOLE_ENABLED = False
FEED_EXPORT_ENCODING = "utf-8"
