"""SimHashes made from real pages, for the near-duplicate benchmarks' "real" mode.

Real fingerprints are not uniform: near-copies of one page (session-id twins, soft 404s,
re-renders with a changed date or a word fixed) land on a few SimHashes, so the band
buckets of a crawl hold clusters. The store this builds, ``rows`` SimHashes from the
corpus's main-content texts (``fingerprint.page_text``, then ``simhash`` — the store's own):

* **clusters**: ``cluster_share`` of the rows are copies and near-copies of the corpus
  pages. Each page gets ``variants`` real edits of its text (0–4 words replaced, a sentence
  dropped or repeated, a date changed), each SimHashed; the cluster's rows are those
  SimHashes repeated (exact copies of near-copies), cluster sizes falling off as 1/rank
  (a few clusters of thousands, many of tens);
* **unrelated pages**: the other rows are new texts of 80–300 words made of sentences drawn
  from the whole corpus, each SimHashed (distinct real text, the bulk of a crawl).

Queries are half fresh near-copies of corpus pages (new edits: they fall in a cluster) and
half fresh unrelated texts.
"""

from __future__ import annotations

import random
import re

from _common import log, real_pages

from changewatch.fingerprint import page_text
from changewatch.fingerprint.simhash64 import simhash

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def corpus_texts() -> list[str]:
    """The main-content text of every corpus page with at least 80 words."""
    texts = [page_text(html, None, None).content for _name, html in real_pages()]
    return [t for t in texts if len(t.split()) >= 80]


def edit(text: str, rng: random.Random) -> str:
    """A near-copy of ``text``: one small real-world edit."""
    words = text.split()
    kind = rng.randrange(4)
    if kind == 0:  # a few words replaced (a typo fixed, a name changed)
        for _ in range(rng.randint(0, 4)):
            words[rng.randrange(len(words))] = rng.choice(("update", "2026", "fixed", "new"))
        return " ".join(words)
    sentences = _SENTENCE.split(text)
    i = rng.randrange(len(sentences))
    if kind == 1 and len(sentences) > 3:  # a sentence dropped
        return " ".join(sentences[:i] + sentences[i + 1 :])
    if kind == 2:  # a sentence repeated (a pull quote)
        return " ".join(sentences[: i + 1] + sentences[i:])
    return f"Updated {rng.randint(1, 28)} March 2026. " + text  # a date line added


def unrelated(sentences: list[str], rng: random.Random) -> str:
    """A new text of 80–300 words from sentences of the whole corpus."""
    target, out, n = rng.randint(80, 300), [], 0
    while n < target:
        s = rng.choice(sentences)
        out.append(s)
        n += s.count(" ") + 1
    return " ".join(out)


def cluster_sizes(total: int, clusters: int) -> list[int]:
    """``clusters`` sizes summing to ``total``, the k-th about 1/k of the first.

    >>> cluster_sizes(100, 4)
    [48, 24, 16, 12]
    """
    weights = [1 / (k + 1) for k in range(clusters)]
    scale = total / sum(weights)
    sizes = [max(1, int(w * scale)) for w in weights]
    sizes[0] += total - sum(sizes)
    return sizes


def real_simhashes(
    rows: int,
    queries: int,
    seed: int,
    *,
    cluster_share: float = 0.3,
    variants: int = 40,
) -> tuple[list[int], list[int]]:
    """``rows`` stored SimHashes and ``queries`` query SimHashes (see the module)."""
    rng = random.Random(seed)
    texts = corpus_texts()
    sentences = [s for t in texts for s in _SENTENCE.split(t) if len(s.split()) >= 5]
    log(f"real fingerprints: {len(texts)} corpus texts, {len(sentences):,} sentences")
    clustered = int(rows * cluster_share)
    values: list[int] = []
    for text, size in zip(texts, cluster_sizes(clustered, len(texts)), strict=True):
        near = [simhash(text)] + [simhash(edit(text, rng)) for _ in range(min(variants, size))]
        values.extend(near[i % len(near)] for i in range(size))
    log(f"real fingerprints: {len(values):,} rows in {len(texts)} clusters")
    while len(values) < rows:
        values.append(simhash(unrelated(sentences, rng)))
        if len(values) % 100_000 == 0:
            log(f"real fingerprints: {len(values):,} of {rows:,}")
    rng.shuffle(values)
    wanted = [simhash(edit(rng.choice(texts), rng)) for _ in range(queries // 2)]
    wanted += [simhash(unrelated(sentences, rng)) for _ in range(queries - len(wanted))]
    rng.shuffle(wanted)
    return values, wanted
