"""Limits that keep hostile pages from costing minutes or gigabytes — pure, no I/O.

Three shapes a page controls make the HTML parser (lexbor) or the text pipeline superlinear,
and each has a check here that runs before the costly step:

* **Nesting.** lexbor's tree building walks the stack of open elements for most tags, so a
  page nested ``d`` deep costs about ``d`` per tag. :func:`nesting_depth` bounds the depth
  the parser will reach with a model of HTML tree construction (a tokenizer pass that skips
  comments, raw text and attribute values, and counts only end tags that close an open
  element); past :data:`MAX_NESTING` the page is read by the tag-stripping fallback.
* **Attributes of one element.** lexbor checks each attribute against the element's
  earlier ones (HTML §13.2.5.33, duplicate attributes are dropped), so ``n`` attributes on
  one element cost ``n²``: 90,000 cost 30 s. :func:`check_attributes` refuses a page with
  an element of more than :data:`MAX_ATTRIBUTES` attributes (:class:`PageTooComplexError`).
* **NFKC expansion.** One character can normalise to 18 (U+FDFA), so 10 MiB of text can
  become 180 MiB and gigabytes in the steps after. :func:`normalise_bounded` normalises in
  pieces and refuses text whose normal form passes :data:`MAX_TEXT_CHARS` characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from changewatch.errors import PageTooComplexError

__all__ = [
    "MAX_ATTRIBUTES",
    "MAX_NESTING",
    "MAX_TEXT_CHARS",
    "check_attributes",
    "nesting_depth",
    "normalise_bounded",
    "too_deep",
]

#: Pages the model says nest deeper than this are read by the tag-stripping fallback.
#: Blink flattens the DOM past 512 levels; the deepest page of the shared corpus models 236.
MAX_NESTING = 4096
#: An element with more attributes than this is refused: lexbor's duplicate check makes one
#: element's attributes quadratic (4,096 attributes: about 60 ms). The most on one element
#: in the shared corpus is 23.
MAX_ATTRIBUTES = 4096
#: The normalised text of a page may hold at most this many characters (as many as the
#: default page limit has bytes, 10 MiB); NFKC expanding past it is refused.
MAX_TEXT_CHARS = 10 * 1024 * 1024

_WS = r"\t\n\f\r "
# One attribute (HTML §13.2.5.32-39): a name, then maybe "=" and a value; a quoted value
# runs to its closing quote or to the end of the page (an unterminated tag is dropped).
# Possessive quantifiers: no backtracking, so the pass stays linear on any input.
_ATTRIBUTE = (
    rf"[^{_WS}/>][^{_WS}/=>]*+(?:[{_WS}]*+=[{_WS}]*+"
    rf"""(?:"[^"]*+(?:"|\Z)|'[^']*+(?:'|\Z)|[^{_WS}>]*+))?+"""
)
_TOKEN = (
    r"<!--(?:>|->|.*?--!?>|.*)"  # a comment (§13.2.5.43-52), or to the end of the page
    r"|<!\[CDATA\["  # CDATA: a section in SVG/MathML, a bogus comment in HTML
    r"|<[!?][^>]*+>?|</(?![A-Za-z])[^>]*+>?"  # doctype and bogus comments: to the first ">"
    rf"|<(/?)([A-Za-z][^{_WS}/>]*+)((?:[{_WS}]++|/(?!>)|{_ATTRIBUTE})*+)(/?)>"  # a tag
    r"|<[A-Za-z].*|</[A-Za-z].*"  # a tag the page ends inside: dropped with the rest
)
_TOKEN_STR = re.compile(_TOKEN, re.DOTALL)
_TOKEN_BYTES = re.compile(_TOKEN.encode(), re.DOTALL)
_ATTRIBUTE_STR = re.compile(_ATTRIBUTE)
_ATTRIBUTE_BYTES = re.compile(_ATTRIBUTE.encode())

