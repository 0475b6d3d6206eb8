"""The walk over a parsed page that cuts its text into blocks — pure, over a lexbor tree.

:func:`segment` (re-exported by :mod:`~changewatch.fingerprint.blocks`, which says what a
block is) follows ``child``/``next`` pointers with an explicit stack and tells elements apart
by lexbor's integer tag ids. It is the one Python step per node of fingerprinting, so it
does as little as it can: text nodes, inline elements that open nothing and links whose one
child is text are handled in the loop; what the other elements open and close is
:class:`_Walk`'s; a ``p`` (phrasing content only, HTML §13.2.6.4.7) and a chrome landmark
are read by lexbor in one call. The table of tag kinds is made before any page is read (what
the walk finds never depends on the pages read before). Nesting is bounded only by the
caller's guard.
"""

from __future__ import annotations

import hashlib
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from changewatch.fingerprint.blocks import (
    BLOCK_TAGS,
    CHROME,
    MAIN,
    MAIN_SELECTOR,
    NONE,
    Segment,
    page_level_only,
    role_of,
)

__all__ = ["segment"]

# What the walk tells apart, as bits of the kind of a lexbor tag id (_kind_of).
_BLOCK, _LINK, _SECTIONING, _HEADING, _PARAGRAPH = 1, 2, 4, 8, 64
_TEXT = 16
_SECTIONING_TAGS = frozenset({"article", "aside", "main", "nav", "section"})
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LINK_TAGS = frozenset({"a", "area"})
_NOT_NAVIGATION = ("mailto:", "tel:", "sms:", "javascript:", "data:")
#: A block's path longer than this is cut to a digest (:func:`_joined`). Every open element's
#: path stays alive while the walk is inside it, and every block keeps its own: memory grew
#: as depth² × step (1,000 nested ``<main role="a…">``, roles of 10,000 characters: 4.85 GB).
#: A real page's path is far shorter: the corpus's longest is 127 characters (yahoo-2, 34
#: levels); 4,096 is some 800 levels of ``div``, past the 512 where Blink flattens the DOM.
_MAX_PATH = 4096


def segment(
    root: Any, main_ids: set[int], chrome_ids: set[int], hrefs: list[str] | None = None
) -> list[Segment]:
    """The blocks of ``root``'s subtree in document order.

    ``main_ids``/``chrome_ids``: ``mem_id`` of the elements matching
    :data:`~changewatch.fingerprint.blocks.MAIN_SELECTOR` and
    :data:`~changewatch.fingerprint.blocks.CHROME_SELECTOR`. The ``href`` of every ``a`` and
    ``area`` met is appended to ``hrefs``. A heading's link to a fragment of the page (its
    own anchor) and ``mailto:``/``tel:`` links are not link text. Comments are skipped; the
    caller has removed invisible elements.

    The loop handles what most nodes are — text, and inline elements that open nothing — by
    itself; an element that opens a block, a link, a section, a heading or a region goes to
    :meth:`_Walk.open`, and its end to :meth:`_Walk.close`.
    """
    walk = _Walk(root.tag or "", main_ids, chrome_ids, [] if hrefs is None else hrefs)
    kinds = _KINDS
    text_id = _TEXT_ID
    markers = walk.markers
    stack = walk.stack
    buffer = walk.buffer
    node = root.child
    while node is not None:
        tag_id = node.tag_id
        if tag_id == text_id:
            text = node.text_content
            if text and not text.isspace():
                buffer.append(text)
                if walk.links:
                    walk.link_chars += len(text)
            following = node.next
        else:
            kind = kinds.get(tag_id, 0)
            first = node.child
            marker = first is not None and node.mem_id in markers if markers else False
            if first is None:
                if kind:
                    walk.leaf(node, kind)
            elif first.next is None and first.tag_id == text_id and not (kind or marker):
                text = first.text_content  # <span>text</span>: as if entered
                if text and not text.isspace():
                    buffer.append(text)
                    if walk.links:
                        walk.link_chars += len(text)
            elif kind == _LINK and not marker and first.next is None and first.tag_id == text_id:
                walk.link_text(node, first)  # <a href=…>text</a>: no need to enter it
            elif (kind or marker) and not walk.open(node, kind, tag_id, marker):
                pass  # read whole
            else:
                stack.append(node)
                node = first
                continue
            following = node.next
        while following is None and stack:
            element = stack.pop()
            if len(stack) == walk.depth:
                walk.close()
            following = element.next
        node = following
    walk.flush()
    return walk.out


