"""Fingerprint version 4: main content versus chrome, clocks in context, collapsed content,
outlinks and per-block keys (issue 20)."""

from __future__ import annotations

import gzip
from collections import Counter

import pytest
import shared_corpus

from changewatch.config import fingerprint_policy_from_mapping
from changewatch.errors import ConfigError
from changewatch.fingerprint import (
    EMPTY_SHA256,
    FINGERPRINT_VERSION,
    Fingerprint,
    FingerprintPolicy,
    fingerprint,
    normalise,
    page_text,
    strip_volatile,
)
from changewatch.fingerprint.regions import SEPARATOR

READABILITY = shared_corpus.path("pages-readability")


def _page(main: str, *, nav: str = "Home News Sport", footer: str = "Contact us") -> str:
    return (
        f"<html><head><title>Report</title></head><body><header><nav>{nav}</nav></header>"
        f"<main>{main}</main><footer>{footer}</footer></body></html>"
    )


def _same_content(a: str | bytes, b: str | bytes) -> bool:
    return fingerprint(a).content_sha256 == fingerprint(b).content_sha256


# --- clocks in context ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "old", "new"),
    [
        ("He scored in the final 4:29 of regulation to win it.", "4:29", "4:20"),
        ("Crowds gathered for the opening ceremony at 2:30pm on the square.", "2:30pm", "3:30pm"),
        ("The road stays closed from 10:30 p.m. Aug. 9 until the repairs end.", "10:30", "20:30"),
    ],
)
def test_a_time_edited_inside_prose_is_a_change(sentence: str, old: str, new: str) -> None:
    """A time of day inside a sentence is content: editing it changes content_sha256 (the
    default patterns used to remove every time of day, so these edits were unchanged)."""
    before = _page(f"<p>{sentence}</p>")
    after = _page(f"<p>{sentence.replace(old, new)}</p>")
    assert not _same_content(before, after)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("<p>Updated 5 minutes ago</p>", "<p>Updated 17 minutes ago</p>"),
        (
            "<div>Page generated at 2026-03-01T12:00:00Z</div>",
            "<div>Page generated at 2026-03-04T08:13:59Z</div>",
        ),
        (
            "<span>Mon, 01 Mar 2026 12:00:00 GMT</span>",
            "<span>Tue, 02 Mar 2026 09:30:00 GMT</span>",
        ),
        ("<p>Last updated: 3 March 2026</p>", "<p>Last updated: 9 April 2026</p>"),
        ("<p>Posted 3 hours ago by the desk</p>", "<p>Posted 4 hours ago by the desk</p>"),
    ],
)
def test_label_clocks_stay_unchanged(first: str, second: str) -> None:
    """A stamp standing as a label (after a label word, or a block that is mostly the stamp)
    is volatile, in the main content as anywhere."""
    story = "<p>The committee approved the revised budget after a long debate.</p>"
    assert _same_content(_page(story + first), _page(story + second))


def test_a_date_in_prose_is_content() -> None:
    """A date inside a sentence, even near a revision word, is content."""
    before = _page("<p>The council updated its plan on 3 March 2026 after the vote.</p>")
    assert not _same_content(before, before.replace("3 March", "4 March"))
    dateline = _page("<p>3 March 2026</p><p>The council met.</p>")
    assert not _same_content(dateline, dateline.replace("3 March", "4 March"))


def test_strip_volatile_is_one_pass_on_nested_stamps() -> None:
    """Stamps whose removal would join their neighbours into new stamps go in one pass:
    "5 1:00 … hours ago …" after a label word is one run of stamp words."""
    text = "updated " + "5 1:00 " * 50 + "hours ago " * 50 + "by the desk"
    assert strip_volatile(text) == "updated by the desk"
    assert strip_volatile("5 1:00 " * 50 + "hours ago " * 50 + "and more") == "and more"
    prose = "the race that began at 1:00 went on for hours and ended in a long sprint finish"
    assert strip_volatile(prose) == prose


# --- regions --------------------------------------------------------------------------------


