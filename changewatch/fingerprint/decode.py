"""Page bytes to text: encoding sniffing and binary detection — pure functions, no I/O."""

from __future__ import annotations

import codecs
import re

__all__ = ["decode_html", "is_binary", "utf8_source"]

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# WHATWG HTML §13.2.3.2 "prescan a byte stream": a charset in the first 1024 bytes.
_META_CHARSET_RE = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE
)
_HEADER_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)
# WHATWG Encoding Standard: these labels mean windows-1252.
_LABEL_ALIASES = {
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "x-user-defined": "cp1252",
}


def decode_html(html: str | bytes, content_type: str | None = None) -> str:
    """Decode page bytes to text; never raises on any bytes.

    Order (WHATWG HTML encoding sniffing, simplified): byte order mark, the charset of the
    HTTP ``Content-Type`` header, a ``<meta charset>`` or ``http-equiv`` charset within the
    first 1024 bytes, else UTF-8. Undecodable bytes become U+FFFD.

    >>> decode_html(b'<meta charset="iso-8859-1"><p>caf\\xe9')
    '<meta charset="iso-8859-1"><p>café'
    """
    if isinstance(html, str):
        return html
    encoding, skip = _sniff_encoding(html, content_type)
    if skip:
        return html[skip:].decode(encoding or "utf-8", "replace")
    try:
        return html.decode(encoding or "utf-8", "replace")
    except (LookupError, UnicodeError):
        # A label naming a codec that is not a text encoding (base64, rot13, undefined, idna…).
        return html.decode("utf-8", "replace")


def _sniff_encoding(html: bytes, content_type: str | None) -> tuple[str | None, int]:
    """The codec :func:`decode_html` reads ``html`` with (None: UTF-8) and the length of the
    byte order mark it skips."""
    for bom, bom_encoding in _BOMS:
        if html.startswith(bom):
            return bom_encoding, len(bom)
    encoding: str | None = None
    if content_type:
        match = _HEADER_CHARSET_RE.search(content_type)
        if match:
            encoding = _codec(match.group(1))
    if encoding is None:
        match_bytes = _META_CHARSET_RE.search(html, 0, 1024)
        if match_bytes:
            encoding = _codec(match_bytes.group(1).decode("ascii", "replace"), meta=True)
    return encoding, 0


def utf8_source(html: str | bytes, content_type: str | None) -> bytes | None:
    """The UTF-8 bytes of ``decode_html(html, content_type)`` when they can be had without
    decoding: ``html`` itself (less its BOM) for valid UTF-8 bytes read as UTF-8, or a ``str``
    without lone surrogates, encoded. Else None.

    selectolax parses bytes as UTF-8 and encodes a ``str`` to UTF-8 first, so handing it these
    bytes builds the same tree without the decode and re-encode. Invalid UTF-8 is not handed
    over: lexbor's replacement of bad sequences differs from Python's ``"replace"`` (it drops
    a NUL inside a sequence before decoding it).

    >>> utf8_source(b"\\xef\\xbb\\xbf<p>caf\\xc3\\xa9", None), utf8_source(b"caf\\xe9", None)
    (b'<p>caf\\xc3\\xa9', None)
    """
    if isinstance(html, str):
        try:
            return html.encode("utf-8")
        except UnicodeEncodeError:
            return None
    encoding, skip = _sniff_encoding(html, content_type)
    if encoding not in (None, "utf-8"):
        return None
    body = html[skip:] if skip else html
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return body


def _codec(label: str, *, meta: bool = False) -> str | None:
    """Map a charset label to a Python codec name, or None when unknown."""
    label = label.strip().lower()
    label = _LABEL_ALIASES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if meta and name.startswith(("utf-16", "utf-32")):
        # WHATWG prescan: a <meta> readable as ASCII means the page is not UTF-16; use UTF-8.
        return "utf-8"
    return name


