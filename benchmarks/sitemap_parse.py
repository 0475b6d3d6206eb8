"""Benchmark the streaming sitemap parser beside ultimate-sitemap-parser on the same bytes.

A deterministic generator writes one full-size sitemap (50,000 URLs by default: the
protocol's limit) the way real sites do: ``loc`` of varied length, a ``lastmod`` with time
and offset, ``changefreq`` and ``priority``, an ``image:image`` extension on some entries.
It is measured as plain XML, gzip-compressed XML, and a plain-text sitemap.

Contenders, every pass interleaved so machine load hits both alike:

* *changewatch*: ``SitemapParser.feed`` in 64 KiB chunks (as the fetcher streams a body),
  all checks on (host, scheme, characters, lastmod parsed to UTC);
* *usp*: ultimate-sitemap-parser's own path for a body held in memory —
  ``usp.helpers.gunzip`` for gzip, ``decode("utf-8-sig")``, then ``usp.tree.sitemap_from_str``
  and ``all_pages()``.

Each figure is the median of ``--repeats`` passes: entries/s, MB/s of (decompressed) sitemap
bytes, and the ratio to usp. A last, separate pass measures each one's peak Python memory
(tracemalloc; slower, so not timed). Both must return the same URLs, or the run fails.

    python benchmarks/sitemap_parse.py [--urls 50000] [--repeats 7] [--quick] [--seed 4]
"""

from __future__ import annotations

import gzip
import logging
import random
import statistics
import sys
import time
import tracemalloc
from argparse import ArgumentParser
from collections.abc import Callable

from changewatch.sitemaps import SitemapParser

SITEMAP_URL = "https://www.example.com/sitemap.xml"
CHUNK = 65_536
WORDS = [
    "news", "article", "products", "category", "blog", "2024", "about", "search", "shop",
    "item", "view", "docs", "guides", "v2", "users", "images", "tag", "page", "archive", "help",
]  # fmt: skip
FREQS = ["always", "hourly", "daily", "weekly", "monthly", "yearly", "never"]


def generate(count: int, seed: int) -> tuple[bytes, bytes, list[str]]:
    """(XML sitemap, text sitemap, the URLs) for ``count`` deterministic pages."""
    rng = random.Random(seed)
    urls: list[str] = []
    xml = [
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset '
        'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n'
    ]
    for index in range(count):
        path = "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        url = f"https://www.example.com/{path}/{index}-{rng.randrange(10**6)}.html"
        if rng.random() < 0.2:
            url += f"?id={rng.randrange(10**5)}&amp;lang=en"
        day = f"20{rng.randint(15, 25)}-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}"
        stamp = f"{day}T{rng.randint(0, 23):02}:{rng.randint(0, 59):02}:{rng.randint(0, 59):02}"
        entry = (
            f"<url><loc>{url}</loc><lastmod>{stamp}+0{rng.randint(0, 5)}:00</lastmod>"
            f"<changefreq>{rng.choice(FREQS)}</changefreq>"
            f"<priority>{rng.randint(1, 10) / 10}</priority>"
        )
        if rng.random() < 0.3:
            entry += (
                f"<image:image><image:loc>https://img.example.com/{index}.jpg</image:loc>"
                "</image:image>"
            )
        xml.append(entry + "</url>\n")
        urls.append(url.replace("&amp;", "&"))
    xml.append("</urlset>\n")
    text = "".join(f"{url}\n" for url in urls)
    return "".join(xml).encode(), text.encode(), urls


def ours(body: bytes) -> list[str]:
    parser = SitemapParser(SITEMAP_URL)
    found: list[str] = []
    for start in range(0, len(body), CHUNK):
        found.extend(entry.loc for entry in parser.feed(body[start : start + CHUNK]))
    found.extend(entry.loc for entry in parser.close())
    return found


def usp(body: bytes) -> list[str]:
    from usp.helpers import gunzip
    from usp.tree import sitemap_from_str

    if body[:2] == b"\x1f\x8b":
        body = gunzip(body)
    sitemap = sitemap_from_str(body.decode("utf-8-sig", errors="replace"))
    return [page.url for page in sitemap.all_pages()]


def timed(fn: Callable[[bytes], list[str]], body: bytes) -> tuple[float, list[str]]:
    start = time.perf_counter()
    found = fn(body)
    return time.perf_counter() - start, found


def peak(fn: Callable[[bytes], list[str]], body: bytes) -> int:
    tracemalloc.start()
    try:
        fn(body)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="5,000 URLs, 3 repeats (< 15 s)")
    args = parser.parse_args()
    if args.quick:
        args.urls, args.repeats = 5_000, 3
    logging.disable(logging.CRITICAL)  # usp logs every sitemap it parses
    xml, text, urls = generate(args.urls, args.seed)
    bodies = {"XML": xml, "XML gzip": gzip.compress(xml, 6), "text": text}
    sizes = {"XML": len(xml), "XML gzip": len(xml), "text": len(text)}
    contenders: list[tuple[str, Callable[[bytes], list[str]]]] = [
        ("changewatch", ours),
        ("usp 1.8", usp),
    ]
    times: dict[tuple[str, str], list[float]] = {}
    for repeat in range(args.repeats):
        for form, body in bodies.items():
            for name, fn in contenders:
                seconds, found = timed(fn, body)
                if found != urls:
                    sys.exit(f"{name} on {form}: {len(found)} URLs, not the {len(urls)} listed")
                times.setdefault((form, name), []).append(seconds)
        print(f"  pass {repeat + 1}/{args.repeats} done", file=sys.stderr)
    print(
        f"\n{len(urls):,} URLs; XML {len(xml) / 1e6:.1f} MB "
        f"(gzip {len(bodies['XML gzip']) / 1e6:.2f} MB), text {len(text) / 1e6:.1f} MB; "
        f"median of {args.repeats} passes\n"
    )
    print("| sitemap | parser | entries/s | MB/s | vs usp | peak Python memory |")
    print("|---|---|---:|---:|---:|---:|")
    for form, body in bodies.items():
        base = statistics.median(times[(form, "usp 1.8")])
        for name, fn in contenders:
            median = statistics.median(times[(form, name)])
            print(
                f"| {form} | {name} | {len(urls) / median:,.0f} | "
                f"{sizes[form] / median / 1e6:.1f} | {base / median:.2f}× | "
                f"{peak(fn, body) / 1e6:.1f} MB |"
            )
    print("\n(MB/s counts decompressed sitemap bytes; peak memory excludes the input body.)")


if __name__ == "__main__":
    main()
