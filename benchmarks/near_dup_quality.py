"""How well fingerprints separate noise from edits, on the 130 real pages of the corpus.

From each page of ``../shared/corpus/pages-readability`` (``CHANGEWATCH_CORPUS`` overrides the
corpus directory), deterministic variants are made in code:

(a) noise-only re-renders — two renders of the page's template differing only in script
    nonces, CSRF tokens, build ids, comments, whitespace between tags, attribute order,
    rotated class names and a "generated at <clock>" line: they must share ``content_sha256``;
(b) small edits of the page's content — one sentence added to a paragraph, one number
    changed, one word of the ``<title>`` replaced: never the same ``content_sha256`` (never
    ``unchanged``), and ``minor`` (SimHash distance ≤ 3) for most;
(c) every pair of different pages: SimHash distance > 3. Many readability fixtures are the
    same text under different markup (a tag-cleaning test and a visibility test of one
    lorem-ipsum article): pairs are reported over all files, and over the pairs whose texts
    are different — their word 2-shingle sets (the SimHash features) overlap by less than
    half (Jaccard < 0.5), an independent measure of the same text.

Each rate is measured with the default policy (boilerplate regions kept) and with
``FingerprintPolicy(boilerplate=True)`` (``nav``, ``footer``, ``aside``, page ``header``
dropped), and printed as a markdown table with the worst cases.

    python benchmarks/near_dup_quality.py [--quick] [--json]
"""

from __future__ import annotations

import gzip
import json
import random
import re
import sys
from argparse import ArgumentParser
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from _common import PAGES

from changewatch.fingerprint import (
    Fingerprint,
    FingerprintPolicy,
    fingerprint,
    hamming,
    normalise,
    simhash_features,
)

CORPUS = PAGES  # benchmarks/_common.py: CHANGEWATCH_CORPUS or ../shared/corpus
MINOR = 3
#: What a reader sees: every region kept, nothing volatile removed. An "edit" that does not
#: change this text (it hit an attribute value, a noscript or a hidden element) is no edit and
#: is left out of (b); pages with the same such text are left out of (c).
REFERENCE = FingerprintPolicy(boilerplate=False, volatile=())
POLICIES = {
    "default (boilerplate kept)": FingerprintPolicy(),
    "boilerplate dropped": FingerprintPolicy(boilerplate=True),
}

_BODY_OPEN_RE = re.compile(rb"<body\b[^>]*>", re.IGNORECASE)
_BODY_CLOSE_RE = re.compile(rb"</body\s*>", re.IGNORECASE)
_SCRIPT_OPEN_RE = re.compile(rb"<script\b", re.IGNORECASE)
_BETWEEN_TAGS_RE = re.compile(rb">[ \t\r\n]+<")
_TWO_ATTRS_RE = re.compile(
    rb"""<([a-z][a-z0-9]*)(\s+)([a-z-]+="[^"<>]*")(\s+)([a-z-]+="[^"<>]*")""", re.IGNORECASE
)
_HIDDEN_VALUE_RE = re.compile(
    rb"""(<input\b[^>]*\btype\s*=\s*["']?hidden["']?[^>]*\bvalue\s*=\s*)("[^"]*"|'[^']*')""",
    re.IGNORECASE,
)
_PARAGRAPH_RE = re.compile(rb"<p\b[^>]*>([^<]{60,})", re.IGNORECASE)
_NUMBER_RE = re.compile(rb"(?<![\d:./,-])\d{1,6}(?![\d:]|\.\d)")
_TEXT_RUN_RE = re.compile(rb"<(p|td|li|span|h[1-6]|div|dd|a|strong|b)\b[^>]*>([^<]{20,})", re.I)
_TITLE_RE = re.compile(rb"(<title\b[^>]*>)([^<]+)(</title\s*>)", re.IGNORECASE)
_WORD_RE = re.compile(rb"[A-Za-z]{4,}")
_CLOCKS = (
    "Generated at {iso}",
    "Page generated {date} {time} UTC",
    "Rendered by node-7 at {time}",
    "Last refreshed {n} minutes ago",
    "Built {month} {day}, 2026 at {time12}",
)


