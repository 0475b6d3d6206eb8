"""A readable unified diff of two normalised page texts. Pure.

Normalised text is one long line (whitespace collapsed, case folded: see
:func:`changewatch.fingerprint.normalise`), which a line diff would show as one huge change.
So the texts are cut into sentences first (after ``.``, ``!``, ``?`` followed by a space) and
long sentences wrapped at :data:`DEFAULT_DIFF_WIDTH` characters; the diff then shows the
sentences that changed, with a little context.
"""

from __future__ import annotations

import difflib
import re
import textwrap

__all__ = ["DEFAULT_DIFF_CONTEXT", "DEFAULT_DIFF_WIDTH", "diff_units", "unified_text_diff"]

#: Characters per diff line before a sentence is wrapped.
DEFAULT_DIFF_WIDTH = 100
#: Unchanged lines shown around each change.
DEFAULT_DIFF_CONTEXT = 2

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def diff_units(text: str, width: int = DEFAULT_DIFF_WIDTH) -> list[str]:
    """The text as diff lines: one per sentence (or existing line), wrapped at ``width``.

    >>> diff_units("one. two! three")
    ['one.', 'two!', 'three']
    >>> diff_units("a b c d", width=3)
    ['a b', 'c d']
    """
    units: list[str] = []
    for line in text.splitlines():
        for sentence in _SENTENCE_END.split(line.strip()):
            if sentence:
                units.extend(
                    textwrap.wrap(sentence, width, break_long_words=True, break_on_hyphens=False)
                )
    return units


def unified_text_diff(
    old: str,
    new: str,
    from_label: str = "before",
    to_label: str = "after",
    *,
    width: int = DEFAULT_DIFF_WIDTH,
    context: int = DEFAULT_DIFF_CONTEXT,
) -> list[str]:
    """A unified diff (``---``/``+++`` header, ``@@`` hunks) of two texts; ``[]`` if equal.

    >>> print("\\n".join(unified_text_diff("price 10. in stock.", "price 12. in stock.")))
    --- before
    +++ after
    @@ -1,2 +1,2 @@
    -price 10.
    +price 12.
     in stock.
    """
    return list(
        difflib.unified_diff(
            diff_units(old, width),
            diff_units(new, width),
            fromfile=from_label,
            tofile=to_label,
            n=context,
            lineterm="",
        )
    )
