"""A model of HTML tree construction that bounds the parser's nesting depth — pure, no I/O.

lexbor's tree building walks the stack of open elements for most tags (is a ``p`` in button
scope? which element does this end tag close?), so a page nested ``d`` deep costs about ``d``
per tag. An estimate that counts every ``</`` as closing an element is fooled by end tags
that close nothing (``<div></x>``) or sit inside comments (``<div><!--</-->``); the model
here reads the page as the HTML tokenizer does (§13.2.5) and pops only what the tree builder
(§13.2.6) would. :mod:`~changewatch.fingerprint.guard` decides on its answer.
"""

from __future__ import annotations

import re

from changewatch.errors import PageTooComplexError
from changewatch.fingerprint.attributes import ATTRIBUTE as _ATTRIBUTE
from changewatch.fingerprint.attributes import WS as _WS
from changewatch.fingerprint.attributes import attribute_names, attributes_of
from changewatch.fingerprint.elements import (
    BREAKOUT,
    CLOSES_P,
    FORMATTING,
    HEADINGS,
    INTEGRATION,
    SCOPE,
    SCOPED_END,
    SPECIAL,
    TABLE_CONTEXT,
    TABLE_END,
    TABLE_SCOPE,
    TABLE_SECTIONS,
    VOID,
)
from changewatch.fingerprint.rawtext import RAW_TEXT, raw_text_end, script_end

__all__ = [
    "MAX_NESTING",
    "Model",
    "attribute_names",
    "attributes_of",
    "nesting_depth",
]

#: Pages the model says nest deeper than this are read by the tag-stripping fallback.
#: Blink flattens the DOM past 512 levels; the deepest page of the shared corpus models 39.
MAX_NESTING = 4096


_TOKEN = (
    r"<!--(?:>|->|.*?--!?>|.*)"  # a comment (§13.2.5.43-52), or to the end of the page
    r"|<!\[CDATA\["  # CDATA: a section in SVG/MathML, a bogus comment in HTML
    r"|<[!?][^>]*+>?|</(?![A-Za-z])[^>]*+>?"  # doctype and bogus comments: to the first ">"
    rf"|<(/?)([A-Za-z][^{_WS}/>]*+)((?:[{_WS}]++|/(?!>)|{_ATTRIBUTE})*+)(/?)>"  # a tag
    r"|<[A-Za-z].*|</[A-Za-z].*"  # a tag the page ends inside: dropped with the rest
)
_TOKEN_STR = re.compile(_TOKEN, re.DOTALL)
_TOKEN_BYTES = re.compile(_TOKEN.encode(), re.DOTALL)


def nesting_depth(source: str | bytes, limit: int = MAX_NESTING) -> int:
    """An upper bound on the depth of the stack of open elements lexbor reaches on
    ``source``, by a model of HTML tree construction; scanning stops once it passes
    ``limit`` (the answer is then ``limit + 1``).

    The model tokenizes as HTML §13.2.5 does (comments, bogus comments, CDATA in SVG/MathML,
    raw text and escaped script, quoted attribute values are skipped) and keeps a stack:
    a start tag pushes (not void elements, not self-closing ones in SVG/MathML), an end
    tag pops only when the parser would (the element is open and in scope, or reached
    before a special element). It closes implicitly only what the parser surely closes
    (an open ``p`` before a block, the previous ``li``, ``dd``/``dt``, ``option``, table
    cells and rows), so it over-estimates — except on some pages mixing SVG breakouts with
    tables and ``select``, found by ``tests/fuzz/atheris_nesting.py``, where it can fall short
    by about a sixth (docs/reliability.md). Formatting elements (``b``, ``a``, ``font``…),
    which the parser reconstructs and clones, are counted per name and only end tags of
    that name take them off; ``html``, ``head`` and ``body`` count 3.

    >>> nesting_depth("<div></x>" * 10), nesting_depth("<div><!--</div>-->" * 10)
    (13, 13)
    >>> nesting_depth("<ul><li>a<li>b</ul><p>x<p>y<div title='</div>'></div>")
    5
    """
    model = Model(limit, max_attributes=1 << 62)
    model.run(source)
    return model.deepest


