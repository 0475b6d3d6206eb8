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
    "is_collapsed_content",
    "segment",
]

#: Region marks (``Segment.mark``).
NONE, MAIN, CHROME = 0, 1, 2

#: Elements laid out as their own box (HTML Living Standard §15.3.3 "flow content" rendered
#: ``display: block``, plus table cells and rows, list items and form controls' containers).
BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption center dd details dialog dir div dl dt "
    "fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html legend li "
    "main menu nav ol option p pre section summary table tbody td tfoot th thead tr ul "
    "button select textarea".split()
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
_SECTIONING_TAGS = frozenset({"article", "aside", "main", "nav", "section"})
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


def is_collapsed_content(text: str, controlled: bool, role: str | None, tag: str) -> bool:
    """Whether a hidden element's text is content a reader can open, not a hidden token.

    Structure first — ``role=tabpanel``, ``details``, an element some ``aria-controls`` names
    (an accordion's panel) — then size: :data:`COLLAPSED_MIN_WORDS` words or more.

    >>> is_collapsed_content("a3f9c2e1d0", False, None, "div")
    False
    >>> is_collapsed_content("Refunds", True, None, "div")
    True
    >>> is_collapsed_content("We keep your data for thirty days after you leave.", False, None, "div")
    True
    """
    if controlled or tag == "details" or (role or "").strip().lower() == "tabpanel":
        return True
    return len(text.split()) >= COLLAPSED_MIN_WORDS


def _role(node: Any) -> str | None:
    value = node.attributes.get("role")
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def segment(
    root: Any, main_ids: set[int], chrome_ids: set[int], in_page: set[int] = frozenset()  # type: ignore[assignment]
) -> list[Segment]:
    """The blocks of ``root``'s subtree in document order (see the module docstring).

    ``main_ids``/``chrome_ids``: ``mem_id`` of the elements matching :data:`MAIN_SELECTOR`
    and :data:`CHROME_SELECTOR`; ``in_page``: ``mem_id`` of links to a fragment of the page
    itself inside a heading (a heading's own anchor), whose text is not counted as link text.
    Comments are skipped; the caller has removed invisible
    elements. An explicit stack, not recursion: nesting is only bounded by the caller's
    nesting guard (thousands of levels).
    """
    out: list[Segment] = []
    buffer: list[str] = []
    link_chars = 0
    # Per open block element: its path and mark; per open element: (is block, is link,
    # is sectioning) to undo on the way out.
    path = root.tag or ""
    mark = NONE
    sectioning = 0
    links = 0
    blocks: list[tuple[str, int]] = []
    frames: list[tuple[Any, int]] = []
    marked = main_ids or chrome_ids
    children = root.iter(include_text=True)
    flags = 0
    while True:
        child = next(children, None)
        if child is None:
            if not frames:
                break
            if flags & 1:
                if buffer:
                    out.append(Segment(path, " ".join(buffer), mark, link_chars))
                    buffer, link_chars = [], 0
                path, mark = blocks.pop()
            if flags & 2:
                links -= 1
            if flags & 4:
                sectioning -= 1
            children, flags = frames.pop()
            continue
        tag = child.tag
        if tag == "-text":
            text = child.text_content
            if text and not text.isspace():
                buffer.append(text)
                if links:
                    link_chars += len(text)
            continue
        if tag[0] == "-":
            continue  # comments, processing instructions
        frames.append((children, flags))
        flags = 0
        if tag in BLOCK_TAGS:
            if buffer:
                out.append(Segment(path, " ".join(buffer), mark, link_chars))
                buffer, link_chars = [], 0
            blocks.append((path, mark))
            flags = 1
            step = tag
            if marked:
                key = child.mem_id
                if key in main_ids:
                    mark = MAIN  # before chrome: <main class="cookie-policy"> is content
                    role = _role(child)
                    step = f"{tag}[{role}]" if role else tag
                elif key in chrome_ids:
                    if tag not in _PAGE_LEVEL_ONLY or not sectioning:
                        mark = CHROME
                    role = _role(child)
                    step = f"{tag}[{role}]" if role else tag
            path = f"{path}/{step}"
        elif marked:
            # An inline element can carry a landmark role or a main marker too.
            key = child.mem_id
            if key in chrome_ids or key in main_ids:
                blocks.append((path, mark))
                flags = 1
                if buffer:
                    out.append(Segment(path, " ".join(buffer), mark, link_chars))
                    buffer, link_chars = [], 0
                mark = MAIN if key in main_ids else CHROME
                path = f"{path}/{tag}[{_role(child) or ''}]"
        if tag == "a" and (not in_page or child.mem_id not in in_page):
            links += 1
            flags |= 2
        if tag in _SECTIONING_TAGS:
            sectioning += 1
            flags |= 4
        children = child.iter(include_text=True)
    if buffer:
        out.append(Segment(path, " ".join(buffer), mark, link_chars))
    return out
