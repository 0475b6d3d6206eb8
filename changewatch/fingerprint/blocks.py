"""A page's visible text as blocks, each with its structural path and region marks — pure.

A *block* here is a run of text between two block-level boundaries (the opening or closing
of ``p``, ``li``, ``div``, ``h1``…; HTML Living Standard §4 "flow content" that a browser lays
out as its own box), attributed to its innermost block-level element. Joining every block's
text with spaces gives the page's whole visible text: segmenting never loses a word.

Each block carries what :mod:`~changewatch.fingerprint.regions` needs to call it main
content or chrome:

- ``path``: the block-level elements from ``body`` down, as tag names, with the ARIA role of
  those that have one (``body/div/nav/ul/li``). Class names and ids are left out on purpose:
  CSS-in-JS and build tools rename them on every deploy, and a key that moves with them
  could not be learned.
- ``mark``: the innermost region mark around the block — ``MAIN`` (``main``, ``article``,
  ``[role=main]``, ``[role=article]``, ``[itemprop=articleBody]``), ``CHROME`` (``nav``,
  ``aside``, a page-level ``header``/``footer``, ``role=navigation|banner|contentinfo|
  complementary|search|dialog|alertdialog``, ``dialog``, ``[aria-modal=true]``, cookie and
  consent regions), or ``NONE``;
- ``link_chars``: how much of its text sits inside ``a`` elements (link density).

Hidden elements (``hidden``, ``aria-hidden="true"``) are *collapsed content* and kept when
their structure says a click opens them — ``role=tabpanel``, an element named by some
``aria-controls``, or a block of sentences (:func:`is_collapsed_content`) — and dropped as
noise otherwise (a session id in a hidden ``div``, an icon's label).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "BLOCK_TAGS",
    "CHROME",
    "CHROME_SELECTOR",
    "MAIN",
    "MAIN_SELECTOR",
    "NONE",
    "Segment",
    "count_words",
    "is_collapsed_content",
    "page_level_only",
    "role_of",
]

#: Region marks (``Segment.mark``).
NONE, MAIN, CHROME = 0, 1, 2

#: Elements laid out as their own box (HTML Living Standard §15.3.3 "flow content" rendered
#: ``display: block``, plus table cells and rows, list items and form controls' containers).
BLOCK_TAGS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "option",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "title",
        "tr",
        "ul",
        "button",
        "select",
        "textarea",
    ]
)

#: Explicit markers of a page's main content (HTML §4.3.1 ``article``, §4.4.14 ``main``;
#: WAI-ARIA 1.2 ``main``/``article`` roles; schema.org ``articleBody``).
MAIN_SELECTOR = 'main, article, [role="main" i], [role="article" i], [itemprop~="articleBody"]'

#: Landmarks that are not the page's content (WAI-ARIA 1.2 landmark roles and the HTML
#: elements HTML-AAM maps to them), dialogs, and cookie/consent regions. ``header`` and
#: ``footer`` are chrome only at page level: the segmenter checks they have no sectioning
#: ancestor (HTML-AAM maps them to ``banner``/``contentinfo`` only then).
CHROME_SELECTOR = (
    "nav, aside, header, footer, dialog, [aria-modal='true' i], "
    "[role='navigation' i], [role='banner' i], [role='contentinfo' i], "
    "[role='complementary' i], [role='search' i], [role='dialog' i], [role='alertdialog' i], "
    "[id*='cookie' i], [class*='cookie' i], [id*='consent' i], [class*='consent' i], "
    "[aria-label*='cookie' i], [aria-label*='consent' i]"
)
_PAGE_LEVEL_ONLY = frozenset({"header", "footer"})

#: A hidden element holding at least this many words is a block of text, not a token.
COLLAPSED_MIN_WORDS = 8


@dataclass(slots=True)
class Segment:
    """One run of text between block boundaries (see the module docstring)."""

    path: str
    text: str
    mark: int
    link_chars: int
    hidden: bool = False


def is_collapsed_content(words: int, controlled: bool, role: str | None, tag: str) -> bool:
    """Whether a hidden element is content a reader can open, not a hidden token, given
    ``words``: how many words its text has (counted up to :data:`COLLAPSED_MIN_WORDS`, as
    :func:`count_words` does: past that the count cannot change the answer).

    Structure first — ``role=tabpanel``, ``details``, an element some ``aria-controls`` names
    (an accordion's panel) — then size: :data:`COLLAPSED_MIN_WORDS` words or more.

    >>> is_collapsed_content(count_words("a3f9c2e1d0"), False, None, "div")
    False
    >>> is_collapsed_content(count_words("Refunds"), True, None, "div")
    True
    >>> text = "We keep your data for thirty days after you go."
    >>> is_collapsed_content(count_words(text), False, None, "p")
    True
    """
    if controlled or tag == "details" or (role or "").strip().lower() == "tabpanel":
        return True
    return words >= COLLAPSED_MIN_WORDS


def count_words(text: str) -> int:
    """``min(len(text.split()), COLLAPSED_MIN_WORDS)``, without splitting all of a long text.

    >>> count_words("  one two  "), count_words("word " * 10_000)
    (2, 8)
    """
    return min(len(text.split(None, COLLAPSED_MIN_WORDS)), COLLAPSED_MIN_WORDS)


def role_of(node: Any) -> str | None:
    """An element's ARIA role, stripped and lower-cased (``None``: none)."""
    value = node.attributes.get("role")
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def page_level_only(tag: str) -> bool:
    """Whether ``tag`` is a landmark only at page level (``header``, ``footer``: HTML-AAM)."""
    return tag in _PAGE_LEVEL_ONLY
