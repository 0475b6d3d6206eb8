"""atheris target: the nesting model against lexbor on fuzzer-made markup (not collected by
pytest).

    python tests/fuzz/atheris_nesting.py -atheris_runs=100000 [-max_len=4096] [corpus_dir]

Fails on any exception but ``PageTooComplexError``, and on a model depth below the depth of
the tree lexbor builds (the model must never under-estimate the parser).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

_nesting: Any = None
_errors: Any = None
#: Fragments that steer the fuzzer toward the tokenizer's and tree builder's corners.
_PIECES = [
    "<div>", "</div>", "</x>", "<!--", "-->", "--!>", "<p>", "</p>", "<li>", "<table>",
    "<td>", "<tr>", "</table>", "<svg>", "</svg>", "<path/>", "<math>", "<mi>",
    "<foreignObject>", "<script>", "</script>", "<!--<script>", "<style>", "</style>",
    "<textarea>", "</textarea>", "<title>", "<select>", "<option>", "<b>", "</b>", "<a>",
    "<![CDATA[", "]]>", "<!x>", "<?x>", "</ x>", " a='", "'", ' b="', '"', " c=", ">",
    "/>", "<template>", "</template>", "<plaintext>", "<button>", "<dd>", "<dt>", "x",
]  # fmt: skip


def _depth(html: str) -> int:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    deepest = 0
    todo = [(tree.root, 1)] if tree.root is not None else []
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        child = node.child
        while child is not None:
            if child.tag not in ("-text", "_text", "-comment", "_comment"):
                todo.append((child, depth + 1))
            child = child.next
    return deepest


def test_one_input(data: bytes) -> None:
    """One fuzzer input: markup from fragments and free text; model depth ≥ lexbor's."""
    import atheris

    fdp = atheris.FuzzedDataProvider(data)
    parts = []
    while fdp.remaining_bytes() > 0 and len(parts) < 400:
        if fdp.ConsumeBool():
            parts.append(_PIECES[fdp.ConsumeIntInRange(0, len(_PIECES) - 1)])
        else:
            parts.append(fdp.ConsumeUnicodeNoSurrogates(8))
    html = "".join(parts)
    try:
        modelled = _nesting.nesting_depth(html, limit=1 << 30)
    except _errors.PageTooComplexError:
        return
    real = _depth(html)
    if modelled < real:
        raise AssertionError(f"model {modelled} < lexbor {real} on {html!r:.300}")


def main() -> None:
    """Instrument changewatch's fingerprint code and fuzz it."""
    global _nesting, _errors
    import atheris

    with atheris.instrument_imports(include=["changewatch"]):
        _nesting = importlib.import_module("changewatch.fingerprint.nesting")
        _errors = importlib.import_module("changewatch.errors")
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
