"""Benchmark a Scrapy crawl of generated local URLs: RFPDupeFilter vs ChangewatchDupeFilter.

    python benchmarks/scrapy_crawl.py               # 200,000 URLs (minutes per row)
    python benchmarks/scrapy_crawl.py --urls 20000
    python benchmarks/scrapy_crawl.py --quick       # 2,000 URLs, a smoke test
        [--redis redis://127.0.0.1:6379/15]   (or $CHANGEWATCH_BENCH_REDIS_URL)
    python benchmarks/scrapy_crawl.py --middleware --urls 5000   # the middleware instead

A fast asyncio HTTP/1.1 server (keep-alive, its own process) serves ``/N`` for N below
``--urls``: a tiny HTML page linking to its five children 5N+1…5N+5 (a tree over every URL)
and to three pages already linked elsewhere (the root, its parent, a pseudo-random page),
so the duplicate filter sees about four requests per page, three of them duplicates. The
spider follows every link, extracting them with one regular expression (the spider's own
cost stays small and equal in every row).

Each row is one crawl of every URL in its own Scrapy process (so a row's memory is its own):

* ``RFPDupeFilter`` — Scrapy's default, the peer: SHA-1 fingerprints in a Python set;
* ``changewatch file Bloom`` — ``file:…?kind=bloom&capacity=URLS&error_rate=0.001``;
* ``changewatch Redis Bloom`` — the same filter in Redis (a fresh key, deleted after).

Figures: peak RSS of the crawler process (``ru_maxrss`` from ``wait4``: imports included —
``import changewatch`` alone loads SQLAlchemy, NumPy and selectolax), the RSS growth from the
first request to the close (the filter's own memory, and the scheduler's), responses per
second over the same span, and pages missed (a Bloom false positive drops a page: the price
of a few bits per URL); peak RSS and rate with their ratios to RFPDupeFilter. One run per
row: a crawl takes minutes at full size on a shared machine, so read the ratios, not the
third digit.

``--middleware`` measures ChangewatchMiddleware instead (RFPDupeFilter in every row): a crawl
without it (the peer), then with it on SQLite a first crawl (every page new) and a second
(every page unchanged, passed on to the spider), decided on the reactor thread, then in the
reactor's thread pool (``CHANGEWATCH_THREADED``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from argparse import SUPPRESS, ArgumentParser, Namespace
from pathlib import Path
from typing import Any

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
FULL_URLS = 200_000
QUICK_URLS = 2_000
FANOUT = 5
HERE = Path(__file__).resolve()
LINK = re.compile(rb'href="(/\d+)"')


# -- the server (a child process) ---------------------------------------------------------


def page(n: int, total: int) -> bytes:
    """The HTML of page ``n``: links to its children and to three already-linked pages."""
    children = [c for c in range(FANOUT * n + 1, FANOUT * n + FANOUT + 1) if c < total]
    others = [0, max(0, (n - 1) // FANOUT), (n * 7919) % total]
    links = "".join(f'<a href="/{k}">{k}</a> ' for k in children + others)
    return (
        f"<html><head><title>{n}</title></head><body><p>page {n}</p>{links}</body></html>".encode()
    )


async def _serve(total: int, ready: Path) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                try:
                    n = int(path[1:])
                except ValueError:
                    n = -1
                if 0 <= n < total:
                    body, status = page(n, total), b"200 OK"
                else:
                    body, status = b"not found", b"404 Not Found"
                writer.write(
                    b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=512)
    port = server.sockets[0].getsockname()[1]
    ready.write_text(str(port))
    async with server:
        await server.serve_forever()


# -- the crawler (a child process) ------------------------------------------------------------


def _crawl(config_path: str) -> None:
    import scrapy
    from scrapy.crawler import CrawlerProcess

    config = json.loads(Path(config_path).read_text())
    base = config["base"]

    class TreeSpider(scrapy.Spider):
        name = "tree"

        async def start(self) -> Any:
            # The duplicate filter and every import are in place: the crawl starts here.
            self.started = time.perf_counter()
            self.rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            yield scrapy.Request(base + "/0")

        def parse(self, response: Any) -> Any:
            for path in LINK.findall(response.body):
                yield scrapy.Request(base + path.decode(), callback=self.parse)

        def closed(self, reason: str) -> None:
            stats = dict(self.crawler.stats.get_stats())
            stats["bench/crawl_s"] = time.perf_counter() - self.started
            stats["bench/rss_start_kib"] = self.rss_start
            stats["bench/rss_end_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            Path(config["out"]).write_text(json.dumps(stats, default=str))

    process = CrawlerProcess(settings=config["settings"])
    process.crawl(TreeSpider)
    process.start()


BASE_SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_DELAY": 0,
    "ROBOTSTXT_OBEY": False,
    "COOKIES_ENABLED": False,
    "RETRY_ENABLED": False,
    "REDIRECT_ENABLED": False,
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
    "MEMUSAGE_ENABLED": False,
}


def run_crawl(base: str, settings: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """One crawl in a fresh process: its stats, peak RSS (MiB) and wall time."""
    name = uuid.uuid4().hex[:8]
    out = workdir / f"{name}.stats.json"
    config = workdir / f"{name}.json"
    config.write_text(
        json.dumps({"base": base, "out": str(out), "settings": {**BASE_SETTINGS, **settings}})
    )
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(HERE), "--child-crawl", str(config)])
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"crawl with {settings} exited {proc.returncode}")
    stats: dict[str, Any] = json.loads(out.read_text())
    return {
        "stats": stats,
        "rss_mib": usage.ru_maxrss / 1024,  # Linux: kilobytes
        "wall_s": time.perf_counter() - started,
    }


def _row(name: str, result: dict[str, Any], total: int) -> dict[str, Any]:
    stats = result["stats"]
    responses = int(stats.get("response_received_count", 0))
    return {
        "name": name,
        "rss": result["rss_mib"],
        "growth": (stats["bench/rss_end_kib"] - stats["bench/rss_start_kib"]) / 1024,
        "rate": responses / stats["bench/crawl_s"],
        "missed": total - int(stats.get("downloader/response_status_count/200", 0)),
        "filtered": int(stats.get("dupefilter/filtered", 0)),
        "cw": {k: v for k, v in stats.items() if k.startswith("changewatch/")},
    }


def _print(rows: list[dict[str, Any]], total: int, quick: bool) -> None:
    peer = rows[0]
    print(f"\nScrapy crawl of {total:,} generated local URLs (one run per row; peer: first row)\n")
    print(
        "| crawl | peak RSS MiB | × peer | RSS growth in crawl MiB | responses/s | × peer "
        "| pages missed | filtered |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['name']} | {r['rss']:.1f} | {r['rss'] / peer['rss']:.2f} | {r['growth']:.1f} "
            f"| {r['rate']:.0f} | {r['rate'] / peer['rate']:.2f} | {r['missed']} "
            f"| {r['filtered']:,} |"
        )
    if quick:
        print("\n(--quick: a smoke test; Scrapy's start-up dominates, the figures mean little.)")


def _middleware_rows(base: str, workdir: Path, total: int) -> list[dict[str, Any]]:
    rows = []
    for threaded in (False, True):
        db = f"sqlite:///{workdir / f'mw-{threaded}.db'}"
        settings = {
            "DOWNLOADER_MIDDLEWARES": {"changewatch.scrapy.ChangewatchMiddleware": 580},
            "CHANGEWATCH_DATABASE_URL": db,
            "CHANGEWATCH_UNCHANGED": "pass",  # the second crawl must follow links too
            "CHANGEWATCH_THREADED": threaded,
        }
        how = "threaded" if threaded else "reactor thread"
        for label in ("1st crawl, all new", "2nd crawl, all unchanged"):
            rows.append(
                _row(
                    f"RFP + middleware ({how}), {label}", run_crawl(base, settings, workdir), total
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.child_crawl:
        _crawl(args.child_crawl)
        return 0
    if args.child_serve:
        asyncio.run(_serve(args.urls, Path(args.child_serve)))
        return 0
    total = QUICK_URLS if args.quick else args.urls
    redis_url = args.redis or os.environ.get("CHANGEWATCH_BENCH_REDIS_URL") or DEFAULT_REDIS_URL
    key = f"cwbench:scrapy:{uuid.uuid4().hex[:12]}"
    with tempfile.TemporaryDirectory(prefix="cw-scrapy-bench-") as tmp:
        workdir = Path(tmp)
        server, base = start_server(total, workdir)
        try:
            bloom = f"kind=bloom&capacity={total}&error_rate=0.001"
            sep = "&" if "?" in redis_url else "?"
            variants = [
                ("RFPDupeFilter", {}),
                (
                    "changewatch file Bloom",
                    {
                        "DUPEFILTER_CLASS": "changewatch.scrapy.ChangewatchDupeFilter",
                        "CHANGEWATCH_SEEN_URL": f"file:{workdir / 'seen.bloom'}?{bloom}",
                    },
                ),
                (
                    "changewatch Redis Bloom",
                    {
                        "DUPEFILTER_CLASS": "changewatch.scrapy.ChangewatchDupeFilter",
                        "CHANGEWATCH_SEEN_URL": f"{redis_url}{sep}{bloom}&key={key}",
                    },
                ),
            ]
            if args.middleware:
                rows = [_row("RFPDupeFilter, no middleware", run_crawl(base, {}, workdir), total)]
                rows += _middleware_rows(base, workdir, total)
            else:
                rows = []
                for name, settings in variants:
                    rows.append(_row(name, run_crawl(base, settings, workdir), total))
                    print(f"  {name}: done", file=sys.stderr)
            _print(rows, total, args.quick)
        finally:
            server.terminate()
            server.wait()
            _delete_redis_keys(redis_url, key)
    return 0


def start_server(total: int, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The site of ``total`` pages in its own process, and its base URL."""
    ready = workdir / f"port-{total}"
    server = subprocess.Popen(
        [sys.executable, str(HERE), "--urls", str(total), "--child-serve", str(ready)]
    )
    for _ in range(400):
        if ready.exists() and ready.read_text():
            return server, f"http://127.0.0.1:{ready.read_text()}"
        time.sleep(0.05)
    server.kill()
    raise SystemExit("the benchmark server did not start")


def _delete_redis_keys(url: str, prefix: str) -> None:
    try:
        import redis
    except ModuleNotFoundError:
        return
    client = redis.Redis.from_url(url)
    try:
        for name in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(name)
    except redis.RedisError:
        pass
    finally:
        client.close()


def _parse(argv: list[str] | None) -> Namespace:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=FULL_URLS, help="URLs in the site")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_URLS:,} URLs: a smoke test")
    parser.add_argument("--redis", help=f"Redis server URL (default {DEFAULT_REDIS_URL})")
    parser.add_argument(
        "--middleware", action="store_true", help="measure ChangewatchMiddleware instead"
    )
    parser.add_argument("--child-crawl", help=SUPPRESS)  # internal: the child processes
    parser.add_argument("--child-serve", help=SUPPRESS)
    return parser.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(main())