def load_corpus(limit: int | None = None) -> dict[str, bytes]:
    """Name → fetched bytes of the corpus pages (``limit``: the first N by name)."""
    paths = sorted(CORPUS.glob("*.html.gz"))[:limit]
    if not paths:
        sys.exit(f"no pages under {CORPUS}; set CHANGEWATCH_CORPUS")
    return {p.name.removesuffix(".html.gz"): gzip.decompress(p.read_bytes()) for p in paths}


def _clock(rng: random.Random, template: str) -> bytes:
    hour, minute, second = rng.randrange(24), rng.randrange(60), rng.randrange(60)
    values = {
        "iso": f"2026-03-{rng.randrange(1, 29):02d}T{hour:02d}:{minute:02d}:{second:02d}Z",
        "date": f"2026-03-{rng.randrange(1, 29):02d}",
        "time": f"{hour:02d}:{minute:02d}:{second:02d}",
        "time12": f"{hour % 12 or 12}:{minute:02d} {'pm' if hour >= 12 else 'am'}",
        "n": str(rng.randrange(1, 60)),
        "month": "March",
        "day": str(rng.randrange(1, 29)),
    }
    return template.format(**values).encode()


def render(page: bytes, seed: int, clock: str, in_footer: bool) -> bytes:
    """One render of the page's template: its noise depends on ``seed`` only."""
    rng = random.Random(seed)
    token = rng.randbytes(12).hex().encode()
    nonce = rng.randbytes(8).hex().encode()
    page = _SCRIPT_OPEN_RE.sub(b'<script nonce="' + nonce + b'"', page)
    page = _HIDDEN_VALUE_RE.sub(lambda m: m.group(1) + b'"' + token + b'"', page)
    # Whitespace runs become other runs: adding or removing one can join or split words.
    space = rng.choice([b" ", b"\n", b"\n  ", b" \t "])
    page = _BETWEEN_TAGS_RE.sub(b">" + space + b"<", page)
    if seed % 2:
        page = _TWO_ATTRS_RE.sub(
            lambda m: b"<%s%s%s%s%s" % (m[1], m[2], m[5], m[4], m[3]), page, count=200
        )
    build = rng.randbytes(4).hex().encode()
    stamp = _clock(rng, clock)
    head = (
        b"<!-- build " + build + b" -->"
        b'<input type="hidden" name="csrf" value="' + token + b'">'
        b'<div hidden data-build="' + build + b'">build ' + build + b"</div>"
        b'<span aria-hidden="true" class="c-' + build + b'">' + nonce + b"</span>"
    )
    tail = (b"<footer><p>" + stamp + b"</p></footer>") if in_footer else (b"<p>" + stamp + b"</p>")
    match = _BODY_OPEN_RE.search(page)
    at = match.end() if match else 0
    page = page[:at] + head + page[at:]
    match = _BODY_CLOSE_RE.search(page)
    at = match.start() if match else len(page)
    return page[:at] + tail + page[at:]


