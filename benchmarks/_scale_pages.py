"""The pages of ``benchmarks/scale_run.py``: page ``i``'s URL and body, from ``i`` alone.

A page is a small but real-looking article page (3–6 KB): one of four chrome templates
(head, navigation, header, sidebar, footer: the shapes of the corpus's news, blog, docs and
shop pages) around a main ``<article>`` of 6–12 paragraphs made of real sentences drawn from
the corpus's main-content texts (``benchmarks/_common.real_pages`` → ``page_text``) by a
``random.Random(i)``, with the page's number in its title, heading and first paragraph. So the
body is reproducible for the re-crawl, pages are distinct texts (their SimHashes spread over
the band values as a real site's articles do, not one cluster per template), and a
"changed" page is the same page with one sentence of its second paragraph edited.

URLs: ``http://127.0.0.<h>:<port>/s<section>/item-<i>.html`` with ``h = 1 + i % hosts``: loopback
hosts, so the reconcile phase can serve each host's sitemaps from a local HTTP server bound
to that address.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from _common import real_pages

SENTENCE = re.compile(r"(?<=[.!?])\s+")
CHANGE_EVERY = 20  # page i is edited in the "changed" re-crawl when i % 20 == 7: 5%
CHANGE_AT = 7

_TEMPLATES = (
    # (site name, nav items, sidebar heading, footer text)
    ("The Daily Ledger", ("World", "Business", "Science", "Culture", "Opinion"), "Most read",
     "© 2026 The Daily Ledger. All rights reserved. Privacy · Terms · Contact"),
    ("Notes from the Field", ("Home", "Archive", "Tags", "About"), "Recent posts",
     "Written with care. Subscribe by RSS. Comments are moderated."),
    ("Project Handbook", ("Guide", "Reference", "API", "Changelog", "FAQ"), "On this page",
     "Documentation licensed CC BY 4.0. Edit this page on the tracker."),
    ("Corner Shop", ("New in", "Sale", "Gift cards", "Stores", "Help"), "Related items",
     "Free returns within 30 days. Secure checkout. Customer service 9–5."),
)  # fmt: skip


def url(i: int, hosts: int, port: int) -> str:
    """Page ``i``'s URL."""
    return f"http://127.0.0.{1 + i % hosts}:{port}/s{(i // hosts) % 97}/item-{i}.html"


def load_sentences(cache: Path) -> list[str]:
    """Real sentences of 5–40 words from the corpus texts (cached as JSON in ``cache``)."""
    if cache.exists():
        cached: list[str] = json.loads(cache.read_text())
        return cached
    from changewatch.fingerprint import page_text

    out = []
    for _name, html in real_pages():
        for sentence in SENTENCE.split(page_text(html, None, None).content):
            if 5 <= len(sentence.split()) <= 40 and "<" not in sentence:
                out.append(sentence.strip())
    out = sorted(set(out))
    cache.write_text(json.dumps(out))
    return out


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def body(i: int, sentences: list[str], *, changed: bool = False) -> bytes:
    """Page ``i``'s HTML; ``changed`` edits one sentence of pages ``i % 20 == 7``."""
    rng = random.Random(i)
    name, nav, side, foot = _TEMPLATES[i % len(_TEMPLATES)]
    title = f"Item {i}: " + " ".join(rng.choice(sentences).split()[:6])
    paragraphs = []
    for p in range(rng.randint(6, 12)):
        picked = [rng.choice(sentences) for _ in range(rng.randint(2, 4))]
        if p == 0:
            picked.insert(0, f"Entry number {i} of the archive.")
        if p == 1 and changed and i % CHANGE_EVERY == CHANGE_AT:
            picked[0] = f"This paragraph was revised for entry {i} and now reads differently."
        paragraphs.append("<p>" + _escape(" ".join(picked)) + "</p>")
    links = "".join(f'<li><a href="/{n.lower().replace(" ", "-")}/">{n}</a></li>' for n in nav)
    related = "".join(
        f'<li><a href="/s{rng.randrange(97)}/item-{rng.randrange(10_000_000)}.html">'
        f"{_escape(' '.join(rng.choice(sentences).split()[:5]))}</a></li>"
        for _ in range(5)
    )
    html = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_escape(title)} | {name}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="/static/site.css"></head><body>'
        f'<header class="site"><a class="logo" href="/">{name}</a><nav><ul>{links}</ul></nav>'
        '<form action="/search"><input name="q" placeholder="Search"></form></header>'
        f'<main><article><h1>{_escape(title)}</h1><p class="byline">Posted in section '
        f"{(i // 7) % 97}</p>{''.join(paragraphs)}</article>"
        f"<aside><h2>{side}</h2><ul>{related}</ul></aside></main>"
        f'<footer><p>{foot}</p></footer><script src="/static/site.js"></script></body></html>'
    )
    return html.encode()
