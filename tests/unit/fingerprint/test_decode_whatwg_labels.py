"""Charset labels a page names: only the WHATWG Encoding Standard's are honoured."""

from __future__ import annotations

import codecs

import pytest

from changewatch import fingerprint
from changewatch.fingerprint.decode import _CODECS, _ENCODING_LABELS, _codec, decode_html

#: Python codecs that are no page encoding, or that browsers do not know: each was used to
#: decode a page that named it before, several with surprising text (UTF-7 and the escape
#: codecs turn ASCII into other characters) or in quadratic time (punycode).
NOT_WHATWG = [
    "utf-7",
    "unicode_escape",
    "raw_unicode_escape",
    "idna",
    "punycode",
    "rot13",
    "hz",
    "undefined",
    "utf-32",
    "cp037",
    "mbcs",
    "palmos",
    "iso-2022-kr",  # WHATWG "replacement": absent here
    "hz-gb-2312",
]


@pytest.mark.parametrize("label", NOT_WHATWG)
def test_labels_outside_the_encoding_standard_are_absent(label: str) -> None:
    """A page naming a codec browsers do not know is read as if it named none (UTF-8)."""
    body = "<p>+AGEAYgBj- \\u0041 café</p>".encode()
    assert _codec(label) is None
    for data, content_type in [
        (f"<meta charset={label}>".encode() + body, None),
        (body, f"text/html; charset={label}"),
    ]:
        assert decode_html(data, content_type).endswith(body.decode()), (label, content_type)


def test_every_whatwg_label_names_an_ascii_compatible_text_codec() -> None:
    """Each label decodes markup unchanged (UTF-16 aside) and any bytes without raising."""
    assert len(_CODECS) == 213  # 217 labels, less 5 of "replacement", plus "latin-1"
    markup = b'<meta charset="x"><p class=a>Hi</p>'
    for label, name in _CODECS.items():
        assert codecs.lookup(name).name == name
        bytes(range(256)).decode(name, "replace")
        if not name.startswith("utf-16"):
            assert markup.decode(name) == markup.decode("ascii"), label


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("Latin1", "cp1252"),
        (" ISO-8859-1\t", "cp1252"),
        ("ansi_x3.4-1968", "cp1252"),
        ("latin-1", "cp1252"),
        ("iso-8859-9", "cp1254"),
        ("tis-620", "cp874"),
        ("x-mac-cyrillic", "mac-cyrillic"),
        ("iso-8859-8-i", "iso8859-8"),
        ("csgb2312", "gbk"),
        ("gb2312", "gb2312"),
        ("windows-31j", "cp932"),
        ("sjis", "shift_jis"),
        ("windows-949", "cp949"),
        ("unicode-1-1-utf-8", "utf-8"),
        ("utf-16", "utf-16-le"),
    ],
)
def test_label_maps_to_its_encoding(label: str, name: str) -> None:
    """WHATWG labels, matched after trimming and lowercasing, map to their encoding's codec."""
    assert _codec(label) == name


def test_labels_python_did_not_know_now_decode() -> None:
    """Labels browsers honour that Python has no name for decode with their encoding."""
    data = b"<meta charset=x-mac-cyrillic><p>" + "Привет".encode("mac-cyrillic")
    assert decode_html(data).endswith("<p>Привет")
    data = b"<meta charset=windows-874><p>" + "สวัสดี".encode("cp874")
    assert decode_html(data).endswith("<p>สวัสดี")


def test_table_lists_each_encoding_once() -> None:
    """No label is listed under two encodings (a later one would silently win)."""
    labels = [label for _, names in _ENCODING_LABELS.values() for label in names.split()]
    assert len(labels) == len(set(labels)) == 212


def test_punycode_labelled_page_is_not_decoded_as_punycode() -> None:
    """A 512 KB page labelled punycode is read as UTF-8 (Python's decoder: 16.5 s)."""
    page = b"<meta charset=punycode><p>-" + b"a" * 512_000
    assert fingerprint(page).text_length == 512_001