def test_chrome_changes_leave_the_content_unchanged_and_are_flagged() -> None:
    """A banner, a menu, a footer or an aside that changes is a chrome change: the same
    content_sha256 (so should_parse says unchanged), another chrome_sha256."""
    story = "<p>The committee approved the revised budget after a long debate.</p>"
    base = _page(story)
    for changed in (
        _page(story, nav="Home News Sport Weather"),
        _page(story, footer="Contact us · We are hiring!"),
        base.replace("<main>", "<aside>Trending: Storm closes schools</aside><main>"),
        base.replace("<body>", '<body><div role="banner">Sale ends today</div>'),
        base.replace("<body>", '<body><div class="cookie-consent">We use cookies.</div>'),
    ):
        a, b = fingerprint(base), fingerprint(changed)
        assert a.content_sha256 == b.content_sha256, changed
        assert a.chrome_sha256 != b.chrome_sha256, changed


def test_an_edit_of_the_main_content_is_a_change() -> None:
    """One word of the article changed: content_sha256 moves, the chrome hash does not."""
    a = fingerprint(_page("<p>The committee approved the revised budget today.</p>"))
    b = fingerprint(_page("<p>The committee rejected the revised budget today.</p>"))
    assert a.content_sha256 != b.content_sha256
    assert a.chrome_sha256 == b.chrome_sha256


def test_headers_and_footers_inside_the_article_are_content() -> None:
    """HTML-AAM: header and footer are landmarks only at page level; inside article or
    section they are the article's own."""
    page = (
        "<main><article><header>By Ann Lee</header><p>Story.</p>"
        "<footer>Filed under budget</footer></article></main>"
    )
    assert normalise(page) == "by ann lee story. filed under budget"


def test_without_a_main_marker_prose_is_content_and_link_lists_chrome() -> None:
    """No main marker: paragraphs are content, a block that is mostly links is chrome."""
    page = (
        "<div><a href='/a'>One</a> <a href='/b'>Two</a> <a href='/c'>Three</a></div>"
        "<div><p>The committee approved the revised budget after a long debate.</p></div>"
    )
    parts = page_text(page)
    assert parts.content == "the committee approved the revised budget after a long debate."
    assert parts.chrome == "one two three"


def test_prose_outside_the_main_marker_is_never_dropped() -> None:
    """A paragraph outside main (a marker that covers only the title) stays content."""
    page = (
        "<main><h1>Budget</h1></main><div><p>The committee approved the revised budget "
        "after a long debate on Tuesday.</p></div><div>Share</div>"
    )
    parts = page_text(page)
    assert "the committee approved" in parts.content
    assert parts.chrome == "share"


def test_a_page_inside_a_landmark_is_all_content() -> None:
    """A whole page wrapped in a dialog or a header (no main marker): the landmarks are
    not trusted, all visible text is content."""
    page = (
        "<div role='dialog'><p>The committee approved the revised budget after a long "
        "debate.</p><p>The vote was close and the mayor said she was pleased.</p></div>"
        "<p>Short note.</p>"
    )
    assert page_text(page).chrome == ""
    assert "the vote was close" in normalise(page)


@pytest.mark.corpus
def test_regions_never_lose_text() -> None:
    """On every corpus page, the content's and the chrome's words together are exactly the
    page's visible words (regions off): segmenting and classifying lose nothing."""
    flat_policy = FingerprintPolicy(regions=False, volatile=())
    split_policy = FingerprintPolicy(volatile=())
    pages = sorted(READABILITY.glob("*.html.gz"))
    assert len(pages) >= 100
    for path in pages:
        page = gzip.decompress(path.read_bytes())
        parts = page_text(page, policy=split_policy)
        flat = page_text(page, policy=flat_policy).content
        assert Counter((parts.content + " " + parts.chrome).split()) == Counter(flat.split()), (
            path.name
        )


@pytest.mark.corpus
def test_main_content_keeps_most_article_words_on_the_corpus() -> None:
    """On the real pages, the long paragraphs (40 words or more, the article body of a news
    page) are content, not chrome, on all but a handful of pages — and those put them in an
    aside, a dialog or a footer (a related story, a cookie notice)."""
    misplaced = []
    for path in sorted(READABILITY.glob("*.html.gz")):
        parts = page_text(gzip.decompress(path.read_bytes()), with_blocks=True)
        long_prose = [b for b in parts.blocks if b.prose and b.length >= 240]
        chrome = [b for b in long_prose if b.region == "chrome"]
        if long_prose and len(chrome) * 2 > len(long_prose):
            misplaced.append(path.name)
    assert len(misplaced) <= 3, misplaced


