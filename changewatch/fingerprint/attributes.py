"""How the HTML tokenizer reads a tag's attributes (HTML §13.2.5.32-39) — pure, no I/O; for
the nesting model of :mod:`~changewatch.fingerprint.nesting` and the limits of
:mod:`~changewatch.fingerprint.guard`."""

from __future__ import annotations

import re

__all__ = ["ATTRIBUTE", "WS", "attribute_names", "attributes_of"]

#: HTML's ASCII whitespace, for character classes.
WS = r"\t\n\f\r "
# One attribute (HTML §13.2.5.32-39): a name, then maybe "=" and a value; a quoted value
# runs to its closing quote or to the end of the page (an unterminated tag is dropped).
# Possessive quantifiers: no backtracking, so the pass stays linear on any input.
ATTRIBUTE = (
    rf"[^{WS}/>][^{WS}/=>]*+(?:[{WS}]*+=[{WS}]*+"
    rf"""(?:"[^"]*+(?:"|\Z)|'[^']*+(?:'|\Z)|[^{WS}>]*+))?+"""
)
# The attribute text after a start or end tag's name (the nesting model's tag pattern holds it
# as its third group), ended or not.
_AREA = rf"</?[A-Za-z][^{WS}/>]*+((?:[{WS}]++|/(?!>)|{ATTRIBUTE})*+)"
_AREA_STR = re.compile(_AREA)
_AREA_BYTES = re.compile(_AREA.encode())
_NAME = rf"[{WS}/]*+([^{WS}/>][^{WS}/=>]*+)" + ATTRIBUTE[ATTRIBUTE.index("(?:[") :]
_NAME_STR = re.compile(_NAME)
_NAME_BYTES = re.compile(_NAME.encode())
_SEPARATORS = "\t\n\f\r /"
_SEPARATORS_BYTES = _SEPARATORS.encode()


def attributes_of(text: str | bytes, start: int) -> str | bytes:
    """The attribute text of the tag whose ``<`` is at ``start``, to its end or the page's."""
    pattern = _AREA_BYTES if isinstance(text, bytes) else _AREA_STR
    match = pattern.match(text, start)  # type: ignore[arg-type]
    return match.group(1) if match is not None else text[:0]


def attribute_names(area: str | bytes) -> list[str] | list[bytes]:
    """The attribute names in a tag's attribute text, as written, duplicates included.

    >>> attribute_names(' a="x > y" b=1 c d=e/ f')
    ['a', 'b', 'c', 'd', 'f']
    >>> attribute_names(" a b=/ " + " /" * 100_000)
    ['a', 'b']
    """
    if isinstance(area, bytes):
        return _NAME_BYTES.findall(area.rstrip(_SEPARATORS_BYTES))
    # Without its trailing separators (never part of a name), every separator run in ``area``
    # is followed by a name, so no search fails after reading a run (with them, each byte of a
    # trailing run started a search that read the rest: 200,000 spaces took 21 s).
    return _NAME_STR.findall(area.rstrip(_SEPARATORS))
