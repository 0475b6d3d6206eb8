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
_SECTIONING_TAGS = frozenset({"article", "aside", "main", "nav", "section"})
# What the walk tells apart, as bits of the kind of a lexbor tag id (_tag_ids).
_BLOCK, _LINK, _SECTIONING, _HEADING, _PARAGRAPH = 1, 2, 4, 8, 64
_TEXT, _OTHER = 16, 32
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LINK_TAGS = frozenset({"a", "area"})
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
    >>> is_collapsed_content("We keep your data for thirty days after you go.", False, None, "p")
    True
    """
    if controlled or tag == "details" or (role or "").strip().lower() == "tabpanel":
        return True
    return len(text.split()) >= COLLAPSED_MIN_WORDS


def _role(node: Any) -> str | None:
    value = node.attributes.get("role")
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def segment(
    root: Any, main_ids: set[int], chrome_ids: set[int], hrefs: list[str] | None = None
) -> list[Segment]:
    """The blocks of ``root``'s subtree in document order (see the module docstring).

    ``main_ids``/``chrome_ids``: ``mem_id`` of the elements matching :data:`MAIN_SELECTOR`
    and :data:`CHROME_SELECTOR`. The ``href`` of every ``a`` and ``area`` met is appended to
    ``hrefs``. A heading's link to a fragment of the page (its own anchor) is not counted as
    link text: the heading is content, not a link list. Comments are skipped; the caller
    has removed invisible elements. A chrome landmark with no main marker inside is read as
    one block, by lexbor in C (its parts change together, and one learned key covers it).

    The walk follows ``child``/``next`` pointers with an explicit stack and tells elements
    apart by lexbor's integer tag ids: it is the one Python step per node of fingerprinting,
    so it does as little as it can (nesting is bounded only by the caller's guard).
    """
    out: list[Segment] = []
    buffer: list[str] = []
    link_chars = 0
    path = root.tag or ""
    mark = NONE
    sectioning = headings = links = 0
    marked = bool(main_ids or chrome_ids)
    found = [] if hrefs is None else hrefs
    kinds = _KINDS
    # Per open element: the element, what it opened (_BLOCK, _LINK, _SECTIONING, _HEADING
    # bits), and the path and mark to restore when it closes.
    stack: list[tuple[Any, int, str, int]] = []
    node = root.child
    while node is not None:
        tag_id = node.tag_id
        kind = kinds.get(tag_id, -1)
        if kind < 0:
            kind = _kind_of(node.tag)
            if tag_id < _FIXED_IDS:
                kinds[tag_id] = kind
        if kind == _TEXT:
            # Text nodes join with a space, as in version 3: a link added around words of a
            # sentence changes the text (the corpus labels such steps real edits).
            text = node.text_content
            if text and not text.isspace():
                buffer.append(text)
                if links:
                    link_chars += len(text)
            following = node.next
        elif kind == _OTHER:
            following = node.next  # comments, processing instructions
        else:
            first = node.child
            opened = 0
            if kind & _BLOCK or (marked and (node.mem_id in main_ids or node.mem_id in chrome_ids)):
                if buffer:
                    _flush(out, path, buffer, mark, link_chars)
                    buffer, link_chars = [], 0
                if first is not None:
                    tag = node.tag
                    if marked and (node.mem_id in main_ids or node.mem_id in chrome_ids):
                        inner, step = _entered(node, tag, mark, sectioning, main_ids, chrome_ids)
                        if inner == CHROME and mark != CHROME:
                            whole = _whole_landmark(node, f"{path}/{step}", found)
                            if whole is not None:
                                if whole.text:
                                    out.append(whole)
                                first = None
                    else:
                        inner, step = mark, tag
                        if kind & _PARAGRAPH:
                            # A p holds phrasing content only (HTML §13.2.6.4.7 closes it at
                            # any block start tag): one block, read by lexbor in one call.
                            state = (mark, links, headings)
                            whole = _whole_paragraph(node, f"{path}/p", state, found)
                            if whole.text:
                                out.append(whole)
                            first = None
                    if first is not None:
                        stack.append((node, _BLOCK, path, mark))
                        opened = _BLOCK
                        mark, path = inner, f"{path}/{step}"
            if kind & _LINK:
                href = _href(node, found)
                if first is not None and _navigates(href, headings):
                    links += 1
                    opened |= _LINK
            if first is not None:
                if kind & _SECTIONING:
                    sectioning += 1
                    opened |= _SECTIONING
                elif kind & _HEADING:
                    headings += 1
                    opened |= _HEADING
                if opened & _BLOCK:
                    stack[-1] = (node, opened, stack[-1][2], stack[-1][3])
                else:
                    stack.append((node, opened, path, mark))
                node = first
                continue
            following = node.next
        while following is None and stack:
            element, opened, saved_path, saved_mark = stack.pop()
            if opened:
                if opened & _BLOCK:
                    if buffer:
                        _flush(out, path, buffer, mark, link_chars)
                        buffer, link_chars = [], 0
                    path, mark = saved_path, saved_mark
                if opened & _LINK:
                    links -= 1
                if opened & _SECTIONING:
                    sectioning -= 1
                if opened & _HEADING:
                    headings -= 1
            following = element.next
        node = following
    if buffer:
        _flush(out, path, buffer, mark, link_chars)
    return out


def _flush(out: list[Segment], path: str, buffer: list[str], mark: int, link_chars: int) -> None:
    """Close the run of text in ``buffer`` as a segment."""
    out.append(Segment(path, " ".join(buffer), mark, link_chars))


def _navigates(href: str, headings: int) -> bool:
    """Whether a link's text counts as link text (link density): a link to another page or
    place, not a ``mailto:``/``tel:`` address or a script, nor a heading's own anchor.

    >>> _navigates("/about", 0), _navigates("mailto:dpo@example.com", 0), _navigates("#s2", 1)
    (True, False, False)
    """
    if href.startswith("#"):
        return not headings
    head = href[:11].lower()
    return not head.startswith(_NOT_NAVIGATION)


_NOT_NAVIGATION = ("mailto:", "tel:", "sms:", "javascript:", "data:")


def _href(node: Any, hrefs: list[str]) -> str:
    """A link's ``href``, stripped, appended to ``hrefs`` (``""`` for none)."""
    href = node.attributes.get("href")
    if not isinstance(href, str):
        return ""
    href = href.strip()
    hrefs.append(href)
    return href


def _whole_paragraph(
    node: Any, path: str, state: tuple[int, int, int], hrefs: list[str]
) -> Segment:
    """A ``p`` read in one call of lexbor's text extraction; its links found by a walk over
    its elements only (lexbor's iterator, no text nodes)."""
    mark, inside_link, headings = state
    text = node.text(separator=" ", skip_empty=True)
    if inside_link:
        for element in node.traverse():
            if _KINDS.get(element.tag_id, 0) & _LINK:
                _href(element, hrefs)
        return Segment(path, text, mark, len(text))
    link_chars = 0
    for element in node.traverse():
        if _KINDS.get(element.tag_id, 0) & _LINK:
            href = _href(element, hrefs)
            if _navigates(href, headings):
                link_chars += len(element.text(separator=" ", skip_empty=True))
    return Segment(path, text, mark, link_chars)


def _whole_landmark(node: Any, path: str, hrefs: list[str]) -> Segment | None:
    """A chrome landmark read in one call of lexbor's text extraction, or ``None`` when a
    main marker sits inside it (then it is walked, so that the marker is seen)."""
    if node.css_first(MAIN_SELECTOR) is not None:
        return None
    links = 0
    for link in node.css("a, area"):
        _href(link, hrefs)
        links += len(link.text(separator=" ", skip_empty=True))
    return Segment(path, node.text(separator=" ", skip_empty=True), CHROME, links)


def _entered(
    node: Any, tag: str, mark: int, sectioning: int, main_ids: set[int], chrome_ids: set[int]
) -> tuple[int, str]:
    """The mark inside ``node`` and its path step (the tag, with the role of a marked one)."""
    key = node.mem_id
    if key in main_ids:
        mark = MAIN  # before chrome: <main class="cookie-policy"> is content
    elif key in chrome_ids:
        if tag not in _PAGE_LEVEL_ONLY or not sectioning:
            mark = CHROME
    else:
        return mark, tag
    role = _role(node)
    return mark, f"{tag}[{role}]" if role else tag


def _kind_of(tag: str) -> int:
    """What the walk needs to know of a tag (bits), by its name."""
    if tag[0] == "-":
        return _TEXT if tag == "-text" else _OTHER
    return (
        (_BLOCK if tag in BLOCK_TAGS else 0)
        | (_LINK if tag in _LINK_TAGS else 0)
        | (_SECTIONING if tag in _SECTIONING_TAGS else 0)
        | (_HEADING if tag in _HEADING_TAGS else 0)
        | (_PARAGRAPH if tag == "p" else 0)
    )


#: lexbor tag id → :func:`_kind_of` its name, filled as tags are met. Only the fixed ids of
#: the HTML tags lexbor knows (small integers) are kept: an unknown element's id is made per
#: document and is never a block, link, section or heading.
_KINDS: dict[int, int] = {}
_FIXED_IDS = 1 << 16
