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
from typing import Final, NamedTuple
from xml.parsers import expat

from changewatch.errors import SitemapLimitError, SitemapParseError, SitemapRefusedError
from changewatch.sitemaps._loc import MAX_LOC_CHARS
from changewatch.sitemaps.model import SitemapKind

__all__ = [
    "COALESCE_BYTES",
    "MAX_TOKEN_BYTES",
    "MAX_XML_DEPTH",
    "RawEntry",
    "XmlReader",
    "limit_error",
]

#: The sitemaps.org namespace; children in it count whatever namespace the root declared.
SITEMAP_NS: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
#: Largest single token (a tag with its attributes, a comment, a processing instruction) held
#: while waiting for its end: without it a hostile 50 MB attribute would sit in memory whole.
MAX_TOKEN_BYTES: Final = 1_048_576
#: While expat waits on an unfinished token, input is handed to it in pieces of at least the
#: token's size so far, up to this many bytes: expat 2.5 scans an unfinished token again
#: from its start at every Parse call (CVE-2023-52425, deferred in expat 2.6), so a server
#: sending a 1 MB attribute in 1 KiB pieces cost 1.1 s a token, 64 KiB pieces 0.03 s.
COALESCE_BYTES: Final = 65_536
#: Deepest element nesting accepted (real sitemaps with PageMap extensions reach 5).
MAX_XML_DEPTH: Final = 100
#: Dates longer than this are garbage anyway; text past a cap is dropped, not stored.
_MAX_DATE_CHARS: Final = 128
_SEP: Final = "\x1f"
#: :meth:`XmlReader._action` of an entry's link element, and of any element not read.
_LOC: Final = -1
_IGNORED: Final = -2


def limit_error(url: str, limit: str, value: int, detail: str) -> SitemapLimitError:
    """The error for a broken limit, its message naming the limit, its value and what broke it."""
    return SitemapLimitError(url, limit, value, f"over the {limit} limit ({value}): {detail}")


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


class RawEntry(NamedTuple):
    """One entry as written: its link text (``None`` if absent) and its date text.

    A named tuple, not a dataclass: one is made per entry, and it is half the cost."""

    loc: str | None
    date: str | None
    #: The link text passed MAX_LOC_CHARS and was cut off while reading.
    loc_too_long: bool = False