_VOID = frozenset(
    [
        "area",
        "base",
        "basefont",
        "bgsound",
        "br",
        "col",
        "embed",
        "frame",
        "hr",
        "image",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
#: The formatting elements (§13.2.4.3): reconstructed and cloned by the parser, so counted
#: per name and never closed implicitly.
_FORMATTING = frozenset(
    [
        "a",
        "b",
        "big",
        "code",
        "em",
        "font",
        "i",
        "nobr",
        "s",
        "small",
        "strike",
        "strong",
        "tt",
        "u",
    ]
)
#: Elements whose content is text (§13.2.5.2-7); outside SVG/MathML only.
_RAW_TEXT = frozenset(["iframe", "noembed", "noframes", "style", "textarea", "title", "xmp"])
#: The "special" category (§13.2.4.2): an end tag for another name stops at these.
_SPECIAL = frozenset(
    [
        "address",
        "applet",
        "area",
        "article",
        "aside",
        "base",
        "basefont",
        "bgsound",
        "blockquote",
        "body",
        "br",
        "button",
        "caption",
        "center",
        "col",
        "colgroup",
        "dd",
        "details",
        "dir",
        "div",
        "dl",
        "dt",
        "embed",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "frame",
        "frameset",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "head",
        "header",
        "hgroup",
        "hr",
        "html",
        "iframe",
        "img",
        "input",
        "keygen",
        "li",
        "link",
        "listing",
        "main",
        "marquee",
        "menu",
        "meta",
        "nav",
        "noembed",
        "noframes",
        "noscript",
        "object",
        "ol",
        "p",
        "param",
        "plaintext",
        "pre",
        "script",
        "search",
        "section",
        "select",
        "source",
        "style",
        "summary",
        "table",
        "tbody",
        "td",
        "template",
        "textarea",
        "tfoot",
        "th",
        "thead",
        "title",
        "tr",
        "track",
        "ul",
        "wbr",
        "xmp",
        "mi",
        "mo",
        "mn",
        "ms",
        "mtext",
        "annotation-xml",
        "foreignobject",
        "desc",
    ]
)
#: "has an element in scope" (§13.2.4.2) stops at these; button, list item and table
#: scope add or replace some.
_SCOPE = frozenset(
    [
        "applet",
        "caption",
        "html",
        "table",
        "td",
        "th",
        "marquee",
        "object",
        "template",
        "mi",
        "mo",
        "mn",
        "ms",
        "mtext",
        "annotation-xml",
        "foreignobject",
        "desc",
        "title",
    ]
)
_BUTTON_SCOPE = _SCOPE | {"button"}
_LIST_SCOPE = _SCOPE | {"ol", "ul"}
_TABLE_SCOPE = frozenset({"html", "table", "template"})
_TABLE_END = frozenset(["table", "tbody", "thead", "tfoot", "tr", "td", "th", "caption"])
#: Start tags that close an open p (§13.2.6.4.7); table only in no-quirks mode, so not here.
_CLOSES_P = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "center",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "header",
        "hgroup",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "search",
        "section",
        "summary",
        "ul",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "listing",
        "form",
        "xmp",
        "li",
        "dd",
        "dt",
        "plaintext",
    ]
)
_HEADINGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])
#: HTML integration points and MathML text integration points: their content is HTML.
_INTEGRATION = frozenset(
    ["foreignobject", "desc", "title", "mi", "mo", "mn", "ms", "mtext", "annotation-xml"]
)
_TABLE_SECTIONS = frozenset({"tbody", "thead", "tfoot"})


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
    cells and rows), so it over-estimates. Formatting elements (``b``, ``a``, ``font``…),
    which the parser reconstructs and clones, are counted per name and only end tags of
    that name take them off; ``html``, ``head`` and ``body`` count 3.

    >>> nesting_depth("<div></x>" * 10), nesting_depth("<div><!--</div>-->" * 10)
    (13, 13)
    >>> nesting_depth("<ul><li>a<li>b</ul><p>x<p>y<div title='</div>'></div>")
    5
    """
    scanner = _Model(limit)
    scanner.run(source)
    return scanner.deepest


class _Model:
    """The state of :func:`nesting_depth`'s pass: the stack of open elements, with, for each
    name and each kind of element the scope rules stop at, the stack indices where one is
    open (so every question the rules ask is answered in constant time)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.stack: list[str] = []
        #: Per entry of ``stack``: whether that element's content is SVG/MathML.
        self.foreign: list[bool] = []
        self.where: dict[str, list[int]] = {}
        self.formatting: dict[str, int] = {}
        self.formatting_open = 0
        self.deepest = 3

    def run(self, text: str | bytes) -> None:
        bytes_in = isinstance(text, bytes)
        search = (_TOKEN_BYTES if bytes_in else _TOKEN_STR).search
        attribute = _ATTRIBUTE_BYTES if bytes_in else _ATTRIBUTE_STR
        pos = 0
        limit = self.limit
        attributes_limit = 2 * self.attributes_limit
        while True:
            match = search(text, pos)  # type: ignore[arg-type]
            if match is None:
                return
            pos = match.end()
            raw_name = match.group(2)
            if raw_name is None:
                if match.group(0)[:9] in _CDATA and self.foreign and self.foreign[-1]:
                    end = text.find(_CDATA_END[type(text)], pos)  # type: ignore[arg-type]
                    if end == -1:
                        return
                    pos = end + 3
                continue
            attributes = match.group(3)
            if len(attributes) > attributes_limit:
                found = len(attribute.findall(attributes))  # type: ignore[arg-type]
                if found > self.attributes_limit:
                    raise PageTooComplexError("attributes", self.attributes_limit, found)
            name: str = raw_name.decode("latin-1").lower() if bytes_in else raw_name.lower()  # type: ignore[union-attr,assignment]
            if match.group(1):
                self.end(name)
                continue
            pos = self.start(name, bool(match.group(4)), text, pos)
            if pos < 0:
                return
            depth = len(self.stack) + self.formatting_open + 3
            if depth > self.deepest:
                self.deepest = depth
                if depth > limit:
                    return

    attributes_limit = MAX_ATTRIBUTES

    def start(self, name: str, self_closing: bool, text: str | bytes, pos: int) -> int:
        """Apply a start tag; the position to scan on from (-1: the rest is text)."""
        if self.foreign and self.foreign[-1]:
            if not self_closing:
                self.push(name, name not in _INTEGRATION)
            return pos
        if name in _VOID or name in ("html", "head", "body"):
            return pos
        if name in _FORMATTING:
            self.formatting[name] = self.formatting.get(name, 0) + 1
            self.formatting_open += 1
            return pos
        self.close_implied(name)
        if name == "svg" or name == "math":
            if not self_closing:
                self.push(name, True)
            return pos
        self.push(name, False)
        if name == "script":
            return _script_end(text, pos)
        if name in _RAW_TEXT:
            return _raw_text_end(text, pos, name)
        if name == "plaintext":
            return -1
        return pos

    def push(self, name: str, foreign: bool) -> None:
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
        """What an HTML start tag ``name`` surely closes first (§13.2.6.4.7, 9, 11, 13)."""
        if not self.stack:
            return
        if name in _TABLE_END and name != "table" and name != "caption":
            self.close_table_parts(name)
            return
        if name in _CLOSES_P:
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
        elif (name in _HEADINGS and top in _HEADINGS) or (
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
                self.push("tbody", False)
            self.push("tr", False)
        elif name == "tr":
            keep = section + 1 if section > table else table + 1
            self.pop_to(keep)
            if section <= table:
                self.push("tbody", False)
        else:
            self.pop_to(table + 1)

    def end(self, name: str) -> None:
        """Apply an end tag: pop only what the parser surely pops (§13.2.6.4.7)."""
        if name in _FORMATTING:
            count = self.formatting.get(name, 0)
            if count:
                self.formatting[name] = count - 1
                self.formatting_open -= 1
            return
        if not self.stack:
            return
        if self.last("select") >= 0 and name not in ("select", "option", "optgroup"):
            return  # in select, other end tags are ignored
        if self.foreign[-1] or name not in _SPECIAL:
            index = self.in_scope(name, " special")
        elif name == "p":
            index = self.in_scope("p", " scope", "button")
        elif name == "li":
            index = self.in_scope("li", " scope", "ol", "ul")
        elif name in _TABLE_END:
            index = self.in_scope(name, " table-scope")
        elif name == "select":
            index = self.in_scope("select", " not-option")
        else:
            index = self.in_scope(name, " scope")
        if index >= 0:
            self.pop_to(index)


def _keys(name: str) -> tuple[str, ...]:
    """The keys :class:`_Model` indexes an open element ``name`` under: its name and the
    kinds the scope rules ask about (each starting with a space, never a tag name)."""
    keys = [name]
    if name in _SCOPE:
        keys.append(" scope")
    if name in _SPECIAL:
        keys.append(" special")
        if name not in ("address", "div", "p"):
            keys.append(" special-li")
    if name in _TABLE_SCOPE:
        keys.append(" table-scope")
    if name in _TABLE_SECTIONS:
        keys.append(" section")
    if name not in ("option", "optgroup"):
        keys.append(" not-option")
    found = tuple(keys)
    if len(_KEYS) < 4096:
        _KEYS[name] = found
    return found


_KEYS: dict[str, tuple[str, ...]] = {}


_CDATA = frozenset({"<![CDATA[", b"<![CDATA["})
_CDATA_END: dict[type, str | bytes] = {str: "]]>", bytes: b"]]>"}


def _end_tag_re(name: str) -> tuple[re.Pattern[str], re.Pattern[bytes]]:
    pattern = rf"</{name}[{_WS}/>]"
    return re.compile(pattern, re.IGNORECASE), re.compile(pattern.encode(), re.IGNORECASE)


_END_TAGS = {name: _end_tag_re(name) for name in (*_RAW_TEXT, "script")}


def _raw_text_end(text: str | bytes, pos: int, name: str) -> int:
    """Where the raw text (RCDATA) of ``name`` ends: after ``</name`` (§13.2.5.2-3)."""
    pattern = _END_TAGS[name][isinstance(text, bytes)]
    match = pattern.search(text, pos)  # type: ignore[arg-type]
    return -1 if match is None else match.start() + 2


_SCRIPT_STATES = (
    re.compile(rf"</script[{_WS}/>]|<!--", re.IGNORECASE),
    re.compile(rf"</script[{_WS}/>]|<script[{_WS}/>]|-->", re.IGNORECASE),
    re.compile(rf"</script[{_WS}/>]|-->", re.IGNORECASE),
)
_SCRIPT_STATES_BYTES = tuple(
    re.compile(pattern.pattern.encode(), re.IGNORECASE) for pattern in _SCRIPT_STATES
)


def _script_end(text: str | bytes, pos: int) -> int:
    """Where a script's text ends (§13.2.5.4, 15-31): at ``</script``, except inside
    ``<!--`` … ``-->`` after a ``<script`` (the double-escaped state), where ``</script``
    only ends that state."""
    states = _SCRIPT_STATES_BYTES if isinstance(text, bytes) else _SCRIPT_STATES
    state = 0  # 0 data, 1 escaped, 2 double escaped
    while True:
        match = states[state].search(text, pos)  # type: ignore[arg-type]
        if match is None:
            return -1
        found = match.group(0)[:3].lower()
        pos = match.end()
        if found in ("</s", b"</s"):
            if state != 2:
                return match.start() + 2
            state = 1
        elif found in ("<!-", b"<!-"):
            state = 1
        elif found in ("-->", b"-->"):
            state = 0
        else:  # <script inside <!--
            state = 2


def _long_tag_re(limit: int, flavour: type) -> re.Pattern[str] | re.Pattern[bytes]:
    pattern = rf"<[A-Za-z][^{_WS}/>]*+(?>(?:(?:[{_WS}]|/(?!>))*+{_ATTRIBUTE}){{{limit + 1}}})"
    return re.compile(pattern.encode() if flavour is bytes else pattern, re.DOTALL)


_LONG_TAG = {kind: _long_tag_re(MAX_ATTRIBUTES, kind) for kind in (str, bytes)}


def check_attributes(source: str | bytes, limit: int = MAX_ATTRIBUTES) -> None:
    """Raise :class:`PageTooComplexError` if a tag of ``source`` has more than ``limit``
    attributes, counted by the tokenizer's rules (HTML §13.2.5.32-39; duplicates count,
    as lexbor compares each with the earlier ones). A tag written inside a comment or a
    script counts too: no real page holds thousands of attributes there.

    One regex search from each ``<``: linear for pages of few ``<`` (those of more are
    checked by the pass of :func:`nesting_depth`).

    >>> check_attributes("<p " + "a=1 " * 10 + ">", limit=10)
    >>> check_attributes("<p " + "a=1 " * 11 + ">", limit=10)
    Traceback (most recent call last):
    ...
    changewatch.errors.PageTooComplexError: an element has more than 10 attributes (11): ...
    """
    kind = bytes if isinstance(source, bytes) else str
    pattern = _LONG_TAG[kind] if limit == MAX_ATTRIBUTES else _long_tag_re(limit, kind)
    if pattern.search(source) is not None:  # type: ignore[arg-type]
        raise PageTooComplexError("attributes", limit, limit + 1)


def too_deep(source: str | bytes, count: int) -> bool:
    """Whether ``source`` (with ``count`` ``<`` characters) nests deeper than
    :data:`MAX_NESTING` by the model of :func:`nesting_depth`; raises
    :class:`PageTooComplexError` for a tag of more than :data:`MAX_ATTRIBUTES` attributes.

    A page of at most :data:`MAX_NESTING` ``<`` has as many start tags at most, so its
    stack (open elements, plus implied rows and sections and reconstructed formatting
    elements, at most twice the start tags and 3) costs lexbor a bounded time; the model
    pass runs only on pages of more.
    """
    if count <= MAX_NESTING:
        check_attributes(source)
        return False
    return nesting_depth(source) > MAX_NESTING


def normalise_bounded(
    text: str,
    normalise: Callable[[str], str],
    limit: int = MAX_TEXT_CHARS,
    *,
    piece: int = 1 << 16,
) -> str:
    """``normalise(text)`` (NFKC, case fold, collapsed spaces), done a piece at a time so
    that memory stays a small multiple of ``limit``; :class:`PageTooComplexError` if the
    result would pass ``limit`` characters.

    ``text`` has single spaces between words already; it is cut at spaces, which no
    normalisation step joins or moves (a space is a starter that composes with nothing);
    ``piece`` is about how many characters are normalised at a time.

    >>> normalise_bounded("a b c", str.upper, piece=1)
    'A B C'
    >>> import unicodedata
    >>> normalise_bounded("\ufdfa " * 4, lambda t: unicodedata.normalize("NFKC", t), limit=7)
    Traceback (most recent call last):
    ...
    changewatch.errors.PageTooComplexError: the normalised text passes 7 characters ...
    """
    parts: list[str] = []
    size = 0
    start = 0
    while start < len(text):
        stop = text.find(" ", start + piece)
        stop = len(text) if stop == -1 else stop
        part = normalise(text[start:stop])
        start = stop + 1
        if not part:
            continue
        size += len(part) + 1
        if size > limit + 1:
            raise PageTooComplexError("text", limit, size)
        parts.append(part)
    return " ".join(parts)
