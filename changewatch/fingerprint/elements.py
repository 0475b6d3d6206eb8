"""The kinds of HTML elements the tree-construction rules name (HTML §13.2.4, §13.2.6) —
pure data, for the model of :mod:`~changewatch.fingerprint.nesting`."""

from __future__ import annotations

__all__ = [
    "BREAKOUT",
    "BUTTON_SCOPE",
    "CLOSES_P",
    "FORMATTING",
    "HEADINGS",
    "INTEGRATION",
    "LIST_SCOPE",
    "SCOPE",
    "SCOPED_END",
    "SPECIAL",
    "TABLE_CONTEXT",
    "TABLE_END",
    "TABLE_SCOPE",
    "TABLE_SECTIONS",
    "VOID",
]


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


VOID = _names(
    "area base basefont bgsound br col embed frame hr image img input keygen link meta "
    "param source track wbr"
)
#: The formatting elements (§13.2.4.3): reconstructed and cloned by the parser, so counted
#: per name and never closed implicitly.
FORMATTING = _names("a b big code em font i nobr s small strike strong tt u")
#: The "special" category (§13.2.4.2): an end tag for another name stops at these.
SPECIAL = _names(
    "address applet area article aside base basefont bgsound blockquote body br button "
    "caption center col colgroup dd details dir div dl dt embed fieldset figcaption "
    "figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html "
    "iframe img input keygen li link listing main marquee menu meta nav noembed noframes "
    "noscript object ol p param plaintext pre script search section select source style "
    "summary table tbody td template textarea tfoot th thead title tr track ul wbr xmp mi "
    "mo mn ms mtext annotation-xml foreignobject desc"
)
#: "has an element in scope" (§13.2.4.2) stops at these; button, list item and table
#: scope add or replace some.
SCOPE = _names(
    "applet caption html table td th marquee object template mi mo mn ms mtext "
    "annotation-xml foreignobject desc title"
)
BUTTON_SCOPE = SCOPE | {"button"}
LIST_SCOPE = SCOPE | {"ol", "ul"}
TABLE_SCOPE = frozenset({"html", "table", "template"})
TABLE_END = frozenset(["table", "tbody", "thead", "tfoot", "tr", "td", "th", "caption"])
#: Start tags that close an open p (§13.2.6.4.7); table only in no-quirks mode, so not here.
CLOSES_P = _names(
    "address article aside blockquote center details dialog dir div dl fieldset "
    "figcaption figure footer header hgroup main menu nav ol p search section summary ul "
    "h1 h2 h3 h4 h5 h6 pre listing form xmp li dd dt plaintext"
)
HEADINGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])
#: HTML integration points and MathML text integration points: their content is HTML.
INTEGRATION = frozenset(
    [("svg", "foreignobject"), ("svg", "desc"), ("svg", "title")]
    + [("math", name) for name in ("mi", "mo", "mn", "ms", "mtext")]
)
TABLE_SECTIONS = frozenset({"tbody", "thead", "tfoot"})
TABLE_CONTEXT = frozenset({"table", "tbody", "thead", "tfoot", "tr"})
#: End tags "in body" closes when the element is in scope (§13.2.6.4.7); other special
#: end tags are "any other end tag".
SCOPED_END = _names(
    "address article aside blockquote button center details dialog dir div dl fieldset "
    "figcaption figure footer header hgroup listing main menu nav ol pre search section "
    "summary ul dd dt h1 h2 h3 h4 h5 h6 applet marquee object template"
)
#: Start tags that end SVG/MathML content (§13.2.6.5), and font with a color, face or size
#: attribute (see :func:`_font_in_foreign`).
BREAKOUT = _names(
    "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 "
    "head hr i img li listing menu meta nobr ol p pre ruby s small span strong strike sub "
    "sup table tt u ul var font"
)
