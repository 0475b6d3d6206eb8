"""Version 4's region rules for navigation disclosures and sentences around links."""

from __future__ import annotations

from changewatch.fingerprint import fingerprint, page_text

TOC = (
    "<details open><summary>{label}</summary> <!-- toc --> <nav><ul>"
    '<li><a href="#one">What we collect</a></li><li><a href="#two">Who sees it</a></li>'
    "</ul></nav></details>"
)
BODY = "<h1>Privacy</h1><p>We collect the data you give us when you sign up for the service.</p>"


def test_the_label_of_a_navigation_disclosure_is_navigation() -> None:
    """``<details><summary>…</summary><nav>…</nav></details>`` is a collapsible menu or
    table of contents: its label is chrome like the nav, inside ``main`` too (a label that
    comes and goes between deploys — "See details" — is no content change)."""
    before = page_text(f"<main>{TOC.format(label='Table of contents')}{BODY}</main>")
    after = page_text(f"<main>{TOC.format(label='See details')}{BODY}</main>")
    assert before.content == after.content
    assert "privacy" in before.content
    assert "table of contents" in before.chrome
    assert "see details" in after.chrome
    assert "what we collect" in before.chrome


def test_a_details_holding_content_stays_content() -> None:
    """An FAQ entry, or a disclosure holding text or a list beside its nav, is content."""
    faq = "<details><summary>Can I delete my account?</summary>Yes, at any time.</details>"
    assert "can i delete my account?" in page_text(f"<main>{faq}</main>").content
    mixed = (
        "<details><summary>More</summary><nav><a href='/a'>A</a></nav>"
        "<p>Our retention period is thirty days.</p></details>"
    )
    parts = page_text(f"<main>{mixed}</main>")
    assert "more" in parts.content
    assert "retention period" in parts.content
    loose = "<details><summary>More</summary>Free text<nav><a href='/a'>A</a></nav></details>"
    assert "more" in page_text(f"<main>{loose}</main>").content


SENTENCE = (
    '<p>npm shares account data with others as <a href="#account">mentioned in the section '
    "about account data</a>.</p>"
)


def test_a_sentence_around_a_long_link_is_content_without_a_main_marker() -> None:
    """A sentence whose link holds just over half its text is still prose: on a page without
    a main marker it stays in the content, so an edit to it is a change, not chrome."""
    page = f"<div>{SENTENCE}<p>We keep your data for as long as your account exists.</p></div>"
    assert "npm shares account data" in page_text(page).content
    edited = page.replace("shares account data", "sells account data")
    assert fingerprint(page).content_sha256 != fingerprint(edited).content_sha256


def test_a_list_of_links_is_still_chrome_without_a_main_marker() -> None:
    """Menus and link lists hold next to no text of their own: still chrome."""
    links = "".join(
        f"<li><a href='/p{i}'>Page number {i} of the site map</a></li>" for i in range(4)
    )
    prose = "<p>The one paragraph of the page, of prose words, as long as a paragraph is.</p>" * 3
    page = f"<div><ul>{links}</ul></div><div>{prose}</div>"
    parts = page_text(page)
    assert "page number 3" in parts.chrome
    assert "page number 3" not in parts.content
    assert "paragraph of the page" in parts.content