class _Walk:
    """The walk's state: segments so far, the open run of text, the open elements
    (``stack``) and, for those that opened something (:data:`_BLOCK`, :data:`_LINK`,
    :data:`_SECTIONING`, :data:`_HEADING` bits), the stack depth, what they opened and the
    path and mark to restore when they close (``events``; ``depth``: the innermost's)."""

    __slots__ = (
        "buffer",
        "depth",
        "events",
        "headings",
        "hrefs",
        "link_chars",
        "links",
        "main_ids",
        "mark",
        "markers",
        "out",
        "path",
        "sectioning",
        "stack",
    )

    def __init__(self, path: str, main_ids: set[int], chrome_ids: set[int], hrefs: list[str]):
        self.out: list[Segment] = []
        self.buffer: list[str] = []
        self.link_chars = self.links = self.sectioning = self.headings = 0
        self.path, self.mark = path, NONE
        self.main_ids, self.hrefs = main_ids, hrefs
        self.markers = main_ids | chrome_ids
        self.stack: list[Any] = []
        self.events: list[tuple[int, int, str, int]] = []
        self.depth = -1

    def flush(self) -> None:
        """Close the open run of text as a segment."""
        if self.buffer:
            self.out.append(Segment(self.path, " ".join(self.buffer), self.mark, self.link_chars))
            self.buffer.clear()
            self.link_chars = 0

    def open(self, node: Any, kind: int, tag_id: int, marker: bool) -> bool:
        """Enter an element that has children and is a block, a link, a section, a heading or
        a region ``marker``; ``False`` if it was read whole instead."""
        opened = 0
        path, mark = self.path, self.mark
        if kind & _BLOCK or marker:
            if self.buffer:
                self.flush()
            tag = _NAMES.get(tag_id) or node.tag
            inner, step = mark, tag
            if marker:
                inner, step = self._entered(node, tag)
                if inner == CHROME and mark != CHROME:
                    whole = _whole_landmark(node, _joined(path, step), self.hrefs, self.main_ids)
                    if whole is not None:
                        self.out.append(whole)
                        return False
            elif kind & _PARAGRAPH:
                state = (mark, self.links, self.headings)
                self.out.append(_whole_paragraph(node, _joined(path, "p"), state, self.hrefs))
                return False
            opened = _BLOCK
            self.mark, self.path = inner, _joined(path, step)
        if kind & _LINK and _navigates(_href(node, self.hrefs), self.headings):
            self.links += 1
            opened |= _LINK
        if kind & _SECTIONING:
            self.sectioning += 1
            opened |= _SECTIONING
        elif kind & _HEADING:
            self.headings += 1
            opened |= _HEADING
        if opened:
            self.depth = len(self.stack)
            self.events.append((self.depth, opened, path, mark))
        return True

    def link_text(self, node: Any, text_node: Any) -> None:
        """A link whose one child is a text node, read without entering it (as
        :meth:`open`, the text node and :meth:`close` would)."""
        navigates = _navigates(_href(node, self.hrefs), self.headings)
        text = text_node.text_content
        if text and not text.isspace():
            self.buffer.append(text)
            if navigates or self.links:
                self.link_chars += len(text)

    def leaf(self, node: Any, kind: int) -> None:
        """An element without children: a boundary if it is a block, a link if it is one."""
        if kind & _BLOCK:
            self.flush()
        if kind & _LINK:
            _href(node, self.hrefs)

    def close(self) -> None:
        """Leave the innermost element that opened something."""
        _, opened, path, mark = self.events.pop()
        self.depth = self.events[-1][0] if self.events else -1
        if opened & _BLOCK:
            if self.buffer:
                self.flush()
            self.path, self.mark = path, mark
        if opened & _LINK:
            self.links -= 1
        if opened & _SECTIONING:
            self.sectioning -= 1
        if opened & _HEADING:
            self.headings -= 1

    def _entered(self, node: Any, tag: str) -> tuple[int, str]:
        """The mark inside a marked ``node`` and its path step (the tag, with its role)."""
        mark = self.mark
        if node.mem_id in self.main_ids:
            mark = MAIN  # before chrome: <main class="cookie-policy"> is content
        elif not page_level_only(tag) or not self.sectioning:
            mark = CHROME
        role = role_of(node)
        return mark, f"{tag}[{role}]" if role else tag


def _joined(path: str, step: str) -> str:
    """``path/step``, or if that is longer than :data:`_MAX_PATH`, ``~`` and its digest (32
    hex digits of BLAKE2b over its UTF-8): stable across fetches as a path must be (block keys
    hash it), and bounded whatever the nesting and the roles.

    >>> _joined("html/body", "nav[navigation]")
    'html/body/nav[navigation]'
    >>> _joined("html/body", "main[" + "a" * 5000 + "]")
    '~484f996dcb14daa934634ba594c11fd8'
    """
    joined = f"{path}/{step}"
    if len(joined) <= _MAX_PATH:
        return joined
    digest = hashlib.blake2b(joined.encode("utf-8", "surrogatepass"), digest_size=16)
    return "~" + digest.hexdigest()


def _navigates(href: str, headings: int) -> bool:
    """Whether a link's text counts as link text (link density): a link to another page or
    place, not a ``mailto:``/``tel:`` address or a script, nor a heading's own anchor.

    >>> _navigates("/about", 0), _navigates("mailto:dpo@example.com", 0), _navigates("#s2", 1)
    (True, False, False)
    """
    if href.startswith("#"):
        return not headings
    return not href[:11].lower().startswith(_NOT_NAVIGATION)


