"""The XML half of the sitemap parser: expat, fed in chunks, refusing every DTD construct.

Why expat (the standard library's ``xml.parsers.expat``) rather than lxml: it is push-based
(``Parse(chunk, False)``) so memory holds one chunk plus one open entry; its handlers fire at
the first byte of a ``<!DOCTYPE`` so the file is refused before any entity is declared, let
alone expanded or fetched; and the pure core stays on the standard library (STYLE.md). The
bundled expat (≥ 2.4) also has its own billion-laughs guard, a second line we never reach.

The reader only collects raw text (``loc`` and date strings); checking them is the parser's job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from xml.parsers import expat

from changewatch.errors import SitemapLimitError, SitemapParseError, SitemapRefusedError
from changewatch.sitemaps._loc import MAX_LOC_CHARS
from changewatch.sitemaps.model import SitemapKind

__all__ = ["MAX_TOKEN_BYTES", "MAX_XML_DEPTH", "RawEntry", "XmlReader"]

#: The sitemaps.org namespace; children in it count whatever namespace the root declared.
SITEMAP_NS: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
#: Largest single token (a tag with its attributes, a comment, a processing instruction) held
#: while waiting for its end: without it a hostile 50 MB attribute would sit in memory whole.
MAX_TOKEN_BYTES: Final = 1_048_576
#: Deepest element nesting accepted (real sitemaps with PageMap extensions reach 5).
MAX_XML_DEPTH: Final = 100
#: Dates longer than this are garbage anyway; text past a cap is dropped, not stored.
_MAX_DATE_CHARS: Final = 128
_SEP: Final = "\x1f"


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where entries and their fields sit in one kind of document."""

    kind: SitemapKind
    #: Depth of the entry element (the root is depth 1) and its local name.
    entry_depth: int
    entry: str
    loc: str
    #: Date fields, in order of preference.
    dates: tuple[str, ...]
    #: The entry's link is an attribute (Atom ``<link href>``), not element text.
    loc_in_href: bool = False


_ROOTS: Final = {
    "urlset": _Layout("urlset", 2, "url", "loc", ("lastmod",)),
    "sitemapindex": _Layout("sitemapindex", 2, "sitemap", "loc", ("lastmod",)),
    "rss": _Layout("rss", 3, "item", "link", ("pubDate",)),
    "feed": _Layout("atom", 2, "entry", "link", ("updated", "published"), loc_in_href=True),
}


@dataclass(frozen=True, slots=True)
class RawEntry:
    """One entry as written: its link text (``None`` if absent) and its date text."""

    loc: str | None
    date: str | None
    #: The link text passed MAX_LOC_CHARS and was cut off while reading.
    loc_too_long: bool = False


class _Text:
    """Character data of one element, kept up to a cap."""

    __slots__ = ("cap", "overflow", "parts", "size")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.overflow = False

    def add(self, data: str) -> None:
        if self.size + len(data) > self.cap:
            self.overflow = True
            data = data[: max(0, self.cap - self.size)]
        self.parts.append(data)
        self.size += len(data)

    def value(self) -> str:
        return "".join(self.parts)