def _visible_run(page: bytes, regex: re.Pattern[bytes], group: int, rng: random.Random) -> Any:
    """A match of ``regex`` in body text outside script/style (middle one, seeded)."""
    body = _BODY_OPEN_RE.search(page)
    start = body.end() if body else 0
    runs = [
        m
        for m in regex.finditer(page, start)
        if b"{" not in m.group(group) and b"function" not in m.group(group)
    ]
    if not runs:
        return None
    return runs[len(runs) // 2 + rng.randrange(-min(2, len(runs) // 2), 1)]


def edits(page: bytes, seed: int) -> dict[str, bytes]:
    """The small edits of the page that could be made: sentence, number, title word."""
    rng = random.Random(seed)
    out: dict[str, bytes] = {}
    para = _visible_run(page, _PARAGRAPH_RE, 1, rng)
    if para is not None:
        out["one sentence"] = (
            page[: para.end(1)]
            + b" The committee approved the revised budget."
            + page[para.end(1) :]
        )
    body = _BODY_OPEN_RE.search(page)
    runs = [
        (m, n)
        for m in _TEXT_RUN_RE.finditer(page, body.end() if body else 0)
        if b"{" not in m.group(2)
        for n in _NUMBER_RE.finditer(m.group(2))
    ]
    if runs:
        run, number = runs[len(runs) // 2]
        at = run.start(2) + number.start()
        old = number.group()
        new = str(int(old) + 1).encode() if old[-1:] != b"9" else old[:-1] + b"0"
        out["one number"] = page[:at] + new + page[at + len(old) :]
    title = _TITLE_RE.search(page)
    if title is not None:
        words = list(_WORD_RE.finditer(title.group(2)))
        if words:
            word = words[len(words) // 2]
            at = title.start(2) + word.start()
            out["one title word"] = page[:at] + b"Xylophone" + page[at + len(word.group()) :]
    return out


@dataclass
class Result:
    """Counts and worst cases for one policy."""

    noise_same: int = 0
    noise_total: int = 0
    noise_fail: list[str] = field(default_factory=list)
    edit_detected: int = 0
    edit_minor: int = 0
    edit_total: int = 0
    edit_invisible: int = 0
    edit_by_kind: dict[str, list[int]] = field(default_factory=dict)
    edit_missed: list[str] = field(default_factory=list)
    edit_worst: list[tuple[int, str]] = field(default_factory=list)
    pairs_far: int = 0
    pairs_total: int = 0
    pairs_same_text: int = 0
    pairs_worst: list[tuple[int, str, str]] = field(default_factory=list)
    pairs_near_text: int = 0
    #: Pairs whose texts differ (feature Jaccard < NEAR_TEXT), and those of them > MINOR bits.
    pairs_different: int = 0
    pairs_different_far: int = 0
    #: The feature Jaccard of each pair within MINOR bits.
    close_jaccards: list[float] = field(default_factory=list)


def measure(pages: dict[str, bytes], policy: FingerprintPolicy) -> Result:
    """All three measurements for one policy."""
    result = Result()
    base: dict[str, Fingerprint] = {}
    seen: dict[str, str] = {}
    for index, (name, page) in enumerate(pages.items()):
        clock = _CLOCKS[index % len(_CLOCKS)]
        in_footer = bool(index % 2)
        first = fingerprint(render(page, 2 * index, clock, in_footer), policy=policy)
        second = fingerprint(render(page, 2 * index + 1, clock, in_footer), policy=policy)
        result.noise_total += 1
        if first.content_sha256 == second.content_sha256:
            result.noise_same += 1
        else:
            result.noise_fail.append(f"{name} (distance {hamming(first.simhash, second.simhash)})")
        fp = fingerprint(page, policy=policy)
        reference = normalise(page, policy=REFERENCE)
        if reference in seen:
            result.pairs_same_text += 1  # the same visible text as an earlier page
        else:
            seen[reference] = name
            base[name] = fp
        for kind, edited in edits(page, index).items():
            if normalise(edited, policy=REFERENCE) == reference:
                result.edit_invisible += 1
                continue
            after = fingerprint(edited, policy=policy)
            distance = hamming(fp.simhash, after.simhash)
            result.edit_total += 1
            stats = result.edit_by_kind.setdefault(kind, [0, 0, 0])
            stats[0] += 1
            if after.content_sha256 == fp.content_sha256:
                result.edit_missed.append(f"{name}: {kind}")
                continue
            result.edit_detected += 1
            stats[1] += 1
            if distance <= MINOR:
                result.edit_minor += 1
                stats[2] += 1
            result.edit_worst.append((distance, f"{name}: {kind}"))
    shingles = {name: set(simhash_features(normalise(pages[name], policy=policy))) for name in base}
    for (a, fa), (b, fb) in combinations(base.items(), 2):
        distance = hamming(fa.simhash, fb.simhash)
        similar = _jaccard(shingles[a], shingles[b])
        result.pairs_total += 1
        if similar < NEAR_TEXT:
            result.pairs_different += 1
            result.pairs_different_far += distance > MINOR
        if distance > MINOR:
            result.pairs_far += 1
        else:
            result.close_jaccards.append(similar)
            result.pairs_near_text += similar >= NEAR_TEXT
        result.pairs_worst.append((distance, a, b))
    result.edit_worst.sort(reverse=True)
    result.pairs_worst.sort()
    return result


#: Texts sharing at least this share of their SimHash features are the same text, nearly.
NEAR_TEXT = 0.5


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _rate(hit: int, total: int) -> str:
    return f"{hit}/{total} = {100 * hit / total:.2f}%" if total else "n/a"


def report(pages: int, results: dict[str, Result]) -> str:
    """The markdown table and the worst cases."""
    lines = [
        f"near-duplicate quality on {pages} corpus pages (minor: distance ≤ {MINOR})",
        "",
        "| policy | (a) noise → same content_sha256 | (b) edits detected | (b) edits minor "
        "| (c) page pairs distance > 3 | (c) pairs of different texts distance > 3 |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {_rate(r.noise_same, r.noise_total)} "
            f"| {_rate(r.edit_detected, r.edit_total)} "
            f"| {_rate(r.edit_minor, r.edit_total)} | {_rate(r.pairs_far, r.pairs_total)} "
            f"| {_rate(r.pairs_different_far, r.pairs_different)} |"
        )
    for name, r in results.items():
        lines += ["", f"**{name}**", ""]
        for kind, (total, detected, minor) in sorted(r.edit_by_kind.items()):
            lines.append(
                f"- (b) {kind}: detected {_rate(detected, total)}, minor {_rate(minor, total)}"
            )
        lines.append(
            f"- left out: {r.edit_invisible} edits that change no visible text; "
            f"{r.pairs_same_text} pages whose visible text equals an earlier page's"
        )
        lines.append(f"- (a) failures: {', '.join(r.noise_fail[:10]) or 'none'}")
        lines.append(f"- (b) missed: {', '.join(r.edit_missed[:10]) or 'none'}")
        worst = ", ".join(f"{d} bits ({what})" for d, what in r.edit_worst[:5])
        lines.append(f"- (b) largest distances: {worst}")
        closest = ", ".join(f"{d} bits ({a} / {b})" for d, a, b in r.pairs_worst[:5])
        lines.append(f"- (c) closest pairs: {closest}")
        close = r.pairs_total - r.pairs_far
        lines.append(
            f"- (c) of the {close} pairs within {MINOR} bits, {r.pairs_near_text} share at least "
            f"half their SimHash features (Jaccard ≥ {NEAR_TEXT}): near-duplicate texts, not "
            "misses"
        )
        if r.close_jaccards:
            jaccards = sorted(r.close_jaccards)
            lines.append(
                f"- (c) feature Jaccard of those pairs: lowest {jaccards[0]:.2f}, median "
                f"{jaccards[len(jaccards) // 2]:.2f}; "
                f"{sum(j >= 0.9 for j in jaccards)} of {len(jaccards)} at 0.9 or more"
            )
    return "\n".join(lines)


def main() -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the first 30 pages only")
    parser.add_argument("--json", action="store_true", help="also print the rates as JSON")
    args = parser.parse_args()
    pages = load_corpus(30 if args.quick else None)
    results = {name: measure(pages, policy) for name, policy in POLICIES.items()}
    print(report(len(pages), results))
    if args.json:
        print(
            json.dumps(
                {
                    name: {
                        "noise_same": r.noise_same / r.noise_total,
                        "edits_detected": r.edit_detected / max(r.edit_total, 1),
                        "edits_minor": r.edit_minor / max(r.edit_total, 1),
                        "pairs_far": r.pairs_far / max(r.pairs_total, 1),
                        "different_texts_far": r.pairs_different_far / max(r.pairs_different, 1),
                    }
                    for name, r in results.items()
                }
            )
        )


if __name__ == "__main__":
    main()
