"""Duplicate clusters: a content held by many stored pages is read through its first holders,
and ``duplicate_of`` still names what one-by-one calls would (issue 17)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from changewatch import ChangeWatch, fingerprint
from changewatch.urls import url_digest

from ._pages import long_page, one_word_edit

COPIES = 150
CLUSTER = [f"https://soft404.example/missing/{i}" for i in range(COPIES)]


def _seed_cluster(watch: ChangeWatch) -> str:
    """``COPIES`` stored pages with one content; the URL with the smallest digest."""
    watch.should_parse_many([(url, long_page()) for url in CLUSTER])
    return min(CLUSTER, key=url_digest)


def test_a_clustered_content_is_read_through_its_first_holder(watch: ChangeWatch) -> None:
    """However many stored pages share a content, a new page's copies are read as its
    smallest-digest holder alone (not every copy: they all share every SimHash band)."""
    least = _seed_cluster(watch)
    fp = fingerprint(long_page())
    with watch.store.transaction() as tx:
        (holder,) = tx.copy_candidates([(fp.content_sha256, fp.simhash)], 1)
        assert holder.url == least
        three = tx.copy_candidates([(fp.content_sha256, fp.simhash)], 3)
    assert [c.url for c in three] == sorted(CLUSTER, key=url_digest)[:3]


def test_new_copy_of_a_cluster_names_the_smallest_holder(watch: ChangeWatch) -> None:
    """A new page with a clustered content names its smallest-digest holder, one by one and
    in a batch; a near copy of the cluster still finds it through the bands."""
    least = _seed_cluster(watch)
    one = watch.should_parse("https://other.example/a", long_page())
    batch = watch.should_parse_many(
        [("https://other.example/b", long_page()), ("https://other.example/c", one_word_edit())]
    )
    assert [d.kind for d in (one, *batch)] == ["new"] * 3
    assert one.duplicate_of == batch[0].duplicate_of == least
    assert batch[1].duplicate_of in CLUSTER


@pytest.mark.parametrize("holder_first", [True, False], ids=["holder-moves-first", "new-first"])
def test_batch_where_the_smallest_holder_moves_answers_as_one_by_one(
    make_watch: Callable[..., ChangeWatch],
    make_database_url: Callable[..., str],
    holder_first: bool,
) -> None:
    """A batch that changes the smallest holder of a content and adds a new copy of it
    names the holder one-by-one calls would: the next one if the holder moved first."""
    stored = [f"https://h.example/{i}" for i in range(4)]
    least = min(stored, key=url_digest)
    items = [(least, long_page(7)), ("https://h.example/new", long_page())]
    if not holder_first:
        items.reverse()
    answers = []
    for batched in (False, True):
        watch = make_watch(database_url=make_database_url())
        watch.should_parse_many([(url, long_page()) for url in stored])
        if batched:
            answers.append(watch.should_parse_many(items))
        else:
            answers.append([watch.should_parse(url, html) for url, html in items])
    one_by_one, batch = answers
    assert [d.duplicate_of for d in batch] == [d.duplicate_of for d in one_by_one]
    new = next(d for d in batch if d.kind == "new")
    expected = sorted(stored, key=url_digest)[1] if holder_first else least
    assert new.duplicate_of == expected


def test_batch_where_every_holder_moves_falls_back_to_near_copies(
    make_watch: Callable[..., ChangeWatch], make_database_url: Callable[..., str]
) -> None:
    """When the only holder of a content changes earlier in the batch, a new copy of that
    content is matched with a near copy, as one by one."""
    answers = []
    for batched in (False, True):
        watch = make_watch(database_url=make_database_url())
        watch.should_parse("https://h.example/only", long_page())
        watch.should_parse("https://h.example/near", one_word_edit())
        items = [
            ("https://h.example/only", long_page(3)),
            ("https://h.example/new", long_page()),
        ]
        if batched:
            answers.append(watch.should_parse_many(items))
        else:
            answers.append([watch.should_parse(url, html) for url, html in items])
    one_by_one, batch = answers
    assert [(d.kind, d.duplicate_of) for d in batch] == [
        (d.kind, d.duplicate_of) for d in one_by_one
    ]
    assert batch[1].duplicate_of == "https://h.example/near"
