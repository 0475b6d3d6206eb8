"""Template blocks learned per host (issue 20): a short block on many of a host's pages is
learned from the store's counts and classified as chrome — its change is a chrome change —
while prose and the explicit main content never are; the counts are bounded, versioned and
reset. On both dialects."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.fingerprint import FINGERPRINT_VERSION
from changewatch.fingerprint.templates import DEFAULT_MAX_TEMPLATE_VALUES, TemplateValue
from changewatch.store.tables import host_template_pages, host_templates
from changewatch.store.templates import DEFAULT_TEMPLATE_SAMPLE_PAGES

if TYPE_CHECKING:
    from conftest import Clock

HOST = "shop.example"
URLS = [f"https://{HOST}/tables/{i}" for i in range(30)]
SENTENCE = " It also folds flat for storage in a small flat."


def _page(i: int, promo: str, *, extra: str = "", inside_main: bool = False) -> str:
    body = (
        f"<div class='promo'>{promo}</div><div><h1>Table {i}</h1><p>Table {i} is made "
        f"of oak, seats six people and ships in two boxes.{extra}</p></div>"
    )
    if inside_main:
        body = f"<main>{body}</main>"
    return f"<html><head><title>Table {i}</title></head><body>{body}</body></html>"


def _round(watch: ChangeWatch, promo: str, **kwargs: bool) -> Counter[tuple[str, bool]]:
    """The 30 pages in one batch, all with ``promo``: (kind, chrome_changed) counts."""
    batch = [(url, _page(i, promo, **kwargs)) for i, url in enumerate(URLS)]
    return Counter((d.kind, d.chrome_changed) for d in watch.should_parse_many(batch))


PROMOS = ["Free shipping this week", "Winter sale now on", "Two chairs for one"]


def test_a_shared_promo_line_becomes_chrome_and_a_sentence_edit_still_counts(
    make_watch: Callable[..., ChangeWatch], make_database_url: Callable[..., str]
) -> None:
    """Without learning every site-wide promo change is 30 changes. With it the first fetches
    hash as today, the promo is learned from them (30 of 30 pages), the next change of it is
    one change per page (its stored hash still holds the promo), and every later one is
    unchanged with chrome_changed; a one-sentence edit is still changed; reset forgets it."""
    plain = make_watch(database_url=make_database_url())
    before = [_round(plain, promo) for promo in PROMOS]
    assert before == [Counter({("new", False): 30})] + [Counter({("changed", False): 30})] * 2
    watch = make_watch(learn_templates=True)
    first = watch.should_parse_many([(u, _page(i, PROMOS[0])) for i, u in enumerate(URLS)])
    assert [d.content_sha256 for d in first] == [plain.history(u)[0].content_sha256 for u in URLS]
    learned = [r for r in watch.template_rules(HOST) if r["learned_at"] is not None]
    assert sorted((r["kind"], r["path"], r["pages"], r["sampled"]) for r in learned) == [
        ("slot", "html/body/div", 30, 30),
        ("text", "html/body/div", 30, 30),
    ]
    assert _round(watch, PROMOS[1]) == Counter({("changed", True): 30})  # once per page
    assert _round(watch, PROMOS[2]) == Counter({("unchanged", True): 30})
    assert _round(watch, "Free assembly") == Counter({("unchanged", True): 30})
    assert _round(watch, "Free assembly") == Counter({("unchanged", False): 30})
    edited = watch.should_parse(URLS[0], _page(0, "Free assembly", extra=SENTENCE))
    assert (edited.kind, edited.chrome_changed) == ("changed", False)
    rules = watch.template_rules(HOST)
    assert watch.reset_templates(HOST) == len(rules)
    assert watch.template_rules(HOST) == []
    again = watch.should_parse(URLS[1], _page(1, "Spring sale"))
    assert again.kind == "changed"  # the promo is content again


def test_templates_never_hide_the_explicit_main_content_nor_prose(
    make_watch: Callable[..., ChangeWatch], make_database_url: Callable[..., str]
) -> None:
    """The promo inside <main>, or a shared sentence of prose outside it, changing across the
    site: never template, every change a content change — and nothing inside <main> is even
    counted."""
    watch = make_watch(learn_templates=True)
    rounds = [_round(watch, promo, inside_main=True) for promo in PROMOS]
    assert rounds[1:] == [Counter({("changed", False): 30})] * 2
    assert watch.template_rules(HOST) == []
    other = make_watch(learn_templates=True, database_url=make_database_url())
    prose = [
        "Every table we sell is checked by hand before it leaves us.",
        "Every chair we sell is checked by hand before it leaves us.",
        "Every lamp we sell is checked by hand before it leaves us.",
    ]
    kinds = [_round(other, line) for line in prose]
    for counts in kinds[1:]:  # changed, or minor: a content change either way
        assert counts[("unchanged", False)] + counts[("unchanged", True)] == 0, counts
    assert all(r["path"] != "html/body/div" for r in other.template_rules(HOST))


def test_counts_are_bounded_per_host(make_watch: Callable[..., ChangeWatch]) -> None:
    """A hostile host of 120 pages, each with 200 unique short blocks: at most 100 pages
    sampled, at most 128 values each, and no template row more than the sample holds."""
    watch = make_watch(learn_templates=True)
    host = "hostile.example"
    for start in range(0, 120, 40):
        watch.should_parse_many(
            [
                (
                    f"https://{host}/p/{i}",
                    "<html><body>"
                    + "".join(f"<div>junk {i} {j}</div>" for j in range(200))
                    + "</body></html>",
                )
                for i in range(start, start + 40)
            ]
        )
    with watch.store.engine.connect() as conn:
        sampled = conn.execute(
            sa.select(host_template_pages.c.value_count).where(host_template_pages.c.host == host)
        ).scalars()
        counts = list(sampled)
        rows = conn.execute(
            sa.select(sa.func.count()).where(host_templates.c.host == host)
        ).scalar_one()
    assert len(counts) == DEFAULT_TEMPLATE_SAMPLE_PAGES
    assert max(counts) == DEFAULT_MAX_TEMPLATE_VALUES
    assert rows == DEFAULT_TEMPLATE_SAMPLE_PAGES * DEFAULT_MAX_TEMPLATE_VALUES
    assert all(r["learned_at"] is None for r in watch.template_rules(host))


def test_rules_are_per_host_and_per_fingerprint_version(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """Rules of another fingerprint version are never read; those learned on one host are
    not used on another."""
    watch = make_watch(learn_templates=True)
    value = TemplateValue(b"v" * 8, "text", b"k" * 8, "html/body/div")
    now = datetime(2026, 12, 1, tzinfo=UTC)
    pages = [(bytes([i]) * 16, (value,)) for i in range(6)]
    store = watch.store
    assert store.record_templates(HOST, 99, pages, now, min_pages=5, min_share=0.5)
    assert store.learned_templates(HOST, 99) == {b"v" * 8}
    assert store.learned_templates(HOST, FINGERPRINT_VERSION) == frozenset()
    _round(watch, PROMOS[0])
    assert {r["fingerprint_version"] for r in watch.template_rules(HOST)} == {
        99,
        FINGERPRINT_VERSION,
    }
    other = "https://other.example/tables/0"
    kinds = [watch.should_parse(other, _page(0, p)).kind for p in PROMOS]
    assert kinds == ["new", "changed", "changed"]  # one page: nothing learned there
    assert all(r["learned_at"] is None for r in watch.template_rules("other.example"))


def test_fetched_one_by_one_each_page_changes_at_most_once(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """Pages fetched one at a time, the promo changing every round: the template is learned
    after the fifth page; the five pages stored before change once, then never again."""
    watch = make_watch(learn_templates=True)
    changes: Counter[str] = Counter()
    for n, promo in enumerate(["Free shipping", *PROMOS, "Free assembly", "Spring sale"]):
        for i, url in enumerate(URLS):
            decision = watch.should_parse(url, _page(i, promo))
            if n and decision.kind != "unchanged":
                changes[url] += 1
    assert sorted(changes.values()) == [1] * 5  # the pages decided before it was learned
    assert set(changes) == set(URLS[:5])


def test_a_learned_slot_keeps_its_place_while_no_new_text_is_learned(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """The promo learned at its slot on 30 pages, then replaced by three texts on 10 pages
    each (none on half of them): the old slot rule stays, so its place stays template."""
    store = make_watch().store
    now = datetime(2026, 12, 1, tzinfo=UTC)
    key = b"k" * 8
    pages = [bytes([i]) * 16 for i in range(30)]

    def show(text: bytes) -> tuple[TemplateValue, ...]:
        return (TemplateValue(text * 8, "slot", key, "html/body/div"),)

    store.record_templates(
        HOST, 4, [(p, show(b"a")) for p in pages], now, min_pages=5, min_share=0.5
    )
    assert store.learned_templates(HOST, 4) == {key}
    moved = [(p, show(b"bcd"[i % 3 : i % 3 + 1])) for i, p in enumerate(pages)]
    store.record_templates(HOST, 4, moved, now, min_pages=5, min_share=0.5)
    rules = {
        r["value"]: (r["pages"], r["learned_at"] is not None) for r in store.template_rules(HOST)
    }
    assert rules == {
        b"a" * 8: (0, True),
        b"b" * 8: (10, False),
        b"c" * 8: (10, False),
        b"d" * 8: (10, False),
    }
    assert store.learned_templates(HOST, 4) == {key}
    store.record_templates(
        HOST, 4, [(p, show(b"b")) for p in pages], now, min_pages=5, min_share=0.5
    )
    assert {r["value"] for r in store.template_rules(HOST)} == {b"b" * 8}  # succeeded


def test_pages_with_a_main_marker_are_not_sampled(make_watch: Callable[..., ChangeWatch]) -> None:
    """20 pages of the host mark their <main> (templates never classify them), 10 do not:
    only the 10 are sampled, so the promo on all of them is learned (10 of 10, not 10 of 30)
    and the next promo change of the unmarked pages is a chrome change after one change."""
    watch = make_watch(learn_templates=True)

    def batch(promo: str) -> list[tuple[str, str]]:
        return [(url, _page(i, promo, inside_main=i >= 10)) for i, url in enumerate(URLS)]

    watch.should_parse_many(batch(PROMOS[0]))
    learned = [r for r in watch.template_rules(HOST) if r["learned_at"] is not None]
    assert sorted((r["kind"], r["pages"], r["sampled"]) for r in learned) == [
        ("slot", 10, 10),
        ("text", 10, 10),
    ]
    watch.should_parse_many(batch(PROMOS[1]))
    last = watch.should_parse_many(batch(PROMOS[2]))
    assert [(d.kind, d.chrome_changed) for d in last[:10]] == [("unchanged", True)] * 10
    assert all(d.kind == "changed" for d in last[10:])  # inside <main>: content


def test_what_another_worker_learned_reaches_this_one_within_a_minute(
    make_watch: Callable[..., ChangeWatch], clock: Clock
) -> None:
    """Worker B read the host's (empty) template before worker A learned it, and writes
    nothing that would make it read again (its pages are past the sample, or A counted them
    first): B reads the rules again once they are a minute old."""
    a, b = make_watch(learn_templates=True), make_watch(learn_templates=True)
    assert b.templates is not None
    assert b.templates.template_blocks(URLS[0], clock()) == frozenset()
    _round(a, PROMOS[0])
    learned = a.store.learned_templates(HOST, FINGERPRINT_VERSION)
    assert len(learned) == 2  # the promo's text hash and its slot's key
    assert b.templates.template_blocks(URLS[0], clock.advance(59)) == frozenset()
    assert b.templates.template_blocks(URLS[0], clock.advance(2)) == learned
    page = b.should_parse(URLS[0], _page(0, PROMOS[1]))
    assert (page.kind, page.chrome_changed) == ("changed", True)  # once: stored with promo
