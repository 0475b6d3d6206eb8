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

and, new with fingerprint version 4, on variants made in the page's body:

(d) a time of day, a date or a date-time *inside a sentence of prose* edited ("in the final
    4:29 of regulation" → "4:20", "the opening ceremony at 2:30pm" → "3:30pm", "on 3 March
    2026" → "4 March"): never the same ``content_sha256`` (100%);
(e) label clocks re-rendered ("Updated 5 minutes ago" → "17 minutes ago", "Page generated at
    <ISO time>" with another time, "Last updated: 12:04" in a footer): the same
    ``content_sha256`` (100%);
(f) chrome changed — a rotating ``aside`` of related links, a "related stories" link list
    outside any landmark, a navigation that gains an item: the same ``content_sha256`` and
    another ``chrome_sha256`` (chrome flagged) (≥ 99%).

Each rate is measured with the default policy (version 4: main content and chrome apart) and
with ``FingerprintPolicy(regions=False)`` (all visible text is content, as before version
4), and printed as a markdown table with the worst cases.

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
REFERENCE = FingerprintPolicy(regions=False, volatile=())
POLICIES = {
    "default (v4: main content and chrome)": FingerprintPolicy(),
    "regions off (all visible text)": FingerprintPolicy(regions=False),
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


#: (d) edits of a time, date or date-time inside a sentence: (before, after).
_PROSE_EDITS = (
    ("He scored in the final 4:29 of regulation, and the crowd stood.", "4:29", "4:20"),
    ("The opening ceremony at 2:30pm drew a large crowd to the square.", "2:30pm", "3:30pm"),
    ("The council will vote on 3 March 2026 after a long public debate.", "3 March", "4 March"),
    (
        "Polls close on March 3, 2026 at 8:00 pm in every district of the city.",
        "8:00 pm",
        "9:00 pm",
    ),
)
#: (e) label clocks, as HTML templates of one argument (the varying part).
_LABEL_CLOCKS = (
    "<p class=meta>Updated {n} minutes ago</p>",
    "<div>Page generated at 2026-03-{day:02d}T{hour:02d}:{minute:02d}:17Z</div>",
    "<footer><p>Last updated: {hour:02d}:{minute:02d}</p></footer>",
    "<span class=stamp>Posted {n} hours ago</span>",
)


def _at_body_start(page: bytes, html: bytes) -> bytes:
    match = _BODY_OPEN_RE.search(page)
    at = match.end() if match else 0
    return page[:at] + html + page[at:]


def _before_body_end(page: bytes, html: bytes) -> bytes:
    match = _BODY_CLOSE_RE.search(page)
    at = match.start() if match else len(page)
    return page[:at] + html + page[at:]


def _in_paragraph(page: bytes, sentence: bytes, rng: random.Random) -> bytes | None:
    para = _visible_run(page, _PARAGRAPH_RE, 1, rng)
    if para is None:
        return None
    return page[: para.end(1)] + b" " + sentence + page[para.end(1) :]


def prose_variants(page: bytes, seed: int) -> list[tuple[str, bytes, bytes]]:
    """(d): the page with a sentence holding a time or date, before and after its edit."""
    out = []
    for sentence, old, new in _PROSE_EDITS:
        before = _in_paragraph(page, sentence.encode(), random.Random(seed))
        after = _in_paragraph(page, sentence.replace(old, new).encode(), random.Random(seed))
        if before is not None and after is not None:
            out.append((f"prose {old} -> {new}", before, after))
    return out


def label_variants(page: bytes, seed: int) -> list[tuple[str, bytes, bytes]]:
    """(e): the page with a label clock, rendered at two times."""
    out = []
    for template in _LABEL_CLOCKS:
        renders = []
        for offset in (0, 1):
            rng = random.Random(seed * 2 + offset)
            values = {
                "n": rng.randrange(2, 59),
                "day": rng.randrange(1, 29),
                "hour": rng.randrange(24),
                "minute": rng.randrange(60),
            }
            renders.append(_before_body_end(page, template.format(**values).encode()))
        out.append((f"label {template.split('>')[1][:24]}", renders[0], renders[1]))
    return out


_RELATED = ["Storm closes schools", "Budget vote delayed", "Rail strike ends", "New park opens"]


def chrome_variants(page: bytes, seed: int) -> list[tuple[str, bytes, bytes]]:
    """(f): the page with its chrome changed: rotating aside, related list, navigation."""
    rng = random.Random(seed)

    def links(items: list[str]) -> bytes:
        return b"".join(
            b'<li><a href="/story/%d">%s</a></li>' % (rng.randrange(10**6), item.encode())
            for item in items
        )

    first, second = rng.sample(_RELATED, 2), rng.sample(_RELATED, 2)
    while second == first:
        second = rng.sample(_RELATED, 2)
    aside = b"<aside><h3>Related</h3><ul>%s</ul></aside>"
    related = b'<div class="related"><h4>More stories</h4><ul>%s</ul></div>'
    nav = b"<nav><ul>%s</ul></nav>"
    menu = ["Home", "World", "Sport"]
    return [
        (
            "rotating aside",
            _before_body_end(page, aside % links(first)),
            _before_body_end(page, aside % links(second)),
        ),
        (
            "related list",
            _before_body_end(page, related % links(first)),
            _before_body_end(page, related % links(second)),
        ),
        (
            "navigation gains an item",
            _at_body_start(page, nav % links(menu)),
            _at_body_start(page, nav % links([*menu, "Weather"])),
        ),
    ]


@dataclass
class Variants:
    """Counts and failures of the variants (d), (e), (f) for one policy."""

    prose_detected: int = 0
    prose_total: int = 0
    prose_missed: list[str] = field(default_factory=list)
    #: Detected as a chrome change: the paragraph edited sits in the page's chrome.
    prose_chrome: list[str] = field(default_factory=list)
    label_same: int = 0
    label_total: int = 0
    label_failed: list[str] = field(default_factory=list)
    chrome_ok: int = 0
    chrome_total: int = 0
    chrome_failed: list[str] = field(default_factory=list)
    chrome_invisible: int = 0


def measure_variants(pages: dict[str, bytes], policy: FingerprintPolicy) -> Variants:
    """(d), (e) and (f) for one policy."""
    out = Variants()
    for index, (name, page) in enumerate(pages.items()):
        for kind, before, after in prose_variants(page, index):
            if normalise(before, policy=REFERENCE) == normalise(after, policy=REFERENCE):
                continue  # the sentence landed where no text shows
            out.prose_total += 1
            a, b = fingerprint(before, policy=policy), fingerprint(after, policy=policy)
            if a.content_sha256 != b.content_sha256:
                out.prose_detected += 1
            elif a.chrome_sha256 != b.chrome_sha256:
                out.prose_detected += 1
                out.prose_chrome.append(f"{name}: {kind}")
            else:
                out.prose_missed.append(f"{name}: {kind}")
        for kind, before, after in label_variants(page, index):
            out.label_total += 1
            if (
                fingerprint(before, policy=policy).content_sha256
                == fingerprint(after, policy=policy).content_sha256
            ):
                out.label_same += 1
            else:
                out.label_failed.append(f"{name}: {kind}")
        for kind, before, after in chrome_variants(page, index):
            if normalise(before, policy=REFERENCE) == normalise(after, policy=REFERENCE):
                out.chrome_invisible += 1
                continue  # inserted where no text shows (inside a script, a comment)
            out.chrome_total += 1
            a, b = fingerprint(before, policy=policy), fingerprint(after, policy=policy)
            if a.content_sha256 == b.content_sha256 and a.chrome_sha256 != b.chrome_sha256:
                out.chrome_ok += 1
            else:
                out.chrome_failed.append(f"{name}: {kind}")
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
    #: Edits that changed the chrome only: reported as chrome changes, content unchanged.
    edit_chrome: int = 0
    edit_chrome_cases: list[str] = field(default_factory=list)
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
                if after.chrome_sha256 != fp.chrome_sha256:
                    # Reported as a chrome change (Decision.chrome_changed), not hidden.
                    result.edit_chrome += 1
                    result.edit_chrome_cases.append(f"{name}: {kind}")
                    continue
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


def report_variants(variants: dict[str, Variants]) -> str:
    """The variants' table (d), (e), (f) and their failures."""
    lines = [
        "",
        "| policy | (d) time/date edits in prose detected (content or chrome) "
        "| (e) label clocks: same "
        "content_sha256 | (f) chrome changes: content same, chrome flagged |",
        "|---|---|---|---|",
    ]
    for name, v in variants.items():
        lines.append(
            f"| {name} | {_rate(v.prose_detected, v.prose_total)} "
            f"| {_rate(v.label_same, v.label_total)} | {_rate(v.chrome_ok, v.chrome_total)} |"
        )
    for name, v in variants.items():
        lines.append(
            f"- {name}: (d) missed {', '.join(v.prose_missed[:8]) or 'none'}; (d) as chrome "
            f"changes {len(v.prose_chrome)}: {', '.join(v.prose_chrome[:4]) or 'none'}; "
            "(e) failed "
            f"{', '.join(v.label_failed[:8]) or 'none'}; (f) failed "
            f"{', '.join(v.chrome_failed[:8]) or 'none'}; (f) left out, not visible: "
            f"{v.chrome_invisible}"
        )
    return "\n".join(lines)


def report(pages: int, results: dict[str, Result]) -> str:
    """The markdown table and the worst cases."""
    lines = [
        f"near-duplicate quality on {pages} corpus pages (minor: distance ≤ {MINOR})",
        "",
        "| policy | (a) noise → same content_sha256 | (b) edits detected (content or chrome) "
        "| (b) of them chrome only | (b) edits minor "
        "| (c) page pairs distance > 3 | (c) pairs of different texts distance > 3 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {_rate(r.noise_same, r.noise_total)} "
            f"| {_rate(r.edit_detected + r.edit_chrome, r.edit_total)} "
            f"| {_rate(r.edit_chrome, r.edit_total)} "
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
        lines.append(
            f"- (b) reported as chrome changes: {', '.join(r.edit_chrome_cases[:12]) or 'none'}"
        )
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
    variants = {name: measure_variants(pages, policy) for name, policy in POLICIES.items()}
    print(report(len(pages), results))
    print(report_variants(variants))
    if args.json:
        print(
            json.dumps(
                {
                    name: {
                        "noise_same": r.noise_same / r.noise_total,
                        "edits_detected": (r.edit_detected + r.edit_chrome) / max(r.edit_total, 1),
                        "edits_chrome_only": r.edit_chrome / max(r.edit_total, 1),
                        "edits_minor": r.edit_minor / max(r.edit_total, 1),
                        "pairs_far": r.pairs_far / max(r.pairs_total, 1),
                        "different_texts_far": r.pairs_different_far / max(r.pairs_different, 1),
                        "prose_time_edits_detected": variants[name].prose_detected
                        / max(variants[name].prose_total, 1),
                        "label_clocks_same": variants[name].label_same
                        / max(variants[name].label_total, 1),
                        "chrome_changes_flagged": variants[name].chrome_ok
                        / max(variants[name].chrome_total, 1),
                    }
                    for name, r in results.items()
                }
            )
        )


if __name__ == "__main__":
    main()