def test_policy_main_makes_the_rest_chrome_and_regions_off_keeps_all() -> None:
    """A policy main selector that matches is the main region; regions=false is all text."""
    page = "<div id='story'><p>Story text</p></div><div>Other</div><nav>Menu</nav>"
    main = page_text(page, policy=FingerprintPolicy(main="#story"))
    assert (main.content, main.chrome) == ("story text", "other menu")
    flat = page_text(page, policy=FingerprintPolicy(regions=False))
    assert (flat.content, flat.chrome) == ("story text other menu", "")


def test_boilerplate_true_leaves_chrome_out_of_the_chrome_hash() -> None:
    """boilerplate = true (version 4 meaning): chrome changes are not even flagged."""
    policy = FingerprintPolicy(boilerplate=True)
    a = fingerprint(_page("<p>Story</p>"), policy=policy)
    b = fingerprint(_page("<p>Story</p>", nav="Other"), policy=policy)
    assert (a.content_sha256, a.chrome_sha256) == (b.content_sha256, b.chrome_sha256)
    assert a.chrome_sha256 == EMPTY_SHA256


def test_policy_toml_takes_regions() -> None:
    """The [fingerprint] table takes regions (true/false), per host too; a bad value is a
    ConfigError naming it."""
    policy = fingerprint_policy_from_mapping({"hosts": {"a.example": {"regions": False}}})
    assert (policy.regions, policy.for_host("a.example").regions) == (True, False)
    with pytest.raises(ConfigError, match="regions must be true or false"):
        fingerprint_policy_from_mapping({"regions": "no"})


# --- collapsed content ----------------------------------------------------------------------

_SECTION = (
    "Personal data is kept for the time needed to provide the service and for the legal "
    "retention period that applies to it."
)


def _accordion(*panels: str) -> str:
    buttons = "".join(
        f'<button aria-expanded="false" aria-controls="p{i}">Section {i}</button>'
        f'<div id="p{i}" aria-hidden="true" style="max-height:0">{text}</div>'
        for i, text in enumerate(panels)
    )
    return _page(f"<h1>Privacy</h1>{buttons}")


def test_edits_inside_closed_accordion_panels_are_detected() -> None:
    """Accordion panels (aria-hidden, opened by a click, named by aria-controls) are
    content: two sections added are a change (they used to be dropped as hidden)."""
    before = _accordion(f"<p>{_SECTION}</p>", "<p>Short.</p>")
    after = _accordion(
        f"<p>{_SECTION}</p>", "<p>Short.</p>", f"<p>New {_SECTION}</p>", "<p>Another.</p>"
    )
    assert not _same_content(before, after)
    assert "personal data is kept" in normalise(before)
    assert "short." in normalise(before)


def test_edits_inside_inactive_tab_panels_and_details_are_detected() -> None:
    """An inactive tab panel (role=tabpanel, hidden) and a closed details are content."""
    tabs = _page('<div role="tabpanel" hidden>Refunds within 30 days.</div><p>Visible.</p>')
    assert not _same_content(tabs, tabs.replace("30 days", "14 days"))
    details = _page("<details><summary>More</summary><p>Fees apply.</p></details>")
    assert not _same_content(details, details.replace("Fees apply", "No fees"))


def test_hidden_tokens_stay_noise() -> None:
    """A session id in a hidden div, an icon's label, a hidden input: rotating them changes
    nothing, and they are not in the text."""
    base = "<p>The committee approved the revised budget.</p>"

    def render(token: str) -> str:
        return _page(
            f'{base}<div hidden>sess-{token}</div><span aria-hidden="true">icon-{token}</span>'
            f'<input type="hidden" value="{token}">'
        )

    assert _same_content(render("a3f9c2e1"), render("77b0d4aa"))
    assert "a3f9c2e1" not in normalise(render("a3f9c2e1"))


# --- outlinks and per-block keys ------------------------------------------------------------


def test_outlinks_are_canonicalised_resolved_and_hashed() -> None:
    """Relative links resolve against the page URL (and <base href>); tracking parameters and
    fragments do not change the links hash; a new link does."""
    url = "https://example.com/news/today"
    first = fingerprint(_page("<p>x</p>", nav="<a href='/a'>A</a> <a href='b#top'>B</a>"), url=url)
    same = fingerprint(
        _page(
            "<p>x</p>",
            nav="<a href='https://EXAMPLE.com/a?utm_source=x'>A</a> <a href='/news/b'>B</a>",
        ),
        url=url,
    )
    more = fingerprint(
        _page("<p>x</p>", nav="<a href='/a'>A</a> <a href='b'>B</a> <a href='/c'>C</a>"), url=url
    )
    assert first.links_sha256 == same.links_sha256
    assert first.links_sha256 != more.links_sha256
    assert first.content_sha256 == more.content_sha256
    parts = page_text("<base href='https://cdn.example.org/x/'><a href='y'>y</a>", url=url)
    assert parts.links == ("https://cdn.example.org/x/y",)
    assert fingerprint("<p>no links</p>").links_sha256 == EMPTY_SHA256


