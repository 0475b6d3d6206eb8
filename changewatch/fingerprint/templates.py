"""A host's template blocks from the blocks of its pages — pure functions, no I/O.

A short block that stands on many of one host's pages — a promo line, a "free shipping"
note, a legal line the layout repeats — is the host's template, not the page's content.
:func:`template_values` names what one page shows of that: for each *candidate* block (a
learnable block, :class:`~changewatch.fingerprint.regions.Block`: never prose, never inside
an explicit main marker; and one that is main content unless a template rule already made it
chrome) two values, each counted once per page:

- ``text``: the block's text hash (:attr:`Block.text_hash`) — the same words on many pages;
- ``slot``: blake2b-64 of the block's key and text hash — the same words at the same place
  (:attr:`Block.key`: structural path and ordinal) on many pages. A learned slot makes its
  *key* a template position, so a promo line that changes across the whole site at once is
  chrome from its first new text on: its change is a chrome change, not one content change
  per page and another when the new text is learned.

The orchestration counts, per host, on how many distinct pages each value stands
(:mod:`changewatch.learning`, table ``host_templates``); a value on at least
:data:`DEFAULT_MIN_TEMPLATE_PAGES` pages and :data:`DEFAULT_MIN_TEMPLATE_SHARE` of the host's
observed pages is learned, and :func:`template_set` turns the learned rules into the
``template_blocks`` of :func:`~changewatch.fingerprint.fingerprint`. Classification uses them
only on pages without an explicit main marker, and never for prose
(:func:`~changewatch.fingerprint.regions.classify`): a template rule moves a short block from
the content into the chrome — still hashed, still reported as a chrome change — and never
hides a paragraph.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from changewatch.fingerprint.regions import Block

__all__ = [
    "DEFAULT_MAX_TEMPLATE_VALUES",
    "DEFAULT_MIN_TEMPLATE_PAGES",
    "DEFAULT_MIN_TEMPLATE_SHARE",
    "TemplateValue",
    "template_set",
    "template_values",
]

#: Distinct pages of a host a value must stand on before it is learned: a handful of pages
#: sharing a short line ("Contact", a date) is chance; a site's template is on most pages.
DEFAULT_MIN_TEMPLATE_PAGES = 5
#: Share of the host's observed pages it must stand on: half the pages is layout, not
#: content — a template of one section only (a third of the site) is not learned.
DEFAULT_MIN_TEMPLATE_SHARE = 0.5
#: Values one page contributes at most (two per candidate block, in page order): a hostile
#: page with endless unique blocks adds no more rows than this.
DEFAULT_MAX_TEMPLATE_VALUES = 128

TemplateKind = Literal["text", "slot"]


@dataclass(frozen=True, slots=True, order=True)
class TemplateValue:
    """One value a page shows: ``kind`` ``"text"`` (``value`` is the block's text hash) or
    ``"slot"`` (``value`` is blake2b-64 of key and text hash); ``key``: the block's key (what
    a learned slot makes a template position); ``path``: its structural path, for reading."""

    value: bytes
    kind: TemplateKind
    key: bytes
    path: str


def _slot(key: bytes, text_hash: bytes) -> bytes:
    return hashlib.blake2b(key + text_hash, digest_size=8, person=b"cw-slot").digest()


def template_values(
    blocks: Sequence[Block],
    known: Collection[bytes] = (),
    *,
    limit: int = DEFAULT_MAX_TEMPLATE_VALUES,
) -> tuple[TemplateValue, ...]:
    """The distinct values (sorted) a page's ``blocks`` count towards its host's template.

    A candidate block is learnable (not prose, not inside an explicit main marker) and main
    content — or chrome only because its text hash or key is in ``known`` (the host's
    template set the page was classified with), so that a page keeps counting what made it
    chrome. At most ``limit`` values, taken in page order.

    >>> from changewatch.fingerprint import page_text
    >>> parts = page_text("<body><div>Free shipping this week</div><p>Our oak table seats "
    ...                   "six people and folds away.</p></body>", with_blocks=True)
    >>> sorted((v.kind, v.path) for v in template_values(parts.blocks))
    [('slot', 'html/body/div'), ('text', 'html/body/div')]
    """
    out: dict[bytes, TemplateValue] = {}
    for block in blocks:
        if len(out) + 2 > limit:
            break
        if not block.learnable or block.path.endswith("/title"):
            continue  # the title is always content (regions.classify)
        if block.region != "main" and block.text_hash not in known and block.key not in known:
            continue
        text = TemplateValue(block.text_hash, "text", block.key, block.path)
        slot = TemplateValue(_slot(block.key, block.text_hash), "slot", block.key, block.path)
        out.setdefault(text.value, text)
        out.setdefault(slot.value, slot)
    return tuple(sorted(out.values()))


def template_set(learned: Iterable[tuple[str, bytes, bytes]]) -> frozenset[bytes]:
    """The ``template_blocks`` of learned rules, each ``(kind, value, key)``: a text rule's
    text hash, a slot rule's block key.

    >>> sorted(template_set([("text", b"t" * 8, b"k" * 8), ("slot", b"s" * 8, b"p" * 8)]))
    [b'pppppppp', b'tttttttt']
    """
    return frozenset(key if kind == "slot" else value for kind, value, key in learned)
