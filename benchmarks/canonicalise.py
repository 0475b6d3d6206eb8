"""Benchmark ``canonicalise`` and ``url_digest`` beside ada, w3lib and url-normalize.

One deterministic generator makes realistic crawler URLs: each is a *variant* of one of a
set of resources (mixed hosts with IDN and IP literals, paths with escapes and dot
segments, queries with tracking parameters, fragments, userinfo, ports), written the way
links in the wild write it (case, default ports, credentials, fragments, tracking keys,
parameter order, escaped unreserved characters, dot segments, a host's trailing dot,
Unicode or punycode hosts). Every canonicaliser runs over the same list in the same run,
interleaved in chunks of 5,000 URLs (the order rotating), so a change of load hits all
alike; each figure is the median of ``--repeats`` passes, in URLs/s of the process's own
CPU time (``time.process_time``: other processes on a shared machine do not count), and as
ratios to ``ada_url.normalize_url`` (the WHATWG parse alone, in C: the floor) and to w3lib.

Then, per peer, against the known resource of each URL:

* *split*: resources whose variants get more than one key (re-crawled under several names);
* *merged*: keys shared by different resources (pages silently lost);
* *differs from us*: URLs whose output string is not ours, with examples.

    python benchmarks/canonicalise.py [--urls 1000000] [--repeats 5] [--quick] [--seed 8]
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from argparse import ArgumentParser
from collections import defaultdict
from collections.abc import Callable

from changewatch.urls import canonicalise, url_digest

WORDS = [
    "news", "article", "products", "category", "blog", "2024", "about", "search", "shop",
    "item", "view", "docs", "api", "v2", "users", "images", "tag", "page", "archive", "help",
]  # fmt: skip
IDN_HOSTS = ["bücher.example", "пример.испытание", "例え.テスト", "faß.example", "café.fr"]
TRACKING = [
    "utm_source=newsletter", "utm_medium=email", "utm_campaign=spring", "gclid=Cj0KCQiA",
    "fbclid=IwAR2x", "msclkid=abc123", "_ga=2.1234.5678", "mc_cid=9f8e", "igshid=MzRl",
]  # fmt: skip


def resource(rng: random.Random, index: int) -> tuple[str, str, list[str], list[str]]:
    """(scheme, host, path segments, query pairs) of one resource."""
    roll = rng.random()
    if roll < 0.80:
        host = f"{rng.choice(['www.', '', 'shop.', 'blog.'])}site{index % 5000}.example.com"
    elif roll < 0.88:
        host = rng.choice(IDN_HOSTS)
    elif roll < 0.94:
        host = f"10.{index % 256}.{index // 256 % 256}.{rng.randrange(1, 255)}"
    else:
        host = f"[2001:db8::{index % 65536:x}]"
    segments = [rng.choice(WORDS) for _ in range(rng.randrange(0, 5))]
    if rng.random() < 0.1:
        segments.append(rng.choice(["café", "a%2Fb", "100%25", "x y", "~user"]))
    # The index makes every resource distinct; some end in "/" (a different page by default).
    segments.append(rng.choice([f"{rng.choice(WORDS)}-{index}.html", f"{index}", f"{index}/"]))
    pairs = [f"{rng.choice('abcdefghij')}{rng.randrange(9)}={index % 997}" for _ in range(3)]
    del pairs[rng.randrange(4) :]
    if rng.random() < 0.1:
        pairs.append(rng.choice(["q=a%26b", "empty=", "flag", "q=%C3%A9t%C3%A9"]))
    return rng.choice(["http", "https"]), host, segments, pairs


def variant(rng: random.Random, res: tuple[str, str, list[str], list[str]]) -> str:
    """One way a link in the wild writes ``res``: same resource under the documented rules."""
    scheme, host, segments, pairs = res
    if rng.random() < 0.1:
        scheme = scheme.upper()
    if rng.random() < 0.1 and not host.startswith("["):
        host = host.upper() if host.isascii() else host.title()
    if rng.random() < 0.05 and host[-1].isalpha():
        host += "."
    if rng.random() < 0.05:
        host += ":80" if scheme.lower() == "http" else ":443"
    if rng.random() < 0.03:
        host = f"user:secret@{host}"
    path = list(segments)
    if path and rng.random() < 0.1:
        path.insert(rng.randrange(len(path)), rng.choice([".", "x/..", ""]))
    text = "/" + "/".join(path)
    if rng.random() < 0.1:
        text = text.replace("a", "%61", 1).replace("-", "%2d", 1)
    query = list(pairs)
    rng.shuffle(query)
    if rng.random() < 0.3:
        query.insert(rng.randrange(len(query) + 1), rng.choice(TRACKING))
    url = f"{scheme}://{host}{text}"
    if query:
        url += "?" + "&".join(query)
    if rng.random() < 0.15:
        url += "#" + rng.choice(["top", "section-2", "comments"])
    return url


def generate(count: int, seed: int) -> tuple[list[str], list[int]]:
    """``count`` URLs and, for each, the index of the resource it names (about 4 each)."""
    rng = random.Random(seed)
    resources = [resource(rng, i) for i in range(max(1, count // 4))]
    urls, owners = [], []
    for _ in range(count):
        owner = rng.randrange(len(resources))
        urls.append(variant(rng, resources[owner]))
        owners.append(owner)
    return urls, owners


def _w3lib() -> Callable[[str], str]:
    from w3lib.url import canonicalize_url

    return canonicalize_url


def _ada() -> Callable[[str], str]:
    from ada_url import normalize_url

    return normalize_url


def _url_normalize() -> Callable[[str], str | None]:
    from url_normalize import url_normalize

    return url_normalize


CHUNK = 5_000


def run(fn: Callable[[str], object], urls: list[str]) -> tuple[float, list[object]]:
    """CPU seconds for one pass; outputs (an exception's class name where one was raised)."""
    out: list[object] = []
    append = out.append
    start = time.process_time()
    for url in urls:
        try:
            append(fn(url))
        except Exception as exc:
            append(type(exc).__name__)
    return time.process_time() - start, out


def interleaved_pass(
    contenders: list[tuple[str, Callable[[str], object]]], urls: list[str]
) -> tuple[dict[str, float], dict[str, list[object]]]:
    """One pass of every contender over ``urls``, chunk by chunk, the order rotating."""
    seconds = dict.fromkeys((name for name, _ in contenders), 0.0)
    outputs: dict[str, list[object]] = {name: [] for name, _ in contenders}
    for turn, at in enumerate(range(0, len(urls), CHUNK)):
        chunk = urls[at : at + CHUNK]
        for k in range(len(contenders)):
            name, fn = contenders[(turn + k) % len(contenders)]
            spent, out = run(fn, chunk)
            seconds[name] += spent
            outputs[name].extend(out)
    return seconds, outputs


def quality(outputs: list[object], owners: list[int]) -> tuple[int, int]:
    """(resources split over several keys, keys shared by several resources)."""
    keys_of: dict[int, set[object]] = defaultdict(set)
    owners_of: dict[object, set[int]] = defaultdict(set)
    for out, owner in zip(outputs, owners, strict=True):
        if isinstance(out, str) and "://" in out:
            keys_of[owner].add(out)
            owners_of[out].add(owner)
    split = sum(1 for keys in keys_of.values() if len(keys) > 1)
    merged = sum(1 for found in owners_of.values() if len(found) > 1)
    return split, merged


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="50,000 URLs, 5 repeats (~25 s CPU)")
    args = parser.parse_args()
    if args.quick:
        args.urls, args.repeats = 50_000, 5
    urls, owners = generate(args.urls, args.seed)
    print(f"{len(urls):,} URLs, {len(set(owners)):,} resources, seed {args.seed}", file=sys.stderr)
    contenders: list[tuple[str, Callable[[str], object]]] = [
        ("changewatch canonicalise", canonicalise),
        ("changewatch url_digest", url_digest),
        ("ada_url.normalize_url", _ada()),
        ("w3lib.url.canonicalize_url", _w3lib()),
        ("url_normalize.url_normalize", _url_normalize()),
    ]
    times: dict[str, list[float]] = defaultdict(list)
    outputs: dict[str, list[object]] = {}
    for repeat in range(args.repeats):
        seconds, outputs = interleaved_pass(contenders, urls)
        for name, spent in seconds.items():
            times[name].append(spent)
            print(f"  pass {repeat + 1} {name}: {len(urls) / spent:,.0f} URLs/s", file=sys.stderr)
    rates = {name: len(urls) / statistics.median(times[name]) for name, _ in contenders}

    floor = rates["ada_url.normalize_url"]
    base = rates["w3lib.url.canonicalize_url"]
    ours = outputs["changewatch canonicalise"]
    print(f"\n{len(urls):,} URLs, median of {args.repeats} interleaved passes (CPU time)\n")
    print(
        "| canonicaliser | URLs/s | vs ada normalize_url | vs w3lib | split resources "
        "| merged keys | differs from us |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    examples: dict[str, list[tuple[str, object, object]]] = {}
    for name, _ in contenders:
        out = outputs[name]
        rate = rates[name]
        speed = f"| {name} | {rate:,.0f} | {rate / floor:.2f}× | {rate / base:.1f}×"
        if name == "changewatch url_digest":
            print(f"{speed} | – | – | – |")
            continue
        split, merged = quality(out, owners)
        differ = [i for i, (a, b) in enumerate(zip(out, ours, strict=True)) if a != b]
        examples[name] = [
            (urls[i], ours[i], out[i]) for i in differ[:: max(1, len(differ) // 3)][:3]
        ]
        print(f"{speed} | {split:,} | {merged:,} | {len(differ):,} |")
    print(f"\n({len(set(owners)):,} resources; a resource is *split* when its variants get")
    print("more than one key, a key is *merged* when it names more than one resource.)")
    for name, found in examples.items():
        if found:
            print(f"\n{name} differs, e.g.:")
            for url, mine, theirs in found:
                print(f"- `{url}`\n  - us: `{mine}`\n  - it: `{theirs}`")


if __name__ == "__main__":
    main()