def test_block_keys_are_stable_and_learned_noise_never_hides_prose() -> None:
    """Each block has a key (path and ordinal), a shape (digits as 0) and a text hash; a key
    passed back as learned noise takes a learnable block out, never a paragraph nor anything
    inside an explicit main marker."""
    story = "<p>The committee approved the revised budget after a long debate.</p>"
    page = f"<div>{story}<div>1,234 views</div></div>"
    parts = page_text(page, with_blocks=True)
    counter = next(b for b in parts.blocks if b.path.endswith("body/div/div"))
    paragraph = next(b for b in parts.blocks if b.path.endswith("div/p"))
    assert (counter.prose, counter.learnable, paragraph.prose, paragraph.learnable) == (
        False,
        True,
        True,
        False,
    )
    recount = page_text(page.replace("1,234", "1,240"), with_blocks=True)
    moved = next(b for b in recount.blocks if b.path.endswith("body/div/div"))
    assert (moved.key, moved.shape) == (counter.key, counter.shape)
    assert moved.text_hash != counter.text_hash
    learned = {counter.shape, paragraph.key, paragraph.shape}
    a = fingerprint(page, volatile_blocks=learned)
    b = fingerprint(page.replace("1,234", "1,240"), volatile_blocks=learned)
    assert a.content_sha256 == b.content_sha256
    assert (
        fingerprint(page).content_sha256
        != fingerprint(page.replace("1,234", "1,240")).content_sha256
    )
    edited = fingerprint(page.replace("approved", "rejected"), volatile_blocks=learned)
    assert edited.content_sha256 != a.content_sha256
    marked = f"<main>{story}<div>1,234 views</div></main>"
    in_main = next(b for b in page_text(marked, with_blocks=True).blocks if b.length == 11)
    assert not in_main.learnable
    x = fingerprint(marked, volatile_blocks={in_main.shape, in_main.key})
    y = fingerprint(marked.replace("1,234", "1,240"), volatile_blocks={in_main.shape, in_main.key})
    assert x.content_sha256 != y.content_sha256
    assert fingerprint(page).blocks == ()
    excluded = fingerprint(page, with_blocks=True, volatile_blocks=learned).blocks
    assert [b.excluded for b in excluded] == [b.key == counter.key for b in excluded]


def test_template_blocks_of_the_host_are_chrome() -> None:
    """A short block whose text hash the caller says stands on many of the host's pages is
    chrome on a page without a main marker."""
    page = "<div>Follow us</div><p>The committee approved the revised budget today, again.</p>"
    follow = next(b for b in page_text(page, with_blocks=True).blocks if b.length == 9)
    parts = page_text(page, template_blocks={follow.text_hash})
    assert (parts.chrome, "follow us" in parts.content) == ("follow us", False)


def test_version_4_and_the_new_digests_are_checked() -> None:
    """FINGERPRINT_VERSION is 4; chrome and links digests must be 32 bytes."""
    assert FINGERPRINT_VERSION == fingerprint("<p>x</p>").version == 4
    digest = bytes(32)
    with pytest.raises(ValueError, match="32 bytes"):
        Fingerprint(digest, digest, 0, 0, chrome_sha256=b"short")


def test_a_page_with_a_separator_character_keeps_its_text() -> None:
    """A page holding NUL (the block separator; the parser drops it from text) or U+FDD0
    (the separator of version 4.0) keeps all its words, in their blocks."""
    page = "<nav>Menu</nav><main><p>a\x00b \ufdd0 story</p><p>next</p></main>"
    parts = page_text(page)
    assert (parts.content, parts.chrome) == ("ab \ufdd0 story next", "menu")
    assert SEPARATOR == "\x00"


def test_may_hold_stamps_knows_every_date_label_word() -> None:
    """may_hold_stamps spells the date label words out for speed: it must know them all."""
    from changewatch.fingerprint.volatile import DATE_LABEL_WORDS, may_hold_stamps

    assert all(may_hold_stamps(f"last {word} 3 march 2026") for word in DATE_LABEL_WORDS)
    assert not may_hold_stamps("a plain sentence of words")
