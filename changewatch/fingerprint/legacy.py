"""The content hash of fingerprint version 3, frozen — pure, no I/O.

A row stored under version 3 holds the SHA-256 of the page's whole visible text (hidden
elements dropped, every time of day removed). Version 4 hashes the main content only, so the
two cannot be compared: without this module, the first fetch of each such page after the
upgrade whose bytes differ would be a spurious ``changed``. :func:`content_sha256_v3`
computes the version-3 hash of a page, so that the decision can tell "only noise changed
since the row was written" (re-key the row to version 4, ``unchanged``) from a real change.

The rules are those of changewatch's version 3, kept here unchanged: never edit them (a
test pins the golden values of version 3).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from changewatch.fingerprint.decode import decode_html, utf8_source
from changewatch.fingerprint.guard import too_deep
from changewatch.fingerprint.policy import DEFAULT_POLICY, DROPPED_TAGS, FingerprintPolicy
from changewatch.fingerprint.text import _fallback_text, _lt_count, normalise_text
from changewatch.fingerprint.volatile import DEFAULT_VOLATILE_PATTERNS

__all__ = ["LEGACY_VERSIONS", "content_sha256_v3", "normalise_v3"]

#: The older fingerprint versions whose content hash this module computes: version 2 hashed
#: the same text as version 3 (version 3 changed only the SimHash).
LEGACY_VERSIONS = frozenset({2, 3})

_HIDDEN = '[hidden], [aria-hidden="true" i], input[type="hidden" i]'
_BOILERPLATE = ("nav", "footer", "aside")
_SECTIONING = frozenset({"article", "main", "section"})
_WINDOW_BEFORE = 96
_WINDOW_AFTER = 48


def content_sha256_v3(
    html: str | bytes,
    content_type: str | None = None,
    policy: FingerprintPolicy | None = None,
    *,
    host: str | None = None,
) -> bytes:
    """The version-3 ``content_sha256`` of a non-binary page.

    >>> content_sha256_v3("<p>Built at 12:00</p><nav>Home</nav>").hex()[:16]
    '05362d641341a0fb'
    """
    text = normalise_v3(html, content_type, policy, host=host)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def normalise_v3(
    html: str | bytes,
    content_type: str | None = None,
    policy: FingerprintPolicy | None = None,
    *,
    host: str | None = None,
) -> str:
    """The version-3 normalised text: every visible text node, no hidden element, the
    volatile patterns removed everywhere to a fixed point.

    >>> normalise_v3("<p>Built at 12:00 UTC</p><p hidden>x</p><nav>Home</nav>")
    'built at home'
    """
    rules = (policy or DEFAULT_POLICY).for_host(host)
    source: str | bytes | None = utf8_source(html, content_type)
    if source is None:
        source = decode_html(html, content_type)
    if too_deep(source, _lt_count(source)):  # the guard of today: the same on real pages
        text = _fallback_text(decode_html(html, content_type))
    else:
        text = _visible_text(LexborHTMLParser(source), rules)
    text = normalise_text(text)
    pattern = _pattern(rules.volatile)
    if pattern is None:
        return text
    if rules.volatile != DEFAULT_VOLATILE_PATTERNS:
        return _strip_to_fixed_point(text, pattern)
    return _strip_windows(text, pattern)


def _pattern(volatile: tuple[str, ...]) -> re.Pattern[str] | None:
    joined = "|".join(f"(?:{p})" for p in volatile)
    return re.compile(joined) if joined else None


def _visible_text(tree: LexborHTMLParser, rules: FingerprintPolicy) -> str:
    root = tree.root
    top = None if root is None else root.mem_id
    tags = (*DROPPED_TAGS, *_BOILERPLATE) if rules.boilerplate else DROPPED_TAGS
    strip = ", ".join((*tags, *(() if rules.ignore else (_HIDDEN,))))
    if not _drop(tree.css(strip), top):
        return ""
    if rules.ignore and not _drop(tree.css(", ".join((_HIDDEN, *rules.ignore))), top):
        return ""
    if rules.boilerplate:
        headers = tree.css("header")
        if headers:
            _drop(_page_level(headers), top)
    if rules.main is not None:
        root = tree.css_first(rules.main) or root
    return root.text(separator=" ", skip_empty=True) if root is not None else ""


def _drop(nodes: list[Any], top: int | None) -> bool:
    if top is not None and any(node.mem_id == top for node in nodes):
        return False
    for node in reversed(nodes):
        node.decompose()
    return True


def _page_level(headers: list[Any]) -> list[Any]:
    inside: dict[int, bool] = {}
    out = []
    for header in headers:
        path = []
        node = header.parent
        found = False
        while node is not None:
            known = inside.get(node.mem_id)
            if known is not None:
                found = known
                break
            if node.tag in _SECTIONING:
                found = True
                break
            path.append(node.mem_id)
            node = node.parent
        for mem_id in path:
            inside[mem_id] = found
        if not found:
            out.append(header)
    return out


def _strip_windows(text: str, pattern: re.Pattern[str]) -> str:
    """Version 3's search of the default patterns in windows around their anchors."""
    spans: list[list[int]] = []
    for anchor_start, anchor_end in _anchors(text):
        start = text.rfind(" ", 0, max(0, anchor_start - _WINDOW_BEFORE)) + 1
        end = text.find(" ", anchor_end + _WINDOW_AFTER)
        end = len(text) if end == -1 else end
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    if not spans:
        return text
    pieces = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(_strip_to_fixed_point(text[start:end], pattern))
        last = end
    pieces.append(text[last:])
    return " ".join(piece for piece in map(str.strip, pieces) if piece)


def _anchors(text: str) -> list[tuple[int, int]]:
    found = []
    at = text.find(":")
    while at != -1:
        if at + 1 < len(text) and text[at + 1].isdecimal():
            found.append((at, at + 2))
        at = text.find(":", at + 1)
    at = text.find(" ago")
    while at != -1:
        after = at + 4
        if after == len(text) or not (text[after].isalnum() or text[after] == "_"):
            found.append((at, after))
        at = text.find(" ago", at + 1)
    found.sort()
    return found


def _strip_to_fixed_point(text: str, pattern: re.Pattern[str]) -> str:
    # Bounded like version 4's (volatile.MAX_STRIP_PASSES): a page nesting more layers than
    # that cost quadratic time; no real page does, so version 3's hashes stay the same.
    for _ in range(8):
        if pattern.search(text) is None:
            break
        text = " ".join(pattern.sub(" ", text).split())
    return text
