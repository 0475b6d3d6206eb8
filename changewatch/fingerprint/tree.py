"""What a parsed page shows, and where its regions and links are — pure, over a lexbor tree.

Each CSS query is a walk over the whole tree in C, about a tenth of a millisecond on a
typical page whatever it matches, so there is one, wide: what is never text (dropped tags,
hidden elements and the ``aria-controls`` that open them) and what may mark a region, each
node then sorted in Python. Links are read by the walk over the blocks. Policies with
ignored selectors add one query, run after the dropped tags go (they may be structural).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from changewatch.fingerprint.blocks import COLLAPSED_MIN_WORDS, count_words, is_collapsed_content
from changewatch.fingerprint.policy import DROPPED_TAGS, HIDDEN_SELECTOR, FingerprintPolicy

__all__ = ["Structure", "drop_invisible", "prepare"]

_DROPPED = frozenset(DROPPED_TAGS)
#: A refresh (a client-side redirect, :mod:`~changewatch.fingerprint.refresh`) is looked for
#: in every query: a page with regions off can be a redirect stub too.
_REFRESH_SELECTOR = "meta[http-equiv]"
_INVISIBLE_SELECTOR = ", ".join(
    (*DROPPED_TAGS, HIDDEN_SELECTOR, "[aria-controls]", _REFRESH_SELECTOR)
)
_HIDDEN_SELECTOR = f"{HIDDEN_SELECTOR}, [aria-controls], {_REFRESH_SELECTOR}"
#: What may mark a region (sorted out in Python by :func:`_record`, cheaper than one CSS
#: alternative per role): MAIN_SELECTOR and CHROME_SELECTOR of blocks.py, and <base href>.
_MARKER_SELECTOR = (
    "main, article, nav, aside, header, footer, dialog, details, [role], [itemprop], "
    "[aria-modal], "
    "[id*='cookie' i], [class*='cookie' i], [id*='consent' i], [class*='consent' i], "
    "base[href]"
)
_EVERYTHING_SELECTOR = f"{_INVISIBLE_SELECTOR}, {_MARKER_SELECTOR}"
_MAIN_TAGS = frozenset({"main", "article"})
_NOTICE_TAGS = frozenset({"div", "section", "aside", "form", "dialog", "header", "footer"})
_MAIN_ROLES = frozenset({"main", "article"})
_REGION_TAGS = frozenset({"main", "article", "nav", "aside", "header", "footer", "dialog"})
_REGION_ROLES = frozenset(
    {"main", "article", "navigation", "banner", "contentinfo", "complementary", "search"}
    | {"dialog", "alertdialog"}
)


def drop_invisible(tree: Any, rules: FingerprintPolicy) -> bool:
    """Remove what is never text: scripts, styles…, the policy's ignored selectors, and hidden
    elements that are not collapsed content. ``False`` if nothing on the page is shown (the
    root element is hidden or ignored: lexbor cannot remove it)."""
    return prepare(tree, rules, markers=False) is not None


def prepare(tree: Any, rules: FingerprintPolicy, *, markers: bool = True) -> Structure | None:
    """Drop what is never text (:func:`drop_invisible`) and find the region markers, in one
    tree query when the policy ignores nothing; ``None`` if nothing on the page is shown.

    Nodes are looked at last first: a node is sorted before any of its ancestors is
    removed, so no node of a removed subtree is touched after its removal, and a hidden panel
    is judged on what its hidden icons left. Markers inside removed subtrees are recorded
    but never met by the walk that reads them (:func:`~changewatch.fingerprint.blocks.segment`).
    """
    root = tree.root
    top = None if root is None else root.mem_id
    wanted = markers and (rules.regions or rules.main is not None)
    out = Structure()
    if rules._drop_selector is None:
        nodes = tree.css(_EVERYTHING_SELECTOR if wanted else _INVISIBLE_SELECTOR)
    else:
        if not _drop_sorted(tree.css(rules._strip_selector), top, out):
            return None
        ignored = tree.css(rules._drop_selector)
        if top is not None and any(node.mem_id == top for node in ignored):
            return None  # a policy that ignores the root element (ignore = ["html"])
        for node in reversed(ignored):
            node.decompose()
        nodes = tree.css(f"{_HIDDEN_SELECTOR}, {_MARKER_SELECTOR}" if wanted else _HIDDEN_SELECTOR)
    if not _drop_sorted(nodes, top, out):
        return None
    if rules.main is not None:
        found = tree.css_first(rules.main)
        if found is not None:
            out.main_ids, out.policy_main = {found.mem_id}, True
    return out


def _drop_sorted(nodes: list[Any], top: int | None, out: Structure) -> bool:
    """Remove the dropped-tag nodes and the hidden nodes that are noise among ``nodes``, and
    record the region markers and ``<base href>`` among them in ``out``."""
    if not nodes:
        return True
    controlled: set[str] = set()
    for node in nodes:
        value = node.attributes.get("aria-controls")
        if isinstance(value, str):
            controlled.update(value.split())
    kept: dict[int, int] = {}  # mem_id of a hidden node kept → count_words of its text
    for node in reversed(nodes):
        tag = node.tag
        if tag not in _DROPPED:
            attributes = node.attributes
            if not _is_hidden(tag, attributes):
                _record(node, tag, attributes, out)
                continue
            if tag != "input":
                words = _hidden_words(node, kept)
                opened = attributes.get("id") in controlled
                if is_collapsed_content(words, opened, attributes.get("role"), tag):
                    kept[node.mem_id] = words
                    _record(node, tag, attributes, out)
                    continue
        if node.mem_id == top:
            return False
        node.decompose()
    return True


def _hidden_words(node: Any, kept: dict[int, int]) -> int:
    """:func:`~changewatch.fingerprint.blocks.count_words` of
    ``node.text(separator=" ", skip_empty=True)``, from its text nodes (the separator keeps
    their words apart, so the count is their sum), stopping at the count that decides; a
    hidden element already ``kept`` inside it counts what it counted then.

    Nodes are sorted last first, so a hidden element's hidden descendants are judged before
    it is: reading its whole text (``node.text()``) read theirs again, quadratic in the depth
    of nested hidden elements (``<div hidden>`` and 200 words, nested 1,000 times: 1 MB,
    6.0 s). Here each node is read by its nearest hidden ancestor alone (1 MB: 0.13 s).
    """
    words = 0
    pending = [node.child]
    while pending:
        child = pending.pop()
        if child is None:
            continue
        pending.append(child.next)
        if child.is_text_node:
            words += count_words(child.text_content or "")
        elif (inner := kept.get(child.mem_id)) is not None:
            words += inner
        else:
            pending.append(child.child)
        if words >= COLLAPSED_MIN_WORDS:
            return COLLAPSED_MIN_WORDS
    return words


def _record(node: Any, tag: str, attributes: dict[str, str | None], out: Structure) -> None:
    """Note a node that matched :data:`_MARKER_SELECTOR` as main, chrome or the base URL, or
    :data:`_REFRESH_SELECTOR` as the page's refresh."""
    if tag == "meta":
        equiv, content = attributes.get("http-equiv"), attributes.get("content")
        if (
            isinstance(equiv, str)
            and equiv.strip().lower() == "refresh"
            and isinstance(content, str)
        ):
            out.refresh = content  # last first: the first refresh of the page wins
        return
    if tag == "details":
        if _discloses_navigation(node):
            out.chrome_ids.add(node.mem_id)
        return
    if tag == "base":
        href = attributes.get("href")
        if isinstance(href, str) and href.strip():
            out.base = href.strip()  # last first: the first <base href> of the page wins
        return
    role = attributes.get("role")
    role = role.strip().lower() if isinstance(role, str) else ""
    if role and tag not in _REGION_TAGS and role not in _REGION_ROLES:
        return  # matched [role] for a role that marks no region (button, img, …)
    itemprop = attributes.get("itemprop")
    if (
        tag in _MAIN_TAGS
        or role in _MAIN_ROLES
        or (isinstance(itemprop, str) and "articleBody" in itemprop.split())
    ):
        out.main_ids.add(node.mem_id)
    elif tag in _REGION_TAGS or role in _REGION_ROLES or _is_marked_chrome(tag, attributes):
        out.chrome_ids.add(node.mem_id)


