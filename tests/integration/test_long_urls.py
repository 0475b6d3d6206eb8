"""The longest URL canonicalisation accepts is stored, decided and found like any other:
every index that holds a URL must take one of 8 KiB that does not compress (btree entries
are limited to about 2.7 KB on Postgres)."""

from __future__ import annotations

import random
import string

from changewatch import ChangeWatch, canonicalise
from changewatch.urls import DEFAULT_MAX_URL_LENGTH

from ._pages import page, words


def _longest_url(seed: int) -> str:
    rng = random.Random(seed)
    head = "https://example.com/"
    tail = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(9000))
    url = head + tail[: DEFAULT_MAX_URL_LENGTH - len(head)]
    assert len(canonicalise(url)) == DEFAULT_MAX_URL_LENGTH
    return url


def test_the_longest_url_is_stored_decided_and_found(watch: ChangeWatch) -> None:
    urls = [_longest_url(seed) for seed in range(3)]
    text = words(5, 120)
    first = watch.should_parse_many([(u, page(text)) for u in urls])
    assert [d.kind for d in first] == ["new", "new", "new"]
    assert watch.should_parse(urls[0], page(text)).kind == "unchanged"
    changed = watch.should_parse(urls[1], page([*text[:-1], "edited"]))
    assert changed.kind in {"changed", "minor"}
    near = watch.near_duplicates(urls[0], 3)
    assert {n.url for n in near} >= {canonicalise(urls[2])}
    assert [v.version for v in watch.history(urls[1])] == [1, 2]
