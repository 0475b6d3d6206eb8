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
# WHATWG Encoding Standard §4.2 "Names and labels" (encodings.json of whatwg/encoding): every
# label a browser honours, by encoding, with the Python codec that decodes it. Any other label
# (utf-7, unicode_escape, idna, punycode, rot13, base64, undefined…) is unknown to browsers and
# treated as absent here: several of those codecs are no text encoding, and some cost
# quadratic time (a 512 KB page labelled punycode took 16.5 s).
_ENCODING_LABELS: dict[str, tuple[str, str]] = {
    # encoding: (Python codec, its labels)
    "utf-8": ("utf-8", "unicode-1-1-utf-8 utf-8 utf8"),
    "ibm866": ("cp866", "866 cp866 csibm866 ibm866"),
    "iso-8859-2": (
        "iso8859-2",
        "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2 latin2",
    ),
    "iso-8859-3": (
        "iso8859-3",
        "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3 latin3",
    ),
    "iso-8859-4": (
        "iso8859-4",
        "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4 latin4",
    ),
    "iso-8859-5": (
        "iso8859-5",
        "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 "
        "iso_8859-5:1988",
    ),
    "iso-8859-6": (
        "iso8859-6",
        "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 "
        "iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987",
    ),
    "iso-8859-7": (
        "iso8859-7",
        "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 "
        "iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    ),
    "iso-8859-8": (
        "iso8859-8",
        "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 "
        "iso88598 iso_8859-8 iso_8859-8:1988 visual",
    ),
    "iso-8859-8-i": ("iso8859-8", "csiso88598i iso-8859-8-i logical"),
    "iso-8859-10": (
        "iso8859-10",
        "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    ),
    "iso-8859-13": ("iso8859-13", "iso-8859-13 iso8859-13 iso885913"),
    "iso-8859-14": ("iso8859-14", "iso-8859-14 iso8859-14 iso885914"),
    "iso-8859-15": (
        "iso8859-15",
        "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
    ),
    "iso-8859-16": ("iso8859-16", "iso-8859-16"),
    "koi8-r": ("koi8-r", "cskoi8r koi koi8 koi8-r koi8_r"),
    "koi8-u": ("koi8-u", "koi8-u"),
    "macintosh": ("mac-roman", "csmacintosh mac macintosh x-mac-roman"),
    "windows-874": ("cp874", "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874"),
    "windows-1250": ("cp1250", "cp1250 windows-1250 x-cp1250"),
    "windows-1251": ("cp1251", "cp1251 windows-1251 x-cp1251"),
    "windows-1252": (
        "cp1252",
        "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 "
        "iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252",
    ),
    "windows-1253": ("cp1253", "cp1253 windows-1253 x-cp1253"),
    "windows-1254": (
        "cp1254",
        "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 "
        "iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254",
    ),
    "windows-1255": ("cp1255", "cp1255 windows-1255 x-cp1255"),
    "windows-1256": ("cp1256", "cp1256 windows-1256 x-cp1256"),
    "windows-1257": ("cp1257", "cp1257 windows-1257 x-cp1257"),
    "windows-1258": ("cp1258", "cp1258 windows-1258 x-cp1258"),
    "x-mac-cyrillic": ("mac-cyrillic", "x-mac-cyrillic x-mac-ukrainian"),
    "gbk": (
        "gbk",
        "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk",
    ),
    "gb18030": ("gb18030", "gb18030"),
    "big5": ("big5", "big5 big5-hkscs cn-big5 csbig5 x-x-big5"),
    "euc-jp": ("euc_jp", "cseucpkdfmtjapanese euc-jp x-euc-jp"),
    "iso-2022-jp": ("iso2022_jp", "csiso2022jp iso-2022-jp"),
    "shift_jis": (
        "shift_jis",
        "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    ),
    "euc-kr": (
        "euc_kr",
        "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 "
        "ksc_5601 windows-949",
    ),
    "utf-16be": ("utf-16-be", "utf-16be"),
    "utf-16le": ("utf-16-le", "utf-16 utf-16le"),
    # Browsers map bytes 0x80-0xFF to private-use code points; read as windows-1252 here as
    # before (text, not private-use noise).
    "x-user-defined": ("cp1252", "x-user-defined"),
    # "replacement" (hz-gb-2312, iso-2022-kr, iso-2022-cn): a browser shows one U+FFFD for the
    # whole page. Not listed, so such a label is absent and the page is read as UTF-8: its
    # ASCII markup and links still count.
}
# Labels whose Python codec differs from their encoding's: what these labels were read with
# before the table (Python knew them by name), kept so no page's text changes — GB2312 and
# GBK agree on GB2312's bytes but for two punctuation marks, and Big5-HKSCS, CP932 and CP949
# are supersets Python names apart.
_LABEL_CODECS = {
    **dict.fromkeys(("chinese", "csiso58gb231280", "gb2312", "iso-ir-58"), "gb2312"),
    "big5-hkscs": "big5hkscs",
    **dict.fromkeys(("ms932", "ms_kanji", "windows-31j"), "cp932"),
    "windows-949": "cp949",
}
#: Label → Python codec name, for every label of the Encoding Standard but "replacement"'s,
#: and "latin-1" (no WHATWG label, but read as windows-1252 before the table, a common slip).
_CODECS = {
    label: codecs.lookup(_LABEL_CODECS.get(label, codec)).name
    for codec, labels in _ENCODING_LABELS.values()
    for label in labels.split()
} | {"latin-1": "cp1252"}


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
    return html.decode(encoding or "utf-8", "replace")


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
    """The Python codec of a WHATWG encoding label, or None for any other label (absent).

    >>> _codec("Latin1"), _codec("punycode"), _codec("utf-7")
    ('cp1252', None, None)
    """
    # WHATWG "get an encoding": strip ASCII whitespace, ASCII lowercase.
    name = _CODECS.get(label.strip("\t\n\x0c\r ").lower())
    if meta and name is not None and name.startswith("utf-16"):
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