class Model:
    """The state of one pass over a page: the stack of open elements, with, for each name
    and each kind of element the scope rules stop at, the stack indices where one is open
    (so every question the rules ask is answered in constant time).

    After :meth:`run`: ``deepest`` (the depth bound, past ``limit`` if the pass stopped
    there), ``work`` (the sum of the depths at each start and end tag: what the parser's
    stack walks cost; ``too_costly`` if the pass stopped on it), ``pushes`` (start tags),
    ``ends`` (end tags), ``tag_names`` (every start
    and end tag's name) and ``attribute_bytes`` (the length of all attribute text). A tag of more
    than ``max_attributes`` attributes raises :class:`PageTooComplexError`, and with
    ``max_names``, so do more distinct attribute names (``attribute_names``) or distinct tag
    names than that.
    """

    def __init__(
        self,
        limit: int,
        *,
        max_attributes: int,
        max_names: int | None = None,
        work_per_push: int = 1 << 62,
        work_slack: int = 0,
        max_adoptions: int = 1 << 62,
        rebuilt_per_tag: int = 1 << 62,
        rebuilt_slack: int = 0,
    ) -> None:
        self.limit = limit
        #: The pass stops (``too_costly``) once ``rebuilt`` passes ``rebuilt_per_tag`` per tag
        #: plus ``rebuilt_slack``: the elements the parser may create by reconstructing the
        #: active formatting elements (§13.2.4.3), bounded by ``rebuildable`` before each
        #: start tag and before the text after each tag. lexbor clones every open ``<b>`` of
        #: distinct attributes (Noah's Ark keeps only three identical ones) into each new
        #: paragraph: ``<p>``, 1,000 ``<b id=…>``, then ``<p>x`` × 17,000 — 78 KB — made 17
        #: million elements, 21.5 s and 6.2 GB.
        self.rebuilt_per_tag = rebuilt_per_tag
        self.rebuilt_slack = rebuilt_slack
        self.rebuilt = 0
        #: The open formatting elements that may be rebuilt: of those of one name and the same
        #: attribute text, three (the list keeps no more identical ones, §13.2.4.3 "Noah's
        #: Ark"; the same attributes written otherwise count apart: more, never fewer).
        self.rebuildable = 0
        self.identical: dict[tuple[str, str | bytes], int] = {}
        self.attributes_now: str | bytes = ""
        #: The pass stops (``too_costly``) past this many runs of the adoption agency that
        #: move elements (an end tag of a formatting element with a special element opened
        #: since): lexbor clones and moves nodes each time, at a cost growing with the runs
        #: before (700 distinct ``<b>``, 700 ``<div>``, 2,690 ``</b>``: 3.2 s; 7,000: 152 s).
        self.max_adoptions = max_adoptions
        self.adoptions = 0
        #: The pass stops (``too_costly``) once ``work`` passes ``work_per_push`` levels per
        #: tag (start or end) on average, plus ``work_slack``.
        self.work_per_push = work_per_push
        self.work_slack = work_slack
        self.too_costly = False
        self.max_attributes = max_attributes
        #: When set, every tag's attributes are read and their distinct names counted.
        self.max_names = max_names
        self.attribute_names: set[str | bytes] = set()
        self.stack: list[str] = []
        #: Per entry of ``stack``: the namespace of its content if SVG or MathML ("svg",
        #: "math"), else "".
        self.foreign: list[str] = []
        self.where: dict[str, list[int]] = {}
        #: Per formatting element name: the stack's length when each open one was opened, and
        #: its attribute text.
        self.formatting: dict[str, list[tuple[int, str | bytes]]] = {}
        self.formatting_open = 0
        #: Start tags inside SVG/MathML CDATA sections (see :meth:`other`).
        self.unsure = 0
        #: How many of those were opened at each stack length (one opened at the current
        #: length, and not closed, may be the parser's current node).
        self.formatting_at: dict[int, int] = {}
        self.deepest = 3
        self.work = 0
        self.pushes = 0
        self.ends = 0
        self.tag_names: set[str] = set()
        self.attribute_bytes = 0

    def run(self, text: str | bytes) -> None:
        """Read ``text`` (stops early past ``limit``)."""
        pending: list[str | bytes] = []
        self._read(text, pending)
        self.count_names(pending)

    def _read(self, text: str | bytes, pending: list[str | bytes]) -> None:
        """:meth:`run`, but for the attribute texts of at most ``2 × max_attributes``
        characters (no more than ``max_attributes`` attributes) left in ``pending``, whose
        names :meth:`count_names` counts a batch at a time."""
        search = (_TOKEN_BYTES if isinstance(text, bytes) else _TOKEN_STR).search
        counting = self.max_names is not None
        waiting = 0
        lowered: dict[str | bytes, str] = {}
        tag_names = self.tag_names
        pos = 0
        while True:
            match = search(text, pos)  # type: ignore[arg-type]
            if match is None:
                return
            pos = match.end()
            closing, raw_name, attributes, self_closing = match.groups()
            if raw_name is None:
                pos = self.other(match, text, pos)  # type: ignore[arg-type]
                if pos < 0:
                    return
                continue
            if attributes:
                waiting = self._take(attributes, pending, waiting)
            name: str = lowered.get(raw_name) or _lowered(raw_name, lowered)
            tag_names.add(name)  # an end tag's name costs lexbor as a start tag's
            if counting and len(tag_names) > self.max_names:  # type: ignore[operator]
                raise PageTooComplexError("names", self.max_names, len(tag_names))  # type: ignore[arg-type]
            if closing:
                if self._end_tag(name):
                    return
                continue
            if name == "font" and self.foreign and self.foreign[-1]:
                name = _font_in_foreign(attributes)
            self.attributes_now = attributes or ""
            pos = self.start(name, bool(self_closing), text, pos)
            if pos < 0 or self._started():
                return

    def _started(self) -> bool:
        """Count a start tag :meth:`start` applied; whether the pass stops (past ``limit``,
        or ``too_costly``)."""
        depth = len(self.stack) + self.formatting_open + self.unsure + 3
        self.work += depth
        self.pushes += 1
        if self.rebuildable:  # rebuilt before the element, and in the text after it
            self.rebuilt += 2 * self.rebuildable
            if self._rebuilt_too_many():
                self.too_costly = True
                return True
        if self.work > self.work_per_push * (self.pushes + self.ends) + self.work_slack:
            self.too_costly = True
            return True
        if depth > self.deepest:
            self.deepest = depth
            return depth > self.limit
        return False

    def _end_tag(self, name: str) -> bool:
        """Apply an end tag in :meth:`_read`; whether the pass stops (``too_costly``)."""
        self.work += len(self.stack) + self.formatting_open + self.unsure + 3  # lexbor's walk
        self.ends += 1
        self.end(name)
        if self.rebuildable:  # the text after it may rebuild them
            self.rebuilt += self.rebuildable
            self.too_costly = self.too_costly or self._rebuilt_too_many()
        if self.work > self.work_per_push * (self.pushes + self.ends) + self.work_slack:
            self.too_costly = True
        return self.too_costly

    def _rebuilt_too_many(self) -> bool:
        return self.rebuilt > self.rebuilt_per_tag * (self.pushes + self.ends) + self.rebuilt_slack

    def _take(self, attributes: str | bytes, pending: list[str | bytes], waiting: int) -> int:
        """A tag's attribute text: a long one read now, else (counting names) left in
        ``pending``, whose ``waiting`` characters are read once past :data:`_BATCH`."""
        self.attribute_bytes += len(attributes)
        if len(attributes) > 2 * self.max_attributes:
            self.count_names([attributes])
        elif self.max_names is not None:
            pending.append(attributes)
            waiting += len(attributes)
            if waiting > _BATCH:
                self.count_names(pending)
                return 0
        return waiting

    def other(self, match: re.Match[str], text: str | bytes, pos: int) -> int:
        """After a comment, doctype, bogus comment or CDATA token: where to read on (-1:
        nowhere, the rest of the page is one token)."""
        token = match.group(0)
        if token[:9] in _CDATA:  # a section in SVG/MathML, else a bogus comment to ">"
            foreign = bool(self.foreign) and self.foreign[-1]
            end = text.find(_CDATA_END[type(text)] if foreign else _GT[type(text)], pos)  # type: ignore[arg-type]
            if foreign:
                # The parser may no longer be in SVG/MathML (the adoption agency and foster
                # parenting move elements): then this is a bogus comment to ">" and what
                # follows is markup. Its start tags count as open for good.
                stop = len(text) if end == -1 else end
                self.unsure += len(_START_TAG[type(text)].findall(text, pos, stop))  # type: ignore[arg-type]
            return -1 if end == -1 else end + (3 if foreign else 1)
        if token[1:2].isalpha() or (token[1:2] in _SLASH and token[2:3].isalpha()):
            # a tag the page ends inside: lexbor reads its attributes, then drops it
            self.check_attributes(attributes_of(text, match.start()))
            return -1
        return pos

    def count_names(self, areas: list[str | bytes]) -> None:
        """Read the attributes of tags (``areas``: their attribute texts, emptied): refuse
        past ``max_attributes`` on one or ``max_names`` distinct over the page (names case
        folded as ``str.lower`` folds them). Each text is whole (a tag's, to its ``>``), so
        that the texts joined by a space read as each one alone."""
        if not areas:
            return
        if len(areas) == 1:
            names = attribute_names(areas[0])
            if len(names) > self.max_attributes:
                raise PageTooComplexError("attributes", self.max_attributes, len(names))
            if self.max_names is not None:
                self.attribute_names.update(name.lower() for name in names)
        else:
            space = b" " if isinstance(areas[0], bytes) else " "
            joined: str | bytes = space.join(areas)  # type: ignore[arg-type]
            self.attribute_names.update(attribute_names(joined.lower()))
        areas.clear()
        seen = self.attribute_names
        if self.max_names is not None and len(seen) > self.max_names:
            raise PageTooComplexError("names", self.max_names, len(seen))

    def check_attributes(self, area: str | bytes) -> None:
        """Raise :class:`PageTooComplexError` if ``area`` (a tag's attribute text) holds more
        than ``max_attributes`` attributes."""
        found = len(attribute_names(area))
        if found > self.max_attributes:
            raise PageTooComplexError("attributes", self.max_attributes, found)

    def start(self, name: str, self_closing: bool, text: str | bytes, pos: int) -> int:
        """Apply a start tag; the position to scan on from (-1: the rest is text)."""
        if self.foreign and self.foreign[-1]:
            if name not in BREAKOUT:
                if not self_closing:
                    space = self.foreign[-1]  # children take their parent's namespace
                    self.push(name, "" if (space, name) in INTEGRATION else space)
                return pos
            self.leave_foreign()
        if name in VOID or name in ("html", "head", "body"):
            return pos
        if name in FORMATTING:
            self.formatting.setdefault(name, []).append((len(self.stack), self.attributes_now))
            self.formatting_at[len(self.stack)] = self.formatting_at.get(len(self.stack), 0) + 1
            self.formatting_open += 1
            key = (name, self.attributes_now)
            same = self.identical.get(key, 0) + 1
            self.identical[key] = same
            self.rebuildable += same <= 3
            return pos
        self.close_implied(name)
        if name == "svg" or name == "math":
            if not self_closing:
                self.push(name, name)  # its content is SVG or MathML
            return pos
        self.push(name, "")
        if name == "script":
            return script_end(text, pos)
        if name in RAW_TEXT:
            return raw_text_end(text, pos, name)
        if name == "plaintext":
            return -1
        return pos

    def foreign_end(self, name: str) -> int:
        """An end tag in SVG/MathML content (§13.2.6.5): the nearest foreign element of that
        name, reached through foreign elements only (-2: none; -1: an HTML element was
        reached first, whose rules apply). The walk's steps count as work."""
        stack, foreign = self.stack, self.foreign
        index = len(stack) - 1
        while index >= 0:
            if (index == 0 or not foreign[index - 1]) and stack[index] not in ("svg", "math"):
                self.work += len(stack) - index
                return -1  # an HTML element: the insertion mode's rules
            if stack[index] == name:
                self.work += len(stack) - index
                return index
            index -= 1
        self.work += len(stack)
        return -2

    def leave_foreign(self) -> None:
        """What a tag that breaks out of SVG/MathML does first (§13.2.6.5): pop to an
        integration point or an HTML element."""
        index = len(self.foreign)
        while index > 0 and self.foreign[index - 1]:
            index -= 1
        self.pop_to(index)

    def push(self, name: str, foreign: str) -> None:
        index = len(self.stack)
        self.stack.append(name)
        self.foreign.append(foreign)
        where = self.where
        for key in _KEYS.get(name) or _keys(name):
            found = where.get(key)
            if found is None:
                where[key] = [index]
            else:
                found.append(index)

    def pop_to(self, index: int) -> None:
        """Pop the stack down to (and with) entry ``index``."""
        stack = self.stack
        where = self.where
        while len(stack) > index:
            name = stack.pop()
            self.foreign.pop()
            for key in _KEYS.get(name) or _keys(name):
                where[key].pop()

    def last(self, key: str) -> int:
        """The stack index of the nearest open element under ``key`` (a name or one of the
        kinds of :func:`_keys`), or -1."""
        found = self.where.get(key)
        return found[-1] if found else -1

    def in_scope(self, name: str, *scopes: str) -> int:
        """The index of the nearest open ``name`` if no element of the ``scopes`` kinds
        stands above it, else -1."""
        index = self.last(name)
        if index < 0:
            return -1
        for scope in scopes:
            if self.last(scope) > index:
                return -1
        return index

    def close_implied(self, name: str) -> None:
        """What an HTML start tag ``name`` surely closes first (§13.2.6.4.7, 9, 11, 13);
        nothing inside a select (whose content model lexbor no longer restricts)."""
        if not self.stack:
            return
        if self.last("select") >= 0 and name not in ("option", "optgroup"):
            if name in ("td", "th", "tr"):  # implied sections and rows still open
                self.push("tbody", "")
                if name != "tr":
                    self.push("tr", "")
            return
        if name in TABLE_END and name != "table" and name != "caption":
            self.close_table_parts(name)
            return
        if name == "table" and self.stack[-1] in TABLE_CONTEXT:
            table = self.in_scope("table", " table-scope")  # a table in a table's own
            if table >= 0:  # content (not in a cell) closes it first (§13.2.6.4.9)
                self.pop_to(table)
            return
        if name in CLOSES_P:
            found = self.in_scope("p", " scope", "button")
            if found >= 0:
                self.pop_to(found)
        if not self.stack:
            return
        top = self.stack[-1]
        if name == "li":
            self.close_list_item(self.last("li"))
        elif name == "dd" or name == "dt":
            self.close_list_item(max(self.last("dd"), self.last("dt")))
        elif self.formatting_at.get(len(self.stack)):
            return  # the current node may be a formatting element
        elif (name in HEADINGS and top in HEADINGS) or (
            (name == "option" or name == "optgroup") and top == "option"
        ):
            self.pop_to(len(self.stack) - 1)

    def close_list_item(self, index: int) -> None:
        """An li (dd, dt) closes the open one at ``index`` unless a special element other
        than address, div and p stands above it (§13.2.6.4.7)."""
        if index >= 0 and self.last(" special-li") <= index:
            self.pop_to(index)

    def close_table_parts(self, name: str) -> None:
        """A cell, row or section start tag inside a table closes the open cells, rows
        (sections) of that table first (§13.2.6.4.9-15); implied rows and sections count."""
        table = self.in_scope("table", " table-scope")
        if table < 0:
            return
        section = self.last(" section")
        row = self.last("tr")
        if name in ("td", "th"):
            if row > table:
                self.pop_to(row + 1)
                return
            keep = section + 1 if section > table else table + 1
            self.pop_to(keep)
            if section <= table:
                self.push("tbody", "")
            self.push("tr", "")
        elif name == "tr":
            keep = section + 1 if section > table else table + 1
            self.pop_to(keep)
            if section <= table:
                self.push("tbody", "")
        else:
            self.pop_to(table + 1)

    def end(self, name: str) -> None:
        """Apply an end tag: pop only what the parser surely pops (§13.2.6.4.7)."""
        if name in FORMATTING:
            # The adoption agency (§13.2.6.4.7): with a special element opened since, it
            # moves elements and keeps the stack's size; else it pops to the element.
            opened = self.formatting.get(name)
            if opened and self.last(" special") < opened[-1][0]:
                at, attributes = opened.pop()
                self.pop_to(at)
                self.formatting_at[at] -= 1
                self.formatting_open -= 1
                key = (name, attributes)
                same = self.identical[key]
                self.identical[key] = same - 1
                self.rebuildable -= same <= 3
            elif opened:  # lexbor's cost grows with each such run (see max_adoptions)
                self.adoptions += 1
                if self.adoptions > self.max_adoptions:
                    self.too_costly = True
            return
        if not self.stack:
            return
        if (name == "br" or name == "p") and self.foreign[-1]:
            self.leave_foreign()  # they break out of SVG/MathML too
            if not self.stack:
                return
        if self.foreign[-1]:
            index = self.foreign_end(name)
            if index >= 0:
                self.pop_to(index)
            if index != -1:
                return  # else an HTML element was reached: its rules apply
        if self.last("select") >= 0 and name not in ("select", "option", "optgroup"):
            return  # in select, other end tags are ignored
        index = self.html_end(name)
        if index >= 0:
            self.pop_to(index)

    def html_end(self, name: str) -> int:
        """The element an HTML end tag ``name`` closes ("in body" and the table modes'
        scope rules), or -1."""
        if name not in SPECIAL:
            index = self.in_scope(name, " special")
        elif name == "p":
            index = self.in_scope("p", " scope", "button")
        elif name == "li":
            index = self.in_scope("li", " scope", "ol", "ul")
        elif name in TABLE_END:
            index = self.in_scope(name, " table-scope")
        elif name == "select":
            index = self.in_scope("select", " not-option")
        elif name == "form":  # the parser takes the form out, leaving what is above it
            index = len(self.stack) - 1 if self.stack[-1] == "form" else -1
        elif name in SCOPED_END:
            index = self.in_scope(name, " scope")
        else:  # any other end tag: reached before a special element, or ignored
            index = self.in_scope(name, " special")
        return index