def _discloses_navigation(node: Any) -> bool:
    """Whether a ``details`` element is a navigation's disclosure widget — its children are
    its ``summary`` and navigation (``nav``, ``[role=navigation]``) only, as a collapsible
    menu or table of contents is built: then its label ("Menu", "On this page", "See
    details") is navigation too. A ``details`` holding anything else is content (an FAQ)."""
    navigation = False
    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            if not child.is_empty_text_node:
                return False
            continue
        if tag in ("summary", "-comment"):
            continue
        role = child.attributes.get("role")
        if tag != "nav" and not (isinstance(role, str) and role.strip().lower() == "navigation"):
            return False
        navigation = True
    return navigation


def _is_marked_chrome(tag: str, attributes: dict[str, str | None]) -> bool:
    """``aria-modal=true``, or a container whose id or class names a cookie or consent notice
    (containers only: a heading's anchor id "why-we-use-cookies" is content)."""
    modal = attributes.get("aria-modal")
    if isinstance(modal, str) and modal.strip().lower() == "true":
        return True
    if tag not in _NOTICE_TAGS:
        return False
    for name in ("id", "class"):
        value = attributes.get(name)
        if isinstance(value, str):
            lowered = value.lower()
            if "cookie" in lowered or "consent" in lowered:
                return True
    return False


def _is_hidden(tag: str, attributes: dict[str, str | None]) -> bool:
    """Whether an element matches :data:`HIDDEN_SELECTOR` (checked on its attributes)."""
    if "hidden" in attributes:
        return True
    aria = attributes.get("aria-hidden")
    if isinstance(aria, str) and aria.strip().lower() == "true":
        return True
    kind = attributes.get("type")
    return tag == "input" and isinstance(kind, str) and kind.strip().lower() == "hidden"


@dataclass(slots=True)
class Structure:
    """Where a page's regions are (``mem_id`` sets), its ``<base href>`` and its refresh."""

    main_ids: set[int] = field(default_factory=set)
    chrome_ids: set[int] = field(default_factory=set)
    base: str | None = None
    #: A policy ``main`` selector matched: its match is the main region, all else chrome.
    policy_main: bool = False
    #: The ``content`` of the page's first ``<meta http-equiv="refresh">``, as written.
    refresh: str | None = None