def _href(node: Any, hrefs: list[str]) -> str:
    """A link's ``href``, stripped, appended to ``hrefs`` (``""`` for none)."""
    href = node.attrs.get("href")  # cheaper than .attributes, which copies every attribute
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
    link_chars = 0
    first = node.child
    if first is not None and first.next is None and first.tag_id == _TEXT_ID:
        return Segment(path, text, mark, len(text) if inside_link else 0)  # text alone
    nested: set[int] = set()
    for element in node.traverse():
        if _KINDS.get(element.tag_id, 0) & _LINK:
            href = _href(element, hrefs)
            if not inside_link and _navigates(href, headings) and element.mem_id not in nested:
                link_chars += _link_length(element, nested)
    return Segment(path, text, mark, len(text) if inside_link else link_chars)


def _whole_landmark(node: Any, path: str, hrefs: list[str], main_ids: set[int]) -> Segment | None:
    """A chrome landmark read in one call of lexbor's text extraction, or ``None`` when a
    main marker sits inside it (then it is walked, so that the marker is seen). Without any
    main marker on the page (``main_ids`` empty: every element matching
    :data:`~changewatch.fingerprint.blocks.MAIN_SELECTOR` is one) there is none to look for."""
    if main_ids and node.css_first(MAIN_SELECTOR) is not None:
        return None
    links = 0
    nested: set[int] = set()
    for link in node.css("a, area"):
        if _navigates(_href(link, hrefs), 0) and link.mem_id not in nested:
            links += _link_length(link, nested)
    return Segment(path, node.text(separator=" ", skip_empty=True), CHROME, links)


def _link_length(link: Any, nested: set[int]) -> int:
    """:func:`_text_length` of a link, the ``mem_id`` of the links inside it added to
    ``nested``: their text is the link's already, and is not measured again.

    HTML's parser closes an open ``a`` at the next, but not across a scope marker (``td``,
    ``marquee``) nor in MathML: there ``<a>`` nests, and measuring each link's
    whole text read its descendants' again (``<p><math>`` then 4,000 nested links of 1,250
    words, 10 MB: 11.8 s, now 3.6 s, most of it the SimHash of its 5 million words). The walk
    itself counts the text of nested links once, as this does.
    """
    first = link.child
    if first is not None and (first.next is not None or first.tag_id != _TEXT_ID):
        pending = [first]
        while pending:
            child = pending.pop()
            if child is None:
                continue
            pending.append(child.next)
            if child.tag_id != _TEXT_ID:
                if _KINDS.get(child.tag_id, 0) & _LINK:
                    nested.add(child.mem_id)
                pending.append(child.child)
    return _text_length(link)


def _text_length(node: Any) -> int:
    """``len(node.text(separator=" ", skip_empty=True))``, without the call for an element
    whose one child is text (most links): lexbor's ``skip_empty`` drops ASCII whitespace."""
    first = node.child
    if first is None:
        return 0
    if first.next is None and first.tag_id == _TEXT_ID:
        return 0 if first.is_empty_text_node else len(first.text_content or "")
    return len(node.text(separator=" ", skip_empty=True))


def _kind_of(tag: str) -> int:
    """What the walk needs to know of a tag (bits), by its name."""
    return (
        (_BLOCK if tag in BLOCK_TAGS else 0)
        | (_LINK if tag in _LINK_TAGS else 0)
        | (_SECTIONING if tag in _SECTIONING_TAGS else 0)
        | (_HEADING if tag in _HEADING_TAGS else 0)
        | (_PARAGRAPH if tag == "p" else 0)
    )


def _fixed_kinds() -> dict[int, int]:
    """lexbor's fixed tag id → :func:`_kind_of` its name, for every tag the walk tells apart
    and for text nodes, made before any page is read (a table filled as tags were met made
    the walk depend on the pages read before: a ``p`` whose links were read by
    :func:`_whole_paragraph` before any ``a`` outside a ``p`` lost its links)."""
    names = BLOCK_TAGS | _LINK_TAGS | _SECTIONING_TAGS | _HEADING_TAGS
    document = LexborHTMLParser("<p>x</p>")
    kinds = {document.create_node(name).tag_id: _kind_of(name) for name in names}
    _NAMES.update({document.create_node(name).tag_id: name for name in names})
    text = document.css_first("p")
    if text is None or text.child is None:  # pragma: no cover - lexbor always parses it
        raise RuntimeError("lexbor did not parse <p>x</p>")
    kinds[text.child.tag_id] = _TEXT
    if max(kinds) >= _FIXED_IDS:  # pragma: no cover - lexbor knows every one of these tags
        raise RuntimeError("a tag the walk tells apart has no fixed lexbor id")
    return kinds


#: lexbor's ids of the HTML tags it knows are small integers; an unknown element's id is made
#: per document (a pointer) and is never a block, link, section or heading.
_FIXED_IDS = 1 << 16
#: lexbor tag id → the name of the tags the walk tells apart (``node.tag`` makes a new str).
_NAMES: dict[int, str] = {}
#: lexbor tag id → :func:`_kind_of` its name; any other id (an element the walk does not tell
#: apart, a comment) is 0.
_KINDS: dict[int, int] = _fixed_kinds()
_TEXT_ID = next(tag_id for tag_id, kind in _KINDS.items() if kind == _TEXT)
