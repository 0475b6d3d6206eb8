"""The normalised visible text of a page — pure functions, no I/O."""

from __future__ import annotations

import html as html_lib
import re
import unicodedata
from typing import Any

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from changewatch.fingerprint.decode import decode_html, is_binary, utf8_source
from changewatch.fingerprint.policy import _SECTIONING, DEFAULT_POLICY, FingerprintPolicy
from changewatch.fingerprint.volatile import DEFAULT_VOLATILE_PATTERNS, strip_volatile_text

__all__ = [
    "DEFAULT_MAX_NESTING",
    "normalise",
    "normalise_markup",
    "normalise_text",
    "strip_volatile",
]

#: Pages whose tag nesting may exceed this are read by a tag-stripping fallback instead of
#: lexbor, whose tree building is quadratic in nesting depth (100,000 nested ``div``: 22 s).
#: Blink flattens the DOM past 512 levels; the deepest corpus page estimates 1,154.
DEFAULT_MAX_NESTING = 4096


def _nesting_bound(text: str | bytes) -> int:
    """An estimate of a page's maximum tag nesting: the running count of ``<x`` minus ``</``.

    Void and unclosed elements count as open, so it over-estimates real pages; it is only
    computed for pages with more than :data:`DEFAULT_MAX_NESTING` ``<`` characters.
    """
    if isinstance(text, str):
        if text.count("<") <= DEFAULT_MAX_NESTING:
            return 0
        text = text.encode("utf-8", "surrogatepass")
    array = np.frombuffer(text, dtype=np.uint8)
    opening = array == 0x3C  # counted by numpy: several times faster than bytes.count
    if np.count_nonzero(opening) <= DEFAULT_MAX_NESTING:
        return 0
    after = array[np.flatnonzero(opening[:-1]) + 1]
    folded = after | 0x20
    steps = ((folded >= 0x61) & (folded <= 0x7A)).astype(np.int32) - (after == 0x2F)
    return int(np.cumsum(steps).max()) if steps.size else 0


_FALLBACK_DROP_RE = re.compile(
    r"<!--.*?(?:-->|$)|<(script|style|noscript|template|svg|iframe|object)\b.*?(?:</\1\s*>|$)",
    re.IGNORECASE | re.DOTALL,
)
_FALLBACK_TAG_RE = re.compile(r"<[^>]*>?")


def _fallback_text(text: str) -> str:
    """Visible text by tag stripping, for pages nested too deeply for the HTML parser."""
    text = _FALLBACK_DROP_RE.sub(" ", text)
    return html_lib.unescape(_FALLBACK_TAG_RE.sub(" ", text))


def normalise(
    html: str | bytes,
    content_type: str | None = None,
    policy: FingerprintPolicy | None = None,
    *,
    host: str | None = None,
) -> str:
    """Return the normalised visible text of a page (see the module docstring).

    ``policy`` (default :data:`DEFAULT_POLICY`) is applied for ``host`` (see
    :meth:`FingerprintPolicy.for_host`). A binary body (:func:`is_binary`) has no text: ``""``.

    >>> normalise("<p>Hello,\\n  <b>World</b></p><script>x=1</script><!-- c -->")
    'hello, world'
    >>> normalise("<p>Built at 12:00 UTC</p><p hidden>x</p><nav>Home</nav>")
    'built at home'
    >>> normalise("<p>At 12:00</p><nav>Home</nav>", policy=FingerprintPolicy(boilerplate=True))
    'at'
    """
    if is_binary(html, content_type):
        return ""
    return normalise_markup(html, content_type, policy, host=host)


def normalise_markup(
    html: str | bytes,
    content_type: str | None = None,
    policy: FingerprintPolicy | None = None,
    *,
    host: str | None = None,
) -> str:
    """:func:`normalise` for a body already known not to be binary (no second check).

    >>> normalise_markup("<p>Hello</p>")
    'hello'
    """
    rules = (policy or DEFAULT_POLICY).for_host(host)
    source: str | bytes | None = utf8_source(html, content_type)
    if source is None:
        source = decode_html(html, content_type)
    if _nesting_bound(source) > DEFAULT_MAX_NESTING:
        text = _fallback_text(decode_html(html, content_type))
    else:
        text = _visible_text(LexborHTMLParser(source), rules)
    return strip_volatile_text(
        normalise_text(text),
        rules._volatile_re,
        default=rules.volatile == DEFAULT_VOLATILE_PATTERNS,
        collapsed=True,
    )


def _visible_text(tree: LexborHTMLParser, rules: FingerprintPolicy) -> str:
    root = tree.root
    top = None if root is None else root.mem_id
    if not _drop(tree.css(rules._strip_selector), top):
        return ""  # <html hidden>, <html aria-hidden="true">: nothing on the page is shown
    if rules._drop_selector is not None and not _drop(tree.css(rules._drop_selector), top):
        return ""  # a policy that ignores the root element (ignore = ["html"]) keeps nothing
    if rules.boilerplate:
        headers = tree.css("header")
        if headers:
            _drop(_page_level(headers), top)
    if rules.main is not None:
        root = tree.css_first(rules.main) or root
    # Whitespace-only text nodes (indentation) add nothing once whitespace is collapsed.
    return root.text(separator=" ", skip_empty=True) if root is not None else ""


def _drop(nodes: list[Any], top: int | None) -> bool:
    """Remove ``nodes`` from the tree, last first (a descendant goes before the ancestor
    holding it); ``False``, removing nothing, if the root element (``mem_id`` ``top``) is
    among them: lexbor refuses to remove it, and all of the page would go."""
    if top is not None and any(node.mem_id == top for node in nodes):
        return False
    for node in reversed(nodes):
        node.decompose()
    return True


def _page_level(headers: list[Any]) -> list[Any]:
    """The headers with no ``article``/``main``/``section`` ancestor, each ancestor looked
    at once (linear even for deeply nested headers)."""
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


def strip_volatile(text: str, policy: FingerprintPolicy | None = None) -> str:
    """Remove the policy's volatile patterns from normalised text, to a fixed point.

    >>> strip_volatile("generated at 2026-03-01t12:00:00z by node-7, updated 5 minutes ago")
    'generated at by node-7, updated'
    """
    rules = policy or DEFAULT_POLICY
    return strip_volatile_text(
        text,
        rules._volatile_re,
        default=rules.volatile == DEFAULT_VOLATILE_PATTERNS,
        collapsed=False,
    )


def normalise_text(text: str) -> str:
    """NFKC, case-fold and collapse whitespace; idempotent.

    >>> normalise_text("  Ｆｕｌｌ\\u00a0WIDTH  ")
    'full width'
    """
    text = " ".join(text.split())
    if text.isascii():
        return text.lower()  # ASCII is already NFKC and case-folds to lower case
    changed = False
    if not unicodedata.is_normalized("NFKC", text):
        # NFKC decomposes each character fully before composing, so a character replaced by
        # its full decomposition normalises alike; U+2026 "…" (NFKD "...") is the commonest
        # reason web text is not NFKC, and str.replace is much cheaper than normalize.
        text = text.replace("\u2026", "...")
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
            changed = True
    text = text.casefold()  # never makes whitespace (a unit test checks every code point)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
        changed = True
    # NFKC can turn a character into a space sequence (U+00A8 → " ̈"): collapse again.
    return " ".join(text.split()) if changed else text