class XmlReader:
    """Feed bytes; completed entries accumulate in ``entries`` for the caller to drain."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.kind: SitemapKind | None = None
        self.entries: list[RawEntry] = []
        self._layout: _Layout | None = None
        self._root_ns = ""
        self._depth = 0
        self._fed = 0
        self._last_event = 0
        self._loc: _Text | None = None
        self._own_text: _Text | None = None
        self._dates: dict[str, _Text] = {}
        self._capture: _Text | None = None
        self._href: str | None = None
        parser = expat.ParserCreate(namespace_separator=_SEP)
        parser.buffer_text = True
        # Never read a DTD or parameter entities, whatever the document says.
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._refuse_doctype
        parser.EntityDeclHandler = self._refuse_entity
        parser.UnparsedEntityDeclHandler = self._refuse_entity
        parser.NotationDeclHandler = self._refuse_entity
        parser.ExternalEntityRefHandler = self._refuse_external
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._chars
        parser.CommentHandler = self._mark
        parser.ProcessingInstructionHandler = self._mark
        self._parser = parser

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Parse ``data``; raises ``expat.ExpatError`` on broken XML, ours on hostile XML."""
        self._fed += len(data)
        self._parser.Parse(data, False)
        if self._fed - self._last_event > MAX_TOKEN_BYTES:
            raise SitemapLimitError(
                self.url,
                "max_token",
                MAX_TOKEN_BYTES,
                f"a single XML token (tag, attribute or comment) runs past {MAX_TOKEN_BYTES} bytes",
            )

    def close(self) -> None:
        """Finish the document; raises ``expat.ExpatError`` if it is incomplete."""
        self._parser.Parse(b"", True)

    # -- handlers --------------------------------------------------------------------------

    def _mark(self, *_: object) -> None:
        self._last_event = self._parser.CurrentByteIndex

    def _refuse_doctype(self, *_: object) -> None:
        raise SitemapRefusedError(
            self.url, "a DOCTYPE declaration: DTDs and entities are refused in sitemaps"
        )

    def _refuse_entity(self, *_: object) -> None:
        raise SitemapRefusedError(self.url, "an ENTITY declaration: entities are refused")

    def _refuse_external(self, *_: object) -> bool:
        raise SitemapRefusedError(self.url, "an external entity reference: refused")

    def _ours(self, name: str) -> tuple[bool, str]:
        """(is the element in the document's namespace, its local name)."""
        ns, _, local = name.rpartition(_SEP)
        return ns in ("", self._root_ns, SITEMAP_NS), local

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self._mark()
        self._depth += 1
        if self._depth > MAX_XML_DEPTH:
            raise SitemapLimitError(
                self.url, "max_xml_depth", MAX_XML_DEPTH, "elements nested too deep"
            )
        layout = self._layout
        if layout is None:
            ns, _, local = name.rpartition(_SEP)
            found = _ROOTS.get(local)
            if found is None:
                raise SitemapParseError(
                    self.url, f"not a sitemap or feed: the root element is <{local}>"
                )
            self._layout, self._root_ns, self.kind = found, ns, found.kind
            return
        ours, local = self._ours(name)
        depth, entry_depth = self._depth, layout.entry_depth
        if depth == entry_depth and ours and local == layout.entry:
            self._loc, self._href = None, None
            self._own_text = _Text(MAX_LOC_CHARS)
            self._dates = {}
        elif depth == entry_depth + 1 and ours and self._own_text is not None:
            if local == layout.loc and not layout.loc_in_href and self._loc is None:
                self._loc = self._capture = _Text(MAX_LOC_CHARS)
            elif local == layout.loc and layout.loc_in_href:
                rel = attrs.get("rel", "alternate").strip().lower()
                if self._href is None and rel == "alternate" and "href" in attrs:
                    self._href = attrs["href"]
            elif local in layout.dates and local not in self._dates:
                self._dates[local] = self._capture = _Text(_MAX_DATE_CHARS)

    def _end(self, name: str) -> None:
        self._mark()
        layout = self._layout
        depth = self._depth
        self._depth -= 1
        if layout is None or self._own_text is None:
            return
        if depth == layout.entry_depth + 1:
            self._capture = None
        elif depth == layout.entry_depth:
            self.entries.append(self._entry(layout))
            self._own_text = None

    def _entry(self, layout: _Layout) -> RawEntry:
        date = next((self._dates[n].value() for n in layout.dates if n in self._dates), None)
        if layout.loc_in_href:
            href = self._href
            return RawEntry(href, date, href is not None and len(href) >= MAX_LOC_CHARS)
        text = self._loc
        if text is None or not text.value().strip():
            # Seen in the wild (and accepted by crawler-commons): <sitemap>URL</sitemap>.
            text = self._own_text
        if text is None or not text.value().strip():
            return RawEntry(None, date)
        return RawEntry(text.value(), date, text.overflow)

    def _chars(self, data: str) -> None:
        self._mark()
        if self._capture is not None:
            self._capture.add(data)
        elif self._own_text is not None and self._depth == self._layout_entry_depth():
            self._own_text.add(data)

    def _layout_entry_depth(self) -> int:
        return self._layout.entry_depth if self._layout is not None else -1
