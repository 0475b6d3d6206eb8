"""The streaming sitemap parser: bytes in, checked entries out, memory flat, hostile-input safe.

Pure: no I/O, no network, no clock. Feed the body in chunks as it arrives::

    parser = SitemapParser("https://example.com/sitemap.xml.gz")
    for chunk in body:
        for entry in parser.feed_iter(chunk):   # or: handle(parser.feed(chunk))
            handle(entry)
    handle(parser.close())

Reads XML ``urlset`` and ``sitemapindex`` (any or no namespace, BOM, leading whitespace,
extensions ignored), plain-text sitemaps, RSS 2.0 and Atom, raw or gzip-compressed. Limits
(:class:`Limits`) are enforced while streaming, so a bomb is abandoned having inflated at most
``max_bytes``. Invalid entries are skipped and counted in ``skipped``; a document that breaks
off after its root was recognised keeps the entries read so far and sets ``truncated``.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit
from xml.parsers import expat

from changewatch.errors import (
    InvalidURLError,
    SitemapError,
    SitemapParseError,
)
from changewatch.sitemaps._gzip import GZIP_MAGIC, Inflater
from changewatch.sitemaps._lastmod import parse_lastmod
from changewatch.sitemaps._loc import MAX_LOC_CHARS, check_loc, host_key
from changewatch.sitemaps._xml import RawEntry, XmlReader, limit_error
from changewatch.sitemaps.model import ChildSitemap, Limits, SitemapKind, SitemapURL

__all__ = ["ParsedSitemap", "SitemapParser", "parse_lastmod", "parse_sitemap"]

Entry = SitemapURL | ChildSitemap

#: Largest piece inflated or parsed at once: bounds the memory one feed() call can use.
_PIECE: Final = 65_536
#: The decompression ratio is only judged past this much output: tiny bodies have noisy ratios
#: and cannot hurt.
RATIO_FLOOR_BYTES: Final = 1_048_576
_UTF8_BOM: Final = b"\xef\xbb\xbf"
_UTF16_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")
_XML_SPACE: Final = b" \t\r\n"


@dataclass(frozen=True, slots=True)
class ParsedSitemap:
    """The whole result of :func:`parse_sitemap`."""

    kind: SitemapKind
    entries: list[Entry]
    #: Reason → count of entries skipped (and of kept entries whose lastmod was unreadable).
    skipped: dict[str, int] = field(default_factory=dict)
    #: The document broke off after its root: the entries before the break are kept.
    truncated: bool = False
    #: Where and how it broke off, when ``truncated``.
    error: str | None = None


class SitemapParser:
    """Push parser for one sitemap or feed body; see the module docstring.

    ``allowed_hosts`` adds hosts whose URLs this sitemap may list (a robots.txt cross-submit);
    the sitemap's own host is always allowed. ``gzipped=None`` sniffs the gzip magic bytes;
    pass ``False`` when the transport already undid ``Content-Encoding: gzip`` (a body is never
    inflated twice). ``strict=True`` raises :class:`SitemapParseError` where a truncated
    document would otherwise be kept with ``truncated`` set.
    """

    def __init__(
        self,
        sitemap_url: str,
        *,
        limits: Limits = Limits(),  # noqa: B008 - frozen, shared safely
        allowed_hosts: Collection[str] | None = None,
        content_type: str | None = None,
        gzipped: bool | None = None,
        strict: bool = False,
    ) -> None:
        try:
            host = urlsplit(sitemap_url).hostname
        except ValueError:  # "http://[::1", a bad IPv6 literal
            host = None
        if not host:
            raise InvalidURLError(sitemap_url, "a sitemap URL needs a host")
        self.url = sitemap_url
        self.limits = limits
        self.content_type = content_type
        self.strict = strict
        self.hosts = frozenset({host_key(host)} | {host_key(h) for h in allowed_hosts or ()})
        #: What the document turned out to be, once its root (or first line) was read.
        self.kind: SitemapKind | None = None
        #: Reason → count: entries skipped, plus kept entries whose lastmod was unreadable.
        self.skipped: dict[str, int] = {}
        #: Entries returned so far.
        self.urls = 0
        #: Bytes fed (as received) and after decompression.
        self.bytes_in = 0
        self.bytes_out = 0
        #: The document broke off after its root: entries before the break were kept, and a
        #: caller must not read absence from this sitemap as "removed". ``error`` says where.
        self.truncated = False
        self.error: SitemapParseError | None = None
        self._gzip = gzipped
        self._head = b""
        self._inflater: Inflater | None = Inflater() if gzipped else None
        self._mode: str | None = None
        self._start = b""
        self._bom_done = False
        self._xml: XmlReader | None = None
        self._line: list[bytes] = []
        self._line_len = 0
        self._line_overflow = False
        self._listed = 0
        self._broken = False
        self._closed = False
        self._failed: SitemapError | None = None
        self._out: list[Entry] = []

    # -- public ----------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[Entry]:
        """Parse the next piece of the body; returns the entries it completed.

        A gzip chunk may complete many entries (up to ``max_ratio`` times its size in XML);
        :meth:`feed_iter` hands them over per 64 KiB of XML instead.
        """
        return list(self.feed_iter(chunk))

    def feed_iter(self, chunk: bytes) -> Iterator[Entry]:
        """Like :meth:`feed`, yielding entries as each 64 KiB of (inflated) input is parsed,
        so memory holds at most that many entries whatever the chunk's size or ratio.
        Exhaust it before the next call: the chunk is only parsed as it is iterated."""
        self._check_usable()
        try:
            self.bytes_in += len(chunk)
            yield from self._route(chunk)
        except SitemapError as exc:
            self._failed = exc
            raise

    def close(self) -> list[Entry]:
        """End of body: returns the last entries; raises if it was never a sitemap."""
        self._check_usable()
        self._closed = True
        try:
            return list(self._finish())
        except SitemapError as exc:
            self._failed = exc
            raise

    # -- plumbing --------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._failed is not None:
            raise self._failed
        if self._closed:
            raise SitemapParseError(self.url, "the parser was already closed")

    def _drain(self) -> list[Entry]:
        out, self._out = self._out, []
        return out

    def _route(self, chunk: bytes) -> Iterator[Entry]:
        if self._gzip is None:
            self._head += chunk
            if len(self._head) < len(GZIP_MAGIC):
                return
            chunk, self._head = self._head, b""
            self._gzip = chunk.startswith(GZIP_MAGIC)
            if self._gzip:
                self._inflater = Inflater()
        for start in range(0, len(chunk), _PIECE):
            piece = chunk[start : start + _PIECE]
            if self._inflater is None:
                self._consume(piece)
                yield from self._drain()
            else:
                self._inflater.push(piece)
                yield from self._inflate()

    def _inflate(self) -> Iterator[Entry]:
        inflater = self._inflater
        assert inflater is not None
        limits = self.limits
        while not self._broken:
            # Ask for one byte past the cap at most: enough to know it is over.
            room = limits.max_bytes - self.bytes_out + 1
            try:
                out = inflater.pull(min(_PIECE, room))
            except zlib.error as exc:
                self._break(f"not a valid gzip stream ({exc})")
                return
            if not out:
                return
            self._consume(out)
            if (
                self.bytes_out > RATIO_FLOOR_BYTES
                and self.bytes_out > limits.max_ratio * inflater.consumed
            ):
                raise limit_error(
                    self.url,
                    "max_ratio",
                    limits.max_ratio,
                    f"{inflater.consumed} gzip bytes inflated to {self.bytes_out}: "
                    "refused as a decompression bomb",
                )
            yield from self._drain()

    def _consume(self, data: bytes) -> None:
        self.bytes_out += len(data)
        if self.bytes_out > self.limits.max_bytes:
            raise limit_error(
                self.url,
                "max_bytes",
                self.limits.max_bytes,
                "the document is longer (after decompression)",
            )
        if self._broken:
            return
        if self._mode is None:
            data = self._sniff(data, final=False)
        if self._mode == "xml":
            self._feed_xml(data)
        elif self._mode == "text":
            self._feed_text(data)

    def _sniff(self, data: bytes, *, final: bool) -> bytes:
        """Decide XML or text from the first significant byte; returns the bytes to parse."""
        start = self._start + data
        if not self._bom_done:
            if len(start) < len(_UTF8_BOM) and not final:
                self._start = start
                return b""
            self._bom_done = True
            if start.startswith(_UTF16_BOMS):
                self._start, self._mode = b"", "xml"  # expat reads the UTF-16 itself
                return start
            if start.startswith(_UTF8_BOM):
                start = start[len(_UTF8_BOM) :]
        start = start.lstrip(_XML_SPACE)
        self._start = b""
        if not start:
            return b""
        if start.startswith(GZIP_MAGIC):
            raise SitemapParseError(
                self.url, "gzip data inside a decoded or inflated body: never inflated twice"
            )
        self._mode = "xml" if start.startswith(b"<") else "text"
        return start

    def _break(self, message: str) -> None:
        """The document broke off: fatal before its root, else keep what was read."""
        error = SitemapParseError(self.url, message)
        if self.kind is None or self.strict:
            raise error
        self._broken = self.truncated = True
        self.error = error
        self._skip("truncated")

    # -- XML -------------------------------------------------------------------------------

    def _feed_xml(self, data: bytes, *, final: bool = False) -> None:
        reader = self._xml
        if reader is None:
            reader = self._xml = XmlReader(self.url)
        try:
            if final:
                reader.close()
            elif data:
                reader.feed(data)
        except SitemapError:
            raise
        except (expat.ExpatError, LookupError, ValueError) as exc:
            # LookupError/ValueError: expat asked Python for an encoding it does not have or
            # cannot use (only single-byte codecs work), e.g. encoding="UTF-i".
            self.kind = reader.kind
            self._take(reader.entries)
            if reader.kind is None:
                raise SitemapParseError(
                    self.url, f"not a sitemap or feed: not well-formed XML ({exc})"
                ) from exc
            if reader.finished:
                # Bytes after the closing root tag (padding, a second document): every entry
                # was read, so this is not a truncation; note it and stop.
                self._broken = True
                self._skip("junk after document")
                return
            self._break(f"broken XML: {exc}")
            return
        self.kind = reader.kind
        self._take(reader.entries)

    # -- plain text ------------------------------------------------------------------------

    def _feed_text(self, data: bytes) -> None:
        """sitemaps.org text format: one URL per line, UTF-8, nothing else.

        A line ends at CR LF, LF or a lone CR (classic Mac OS files). A CR LF split across two
        chunks ends the line at the CR; the LF then ends an empty line, and empty lines are
        ignored, so it is one line end either way.
        """
        for piece in data.splitlines(keepends=True):  # bytes: splits at \r\n, \n and \r only
            if self._broken:
                return
            line = piece.rstrip(b"\r\n")
            if self._line_len + len(line) > _MAX_LINE_BYTES:
                self._line_overflow = True
            else:
                self._line.append(line)
                self._line_len += len(line)
            if len(line) < len(piece):
                self._end_line()

    def _end_line(self) -> None:
        raw, overflow = b"".join(self._line), self._line_overflow
        self._line, self._line_len, self._line_overflow = [], 0, False
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace").strip()
            reason: str | None = "not UTF-8"
        else:
            reason = "too long" if overflow else None
        if not text and not overflow:
            return
        if self.kind is None:
            if reason is not None or not text[:8].lower().startswith(("http://", "https://")):
                hint = f" (Content-Type {self.content_type})" if self.content_type else ""
                raise SitemapParseError(
                    self.url, f"not a sitemap or feed: neither XML nor a list of URLs{hint}"
                )
            self.kind = "text"
        if reason is not None:
            self._take([RawEntry(None, None)], reason=reason)
        else:
            self._take([RawEntry(text, None)])

    # -- entries ---------------------------------------------------------------------------

    def _skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def _take(self, raws: list[RawEntry], *, reason: str | None = None) -> None:
        """Check raw entries and queue the good ones; enforces max_urls."""
        index = self.kind == "sitemapindex"
        most = self.limits.max_urls
        for raw in raws:
            self._listed += 1
            if self._listed > most:
                raise limit_error(self.url, "max_urls", most, "more entries in one sitemap")
            loc: str | None = None
            why = reason
            if why is None:
                if raw.loc_too_long:
                    why = "too long"
                elif raw.loc is None:
                    why = "missing loc"
                else:
                    loc, why = check_loc(raw.loc, self.hosts)
            if loc is None:
                self._skip(why or "missing loc")
                continue
            lastmod = None
            if raw.date is not None and raw.date.strip():
                lastmod = parse_lastmod(raw.date)
                if lastmod is None:
                    self._skip("bad lastmod")
            entry: Entry = (
                ChildSitemap(loc, lastmod, self.url)
                if index
                else SitemapURL(loc, lastmod, self.url)
            )
            self._out.append(entry)
            self.urls += 1
        raws.clear()

    # -- end -------------------------------------------------------------------------------

    def _finish(self) -> Iterator[Entry]:
        if self._gzip is None:
            self._gzip = False
            head, self._head = self._head, b""
            self._consume(head)
        if self._inflater is not None and not self._broken:
            yield from self._inflate()
            if not self._inflater.complete and not self._broken:
                self._break("the gzip stream ends early")
        if self._mode is None and not self._broken:
            self._consume_final()
        if self._mode is None:
            hint = f" (Content-Type {self.content_type})" if self.content_type else ""
            raise SitemapParseError(self.url, f"empty document{hint}")
        if self._mode == "xml" and not self._broken:
            self._feed_xml(b"", final=True)
        elif self._mode == "text" and not self._broken and (self._line_len or self._line_overflow):
            self._end_line()
        if self.kind is None:
            raise SitemapParseError(self.url, "no sitemap or feed found in the document")
        yield from self._drain()

    def _consume_final(self) -> None:
        data = self._sniff(b"", final=True)
        if self._mode == "xml":
            self._feed_xml(data)
        elif self._mode == "text":
            self._feed_text(data)


#: A text line longer than this (bytes) cannot hold a URL under MAX_LOC_CHARS; it is not kept.
_MAX_LINE_BYTES: Final = 4 * MAX_LOC_CHARS + 256


def parse_sitemap(
    data: bytes,
    sitemap_url: str,
    *,
    limits: Limits = Limits(),  # noqa: B008 - frozen, shared safely
    allowed_hosts: Collection[str] | None = None,
    content_type: str | None = None,
    gzipped: bool | None = None,
    strict: bool = False,
) -> ParsedSitemap:
    """Parse a whole body held in memory; same rules and errors as :class:`SitemapParser`.

    >>> body = b"<urlset><url><loc>https://example.com/a</loc></url></urlset>"
    >>> parsed = parse_sitemap(body, "https://example.com/sitemap.xml")
    >>> parsed.kind, [entry.loc for entry in parsed.entries]
    ('urlset', ['https://example.com/a'])
    """
    parser = SitemapParser(
        sitemap_url,
        limits=limits,
        allowed_hosts=allowed_hosts,
        content_type=content_type,
        gzipped=gzipped,
        strict=strict,
    )
    entries = parser.feed(data)
    entries += parser.close()
    assert parser.kind is not None  # close() raises otherwise
    error = str(parser.error) if parser.error is not None else None
    return ParsedSitemap(parser.kind, entries, dict(parser.skipped), parser.truncated, error)