# File signatures ("magic numbers"): PDF 1.7 §7.5.2, PNG §5.2, JPEG/JFIF SOI, GIF89a, RIFF
# WebP container, ZIP APPNOTE §4.3.7 (and the empty/spanned archive markers), RFC 1952 gzip,
# ELF (System V ABI, e_ident).
_MAGIC = (
    b"\x7fELF",
    b"%PDF-",
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"PK\x07\x08",
    b"\x1f\x8b",
)
_BINARY_TYPES = ("image/", "audio/", "video/", "font/", "model/")
#: Bytes no text encoding of HTML uses outside UTF-16/32: C0 controls but for tab, line feed,
#: form feed, carriage return and escape (WHATWG MIME Sniffing §7.1, "binary data byte").
_BINARY_BYTES = (
    frozenset(range(0x00, 0x09))
    | {0x0B}
    | frozenset(range(0x0E, 0x1B))
    | frozenset(range(0x1C, 0x20))
)
#: The other bytes, and those below 0x80: deleted by ``bytes.translate`` to count the rest.
_NOT_BINARY_BYTES = bytes(b for b in range(256) if b not in _BINARY_BYTES)
_ASCII_BYTES = bytes(range(0x80))
#: How much of a body is sniffed for binary bytes, like WHATWG's resource header (1,445 bytes).
_SNIFF_BYTES = 1445
_UNICODE_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def _looks_binary(body: bytes) -> bool:
    """True when the first bytes hold binary data bytes and the body is not UTF-16/32 text.

    UTF-16 or UTF-32 text without a byte-order mark has NUL bytes at every second (or
    fourth) position; such a body is left to the decoder. A body that opens with markup
    (``<`` after any whitespace, WHATWG MIME Sniffing §7.1) may hold stray control bytes:
    it is binary only when they are at least 5 % of its first bytes and bytes above 0x7F at
    least 35 % (random bytes: ≈ 10 % and ≈ 50 %).

    >>> _looks_binary(b"<p>caf\\xe9</p>"), _looks_binary(bytes(range(256)))
    (False, True)
    >>> _looks_binary("<p>hi</p>".encode("utf-16-le"))
    False
    """
    head = body[:_SNIFF_BYTES]
    if head.startswith(_UNICODE_BOMS):
        return False
    controls = len(head.translate(None, _NOT_BINARY_BYTES))  # counted in C
    if not controls:
        return False
    if head.count(0) * 3 >= len(head) and (not any(head[0::2]) or not any(head[1::2])):
        return False  # NULs at every second byte: ASCII text in UTF-16 or UTF-32
    if head.lstrip(b"\t\n\x0c\r ")[:1] == b"<":
        # Markup with stray controls (a NUL in a page) is text; random bytes that happen to
        # open with "<" have ≈ 10 % controls and ≈ 50 % bytes above 0x7F.
        high = len(head.translate(None, _ASCII_BYTES))
        return controls * 20 >= len(head) and high * 100 >= 35 * len(head)
    return True


_TEXT_SUBTYPE_WORDS = ("html", "xml", "json", "javascript", "ecmascript", "text")


def is_binary(body: str | bytes, content_type: str | None = None) -> bool:
    """True for a body that is not HTML: by magic bytes (PDF, PNG, JPEG, GIF, WebP, ZIP, gzip,
    ELF), by binary data bytes in its first 1,445 bytes, or by a non-text media type.

    >>> is_binary(b"%PDF-1.7 ..."), is_binary(b"<p>hi</p>", "image/png; q=1")
    (True, True)
    >>> is_binary(b"<p>hi</p>", "text/html"), is_binary(b"<p>hi</p>", "application/xhtml+xml")
    (False, False)
    >>> is_binary(b"\\x00\\x01\\x02 not text"), is_binary(b"\\x7fELF\\x02\\x01\\x01")
    (True, True)
    """
    if isinstance(body, bytes) and (
        body.startswith(_MAGIC)
        or (body[:4] == b"RIFF" and body[8:12] == b"WEBP")
        or _looks_binary(body)
    ):
        return True
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    if media.startswith(_BINARY_TYPES):
        return True
    if media.startswith("application/"):
        return not any(word in media for word in _TEXT_SUBTYPE_WORDS)
    return False
