"""Hostile page shapes through ``fingerprint``: time and peak RSS beside a normal page's floor.

Each shape is built at 1 MiB and at the default page limit (10 MiB) and fingerprinted in a
fresh child process, which reports the median time of ``--repeats`` calls, its peak RSS
(``ru_maxrss``) and its RSS before the page was built, and then — in the same child, right
after — the parse-alone time (``LexborHTMLParser``) and the ``fingerprint`` time of a normal
page of the same size (real corpus pages concatenated; the demo site's without a corpus).
A child past ``--timeout`` seconds is stopped and reported as such.

    python benchmarks/hostile_pages.py [--quick] [--repeats 3] [--timeout 120] [--only TEXT]
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from argparse import ArgumentParser
from collections.abc import Callable

from _common import log, real_pages

MIB = 1 << 20


def _repeat(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit.encode()))


def _attributes(size: int) -> str:
    names = []
    total = 0
    while total < size:
        names.append(f'a{len(names)}="v"')
        total += len(names[-1]) + 1
    return "<p " + " ".join(names) + ">x</p>"


def _spread_attributes(size: int) -> str:
    return "".join(f'<p a{i}="v">x</p>' for i in range(size // 18))


def _tag_names(size: int) -> str:
    return "".join(f"<p{i}>x</p{i}>" for i in range(size // 16))


def _full_elements(size: int) -> str:
    """Elements of 256 attributes (the most allowed), repeated."""
    element = "<p " + " ".join(f"a{i}" for i in range(256)) + ">x</p>"
    return _repeat(element, size)


def _many_names(size: int) -> str:
    """65,536 distinct attribute names (the most allowed), then those names again."""
    first = "".join(f'<p a{i}="v">x</p>' for i in range(65536))
    return first + _repeat('<p a1="v">x</p>', max(0, size - len(first)))


def _few_tags_many_names(size: int) -> str:
    """4,096 tags of 16 new attribute names each (65,536 names: the most a page of few tags
    may hold unread), then text."""
    tags = "".join("<p " + " ".join(f"a{t}_{i}" for i in range(16)) + ">" for t in range(4096))
    return tags + "x" * max(0, size - len(tags))


def _end_tag_names(size: int) -> str:
    return "<p>x" + "".join(f"</x{i}>" for i in range(size // 8))


def _under_the_bound(size: int) -> str:
    """About the costliest stack a page may have and not be modelled (2,048 open spans, 6,100 end
    tags walking them), then text."""
    head = "<span>" * 2048 + "</x>" * 6100
    return head + "x" * max(0, size - len(head))


def _adoptions(size: int) -> str:
    """700 distinct open ``<b>``, 700 ``<div>``, then ``</b>`` (each runs the adoption agency)."""
    head = "".join(f"<b id={i}>" for i in range(700)) + "<div>" * 700
    return head + _repeat("</b>", size - len(head))


def _behind_a_script_quote(size: int) -> str:
    """A script whose text, read as markup, opens a quoted value over the script's end and
    over one real element of as many attributes as fill the page."""
    head = '<script>"<x' + " a" * 16 + " b='</script><p "
    names = []
    total = len(head)
    while total < size:
        names.append(f"a{len(names)}")
        total += len(names[-1]) + 1
    return head + " ".join(names) + ">'\"</script><p>x</p>"


def _quoted_gt_attributes(size: int) -> str:
    """One element of attributes whose values each hold a ``>``."""
    names = []
    total = 0
    while total < size:
        names.append(f'a{len(names)}=">"')
        total += len(names[-1]) + 1
    return "<p " + " ".join(names) + ">x</p>"


def _lt_tag_name(size: int) -> str:
    """4,000 ``<y`` then a tag name filling the page: one tag, but 4,000 places one may start."""
    return "<p>" + "<y" * 4000 + "y" * max(0, size - 8003) + ">x"


def _trailing_whitespace(size: int) -> str:
    """One tag of whitespace after its name (no attribute), then 5,000 small elements (a page
    the nesting model reads)."""
    tail = "<i></i>" * 5000
    return "<p" + " " * max(0, size - len(tail) - 7) + ">x</p>" + tail


def _ages(size: int) -> str:
    k = size // 17
    return "<p>" + "5 1:00 " * k + "hours ago " * k + "</p>"


SHAPES: dict[str, Callable[[int], str]] = {
    "<div></x> (end tags closing nothing)": lambda s: _repeat("<div></x>", s),
    "<div><!--</--> (end tags in comments)": lambda s: _repeat("<div><!--</-->", s),
    "<div> nested (100,000+ deep)": lambda s: _repeat("<div>", s),
    "4,000-deep blocks, repeated": lambda s: _repeat("<div>" * 4000 + "x" + "</div>" * 4000, s),
    "distinct attributes, one element": _attributes,
    "elements of 256 attributes, repeated": _full_elements,
    "distinct attribute names, spread": _spread_attributes,
    "65,536 distinct attribute names, then repeated": _many_names,
    "4,096 tags of 16 new attribute names": _few_tags_many_names,
    "distinct tag names": _tag_names,
    "distinct end tag names": _end_tag_names,
    "spans 2,048 deep under the unmodelled bound, then text": _under_the_bound,
    "2,000 open spans, then </x> (end tags walking the stack)": lambda s: (
        "<span>" * 2000 + _repeat("</x>", s - 12000)
    ),
    "misnested </b> (the adoption agency, repeated)": _adoptions,
    "a wide element behind a quote in a script": _behind_a_script_quote,
    'attributes holding ">" (a=">"), one element': _quoted_gt_attributes,
    "a tag name of 4,000 <y, then 1 or 10 MiB of name": _lt_tag_name,
    "one tag of whitespace, then 5,000 elements": _trailing_whitespace,
    "nested relative ages": _ages,
    "U+FDFA (NFKC ×18)": lambda s: _repeat("\ufdfa", s),
    "U+FDFA, spaced": lambda s: _repeat("\ufdfa ", s),
    "normal page (corpus pages concatenated)": lambda s: _normal_page(s).decode("utf-8", "replace"),
}


def _normal_page(size: int) -> bytes:
    pages = [body for _, body in real_pages(required=False)]
    out = bytearray()
    while len(out) < size:
        for body in pages:
            out += body
            if len(out) >= size:
                break
    return bytes(out[:size])


def _median_seconds(fn: Callable[[], object], repeats: int) -> tuple[float, str]:
    times = []
    outcome = "ok"
    for _ in range(repeats):
        started = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # a refusal is an outcome to report
            outcome = type(exc).__name__
        times.append(time.perf_counter() - started)
    return statistics.median(times), outcome


def child(shape: str, size: int, repeats: int) -> None:
    """Measure one shape at one size; print one JSON line."""
    from selectolax.lexbor import LexborHTMLParser

    from changewatch.fingerprint import fingerprint

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pages = [SHAPES[shape](size).encode()]
    seconds, outcome = _median_seconds(lambda: fingerprint(pages[0]), repeats)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pages.clear()
    normal = _normal_page(size)
    parse, _ = _median_seconds(lambda: LexborHTMLParser(normal), repeats)
    normal_fp, _ = _median_seconds(lambda: fingerprint(normal), repeats)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "outcome": outcome,
                "peak_mib": peak / 1024,
                "base_mib": before / 1024,
                "parse": parse,
                "normal": normal_fp,
            }
        )
    )


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 MiB only")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--only", default="", help="only the shapes whose name holds this")
    parser.add_argument("--child", nargs=2, metavar=("SHAPE", "SIZE"), help=None)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.repeats)
        return
    sizes = [MIB] if args.quick else [MIB, 10 * MIB]
    print(
        "| shape | size | fingerprint | outcome | peak RSS (base) | normal page: parse alone"
        " | normal page: fingerprint | ÷ normal fingerprint |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for size in sizes:
        for shape in [name for name in SHAPES if args.only in name]:
            log(f"{shape} at {size // MIB} MiB")
            command = [sys.executable, __file__, "--child", shape, str(size)]
            command += ["--repeats", str(args.repeats if size == MIB else 1)]
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=args.timeout, check=True
                )
            except subprocess.TimeoutExpired:
                print(f"| {shape} | {size // MIB} MiB | > {args.timeout:.0f} s | stopped |||||")
                continue
            row = json.loads(done.stdout.splitlines()[-1])
            print(
                f"| {shape} | {size // MIB} MiB | {row['seconds']:.3f} s | {row['outcome']} "
                f"| {row['peak_mib']:.0f} MiB ({row['base_mib']:.0f}) | {row['parse']:.3f} s "
                f"| {row['normal']:.3f} s | {row['seconds'] / row['normal']:.2f}× |",
                flush=True,
            )


if __name__ == "__main__":
    main()