def _lowered(raw: str | bytes, table: dict[str | bytes, str]) -> str:
    """A tag name as the model compares it (lower case), remembered in ``table``."""
    name = raw.decode("latin-1").lower() if isinstance(raw, bytes) else raw.lower()
    table[raw] = name
    return name


def _font_in_foreign(area: str | bytes) -> str:
    """``font`` in SVG/MathML breaks out with a color, face or size attribute: its name as
    the model treats it ("font", a breakout, or "font " for a foreign element)."""
    for found in attribute_names(area):
        if found.lower() in _FONT_BREAKOUT:
            return "font"
    return "font "  # a foreign element; never a tag name (it holds a space)


_FONT_BREAKOUT = frozenset({"color", "face", "size", b"color", b"face", b"size"})


def _keys(name: str) -> tuple[str, ...]:
    """The keys :class:`_Model` indexes an open element ``name`` under: its name and the
    kinds the scope rules ask about (each starting with a space, never a tag name)."""
    keys = [name]
    if name in SCOPE:
        keys.append(" scope")
    if name in SPECIAL:
        keys.append(" special")
        if name not in ("address", "div", "p"):
            keys.append(" special-li")
    if name in TABLE_SCOPE:
        keys.append(" table-scope")
    if name in TABLE_SECTIONS:
        keys.append(" section")
    if name not in ("option", "optgroup"):
        keys.append(" not-option")
    found = tuple(keys)
    if len(_KEYS) < 4096:
        _KEYS[name] = found
    return found


_KEYS: dict[str, tuple[str, ...]] = {}


#: The attribute texts :meth:`Model.count_names` reads at once (in characters, about).
_BATCH = 1 << 16
_CDATA = frozenset({"<![CDATA[", b"<![CDATA["})
_SLASH = frozenset({"/", b"/"})
_GT: dict[type, str | bytes] = {str: ">", bytes: b">"}
_START_TAG: dict[type, re.Pattern[str] | re.Pattern[bytes]] = {
    str: re.compile("<[A-Za-z]"),
    bytes: re.compile(b"<[A-Za-z]"),
}
_CDATA_END: dict[type, str | bytes] = {str: "]]>", bytes: b"]]>"}