class XmlReader:
    """Feed bytes; completed entries accumulate in ``entries`` for the caller to drain.

    Handlers are kept lean (they run for every element): text is collected only inside the
    ``loc``/date fields of an entry, and never past a cap.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.kind: SitemapKind | None = None
        self.entries: list[RawEntry] = []
        self._layout = _ROOTS["urlset"]
        self._rooted = False
        self._root_ns = ""
        self._depth = 0
        self._entry_depth = -1
        self._field_depth = -1
        self._fed = 0
        #: Bytes expat holds of the token it waits to complete, and input not yet handed to it.
        self._held = 0
        self._pending = bytearray()
        self._names: dict[str, tuple[bool, str]] = {}
        self._actions: dict[str, int] = {}
        self._in_entry = False
        self._loc: str | None = None
        self._loc_over = False
        self._date: str | None = None
        self._date_rank = 0
        self._own: list[str] = []
        self._own_len = 0
        #: The field being read (``None`` outside one: :data:`_LOC` or a date's rank), its
        #: text so far, size and cap.
        self._field: int | None = None
        self._buf: list[str] | None = None
        self._buf_len = 0
        self._cap = 0
        self._over = False
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
        self._parser = parser

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Parse ``data``; raises ``expat.ExpatError`` on broken XML, ours on hostile XML.

        Input is held back (at most :data:`COALESCE_BYTES`) while it is smaller than the
        unfinished token expat would scan again: a document of small tokens is parsed as it
        arrives, whatever the piece size, and one long token costs what 64 KiB pieces cost.
        """
        wait = min(self._held, COALESCE_BYTES)
        if self._pending or len(data) < wait:
            self._pending += data
            if len(self._pending) < wait:
                return
            data = bytes(self._pending)
            self._pending.clear()
        self._parse(data)

    def _parse(self, data: bytes) -> None:
        self._fed += len(data)
        self._parser.Parse(data, False)
        # Outside a handler, CurrentByteIndex is where expat stopped: the start of the token it
        # is still waiting to complete. Everything after it is held in memory.
        self._held = self._fed - max(0, self._parser.CurrentByteIndex)
        if self._held > MAX_TOKEN_BYTES:
            raise limit_error(
                self.url,
                "max_token",
                MAX_TOKEN_BYTES,
                "a single XML token (a tag with its attributes, a comment) is longer",
            )

    @property
    def finished(self) -> bool:
        """The root element has been closed: every entry of the document was read."""
        return self._rooted and self._depth == 0

    def close(self) -> None:
        """Finish the document; raises ``expat.ExpatError`` if it is incomplete."""
        if self._pending:
            data = bytes(self._pending)
            self._pending.clear()
            self._parse(data)
        self._parser.Parse(b"", True)

    # -- handlers --------------------------------------------------------------------------

    def _refuse_doctype(self, name: str | None, *_: object) -> None:
        raise SitemapRefusedError(
            self.url,
            f"a DOCTYPE declaration (<!DOCTYPE {name or ''}>): "
            "DTDs and entities are refused in sitemaps",
        )

    def _refuse_entity(self, *_: object) -> None:
        raise SitemapRefusedError(self.url, "an ENTITY declaration: entities are refused")

    def _refuse_external(self, *_: object) -> bool:
        raise SitemapRefusedError(self.url, "an external entity reference: refused")

    def _ours(self, name: str) -> tuple[bool, str]:
        """(is the element in the document's namespace, its local name)."""
        known = self._names.get(name)
        if known is None:
            ns, _, local = name.rpartition(_SEP)
            known = (ns in ("", self._root_ns, SITEMAP_NS), local)
            if len(self._names) < 256:  # a hostile file may use millions of names
                self._names[name] = known
        return known

    def _action(self, name: str) -> int:
        """What a child of an entry is: :data:`_LOC`, a date field's rank (≥ 0), or
        :data:`_IGNORED`; remembered per name (up to 256 names)."""
        ours, local = self._ours(name)
        layout = self._layout
        if not ours:
            action = _IGNORED
        elif local == layout.loc:
            action = _LOC
        elif local in layout.dates:
            action = layout.dates.index(local)
        else:
            action = _IGNORED
        if len(self._actions) < 256:
            self._actions[name] = action
        return action

    def _root(self, name: str) -> None:
        ns, _, local = name.rpartition(_SEP)
        found = _ROOTS.get(local)
        if found is None:
            raise SitemapParseError(
                self.url, f"not a sitemap or feed: the root element is <{local}>"
            )
        self._layout, self._root_ns, self.kind = found, ns, found.kind
        self._entry_depth, self._field_depth = found.entry_depth, found.entry_depth + 1
        self._rooted = True

    # The handlers run for every element, so they are written out flat. Character data is
    # only delivered where it is kept: inside a field (``_field_chars``), directly inside an
    # entry (``_entry_chars``: ``<sitemap>URL</sitemap>`` is seen in the wild), and nowhere
    # else (no handler: expat makes no call at all).

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        depth = self._depth = self._depth + 1
        if depth == self._field_depth:
            if not self._in_entry:
                return
            action = self._actions.get(name)
            if action is None:
                action = self._action(name)
            if action == _LOC:
                if self._layout.loc_in_href:
                    # Atom: the first <link> whose rel is absent or "alternate" (RFC 4287).
                    rel = attrs.get("rel", "alternate").strip().lower()
                    if self._loc is None and rel == "alternate" and "href" in attrs:
                        self._loc = attrs["href"]
                        self._loc_over = len(self._loc) >= MAX_LOC_CHARS
                elif self._loc is None:
                    self._field, self._cap = _LOC, MAX_LOC_CHARS
                    self._buf, self._buf_len, self._over = [], 0, False
                    self._parser.CharacterDataHandler = self._field_chars
            elif action >= 0 and action < self._date_rank:
                self._date_rank = action
                self._field, self._cap = action, _MAX_DATE_CHARS
                self._buf, self._buf_len, self._over = [], 0, False
                self._parser.CharacterDataHandler = self._field_chars
        elif depth == self._entry_depth:
            ours, local = self._ours(name)
            if ours and local == self._layout.entry:
                self._in_entry = True
                self._loc = self._date = None
                self._loc_over = False
                self._date_rank = len(self._layout.dates)
                self._own, self._own_len = [], 0
                self._parser.CharacterDataHandler = self._entry_chars
        elif depth > MAX_XML_DEPTH:
            raise limit_error(self.url, "max_xml_depth", MAX_XML_DEPTH, "elements nested too deep")
        elif not self._rooted:
            self._root(name)

    def _end(self, name: str) -> None:
        depth = self._depth
        self._depth = depth - 1
        if depth == self._field_depth:
            buf = self._buf
            if buf is not None:
                text = "".join(buf)
                if self._field == _LOC:
                    self._loc, self._loc_over = text, self._over
                else:
                    self._date = text
                self._buf = self._field = None
                self._parser.CharacterDataHandler = self._entry_chars
        elif depth == self._entry_depth and self._in_entry:
            self._in_entry = False
            self._parser.CharacterDataHandler = None
            self.entries.append(self._entry())

    def _entry(self) -> RawEntry:
        loc = self._loc
        if self._loc_over:
            return RawEntry(loc, self._date, True)
        if loc is None or not loc.strip():
            if not self._own:
                return RawEntry(None, self._date)
            # Seen in the wild (crawler-commons keeps one as a test file): <sitemap>URL</sitemap>.
            return RawEntry("".join(self._own), self._date, self._own_len >= MAX_LOC_CHARS)
        return RawEntry(loc, self._date, self._loc_over)

    def _field_chars(self, data: str) -> None:
        size = self._buf_len + len(data)
        if size > self._cap:
            self._over = True
        else:
            self._buf.append(data)  # type: ignore[union-attr]  # set with this handler
            self._buf_len = size

    def _entry_chars(self, data: str) -> None:
        if self._depth == self._entry_depth and not data.isspace():
            if self._own_len + len(data) <= MAX_LOC_CHARS:
                self._own.append(data)
            self._own_len += len(data)
