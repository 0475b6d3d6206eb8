"""decode_html, normalise, fingerprint, SimHash and hamming — on fixed strings and real pages."""

from __future__ import annotations

import codecs
import doctest
import gzip
import hashlib
import importlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
import unicodedata
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import shared_corpus
import simhash
from hypothesis import given, settings
from hypothesis import strategies as st

from changewatch import ChangeWatch, ConfigError
from changewatch.config import (
    fingerprint_policy_from_mapping,
    load_canon_policy,
    load_fingerprint_policy,
    load_settings,
)
from changewatch.fingerprint import (
    DEFAULT_POLICY,
    DEFAULT_VOLATILE_PATTERNS,
    DROPPED_TAGS,
    FINGERPRINT_VERSION,
    MAX_FEATURE_WEIGHT,
    Fingerprint,
    FingerprintPolicy,
    canonical_json,
    decode_html,
    feature_hash,
    fingerprint,
    fingerprint_record,
    hamming,
    is_binary,
    normalise,
    normalise_text,
    page_text,
    simhash_features,
    simhash_of_features,
    strip_volatile,
)
from changewatch.fingerprint import simhash as simhash_text
from changewatch.fingerprint.volatile import strip_volatile_text

SHARED_CORPUS = shared_corpus.ROOT
CORPUS = SHARED_CORPUS / "pages-readability"
MASK64 = (1 << 64) - 1


def _load_corpus() -> dict[str, bytes]:
    return {
        path.name.removesuffix(".html.gz"): gzip.decompress(path.read_bytes())
        for path in sorted(CORPUS.glob("*.html.gz"))
    }


@pytest.fixture(scope="module")
def corpus() -> dict[str, bytes]:
    """The 130 real pages of the readability test suite, as fetched bytes."""
    pages = _load_corpus()
    assert len(pages) == 130
    return pages


@pytest.fixture(scope="module")
def corpus_texts(corpus: dict[str, bytes]) -> dict[str, str]:
    """The normalised text of each corpus page (computed once per module)."""
    return {name: normalise(page) for name, page in corpus.items()}


@pytest.fixture(scope="module")
def corpus_fingerprints(corpus: dict[str, bytes]) -> dict[str, Fingerprint]:
    """The fingerprint of each corpus page as fetched (computed once per module)."""
    return {name: fingerprint(page) for name, page in corpus.items()}


# --- decode_html ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bom", "codec"),
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ],
)
def test_decode_bom_wins_and_is_removed(bom: bytes, codec: str) -> None:
    """A byte order mark picks the encoding, over header and meta, and is not in the text."""
    text = '<meta charset="iso-8859-2"><p>café – ☃</p>'
    data = bom + text.encode(codec)
    assert decode_html(data) == text
    assert decode_html(data, "text/html; charset=iso-8859-1") == text


@pytest.mark.parametrize(
    ("content_type", "data", "expected"),
    [
        ("text/html; charset=ISO-8859-1", b"caf\xe9", "café"),
        ("text/html; charset=iso-8859-1", b"\x80", "€"),
        ('text/html; charset="windows-1251"', "Привет".encode("cp1251"), "Привет"),
        ("text/html;charset='koi8-r'", "Привет".encode("koi8-r"), "Привет"),
        ("text/html; charset=utf-16le", "<p>hé</p>".encode("utf-16-le"), "<p>hé</p>"),
        ("text/html; charset=UTF-16BE", "<p>hé</p>".encode("utf-16-be"), "<p>hé</p>"),
        ("text/html; charset=shift_jis", "日本語".encode("shift_jis"), "日本語"),
    ],
)
def test_decode_content_type_charset(content_type: str, data: bytes, expected: str) -> None:
    """The HTTP Content-Type charset decodes the page (latin-1 labels mean windows-1252)."""
    assert decode_html(data, content_type) == expected


def test_decode_content_type_beats_meta() -> None:
    """With both, the Content-Type charset wins over a <meta charset>."""
    data = '<meta charset="iso-8859-1"><p>café</p>'.encode()
    assert decode_html(data, "text/html; charset=utf-8") == '<meta charset="iso-8859-1"><p>café</p>'
    assert "cafÃ©" in decode_html(data)


@pytest.mark.parametrize(
    ("head", "body", "expected"),
    [
        (b'<meta charset="windows-1252">', b"\x93quoted\x94", "“quoted”"),
        (b"<META CHARSET=ISO-8859-1>", b"caf\xe9", "café"),
        (b"<meta charset='koi8-r' />", "Привет".encode("koi8-r"), "Привет"),
        (
            b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">',
            "Привет".encode("cp1251"),
            "Привет",
        ),
        (
            b"<meta content='text/html;charset=euc-jp' http-equiv='content-type'>",
            "日本語".encode("euc-jp"),
            "日本語",
        ),
    ],
)
def test_decode_meta_charset_and_http_equiv(head: bytes, body: bytes, expected: str) -> None:
    """A <meta charset> or http-equiv Content-Type in the first 1024 bytes picks the encoding."""
    assert decode_html(head + body) == head.decode("ascii") + expected


def test_decode_meta_after_1024_bytes_ignored() -> None:
    """A <meta charset> beyond the prescan window is ignored (UTF-8 is used)."""
    data = b" " * 1024 + b'<meta charset="iso-8859-1">caf\xe9'
    assert decode_html(data).endswith("caf\ufffd")


@pytest.mark.parametrize("label", ["utf-16", "UTF-16LE", "utf-16be", "utf_16", "utf-32"])
def test_decode_meta_utf16_means_utf8(label: str) -> None:
    """A <meta> that names UTF-16/32 was read as ASCII, so the page is UTF-8 (WHATWG prescan)."""
    data = f'<meta charset="{label}"><p>café</p>'.encode()
    assert decode_html(data).endswith("<p>café</p>")


@pytest.mark.parametrize(
    "label",
    [
        "no-such-charset",
        "x-unknown",
        "base64",
        "hex",
        "rot13",
        "zlib",
        "bz2",
        "uu",
        "quopri",
        "undefined",
        "idna",
        "punycode",
    ],
)
def test_decode_unknown_or_non_text_label_falls_back_to_utf8(label: str) -> None:
    """An unknown label, or one naming a non-text codec, decodes as UTF-8 and never raises."""
    body = "<p>café</p>".encode()
    for data, content_type in [
        (f'<meta charset="{label}">'.encode() + body, None),
        (body, f"text/html; charset={label}"),
    ]:
        assert decode_html(data, content_type).endswith("<p>café</p>"), (label, content_type)
        assert fingerprint(data, content_type).text_length == len("café")


def test_decode_invalid_utf8_replaced() -> None:
    """Invalid UTF-8 becomes U+FFFD rather than raising."""
    assert decode_html(b"a\xffb\xc3") == "a\ufffdb\ufffd"
    assert decode_html(b"\xed\xa0\x80") == "\ufffd\ufffd\ufffd"


def test_decode_str_returned_unchanged() -> None:
    """A str page is already text: returned as is, charset hints ignored."""
    text = '<meta charset="iso-8859-1">café'
    assert decode_html(text, "text/html; charset=koi8-r") is text


# --- normalise ------------------------------------------------------------------------------


@pytest.mark.parametrize("tag", DROPPED_TAGS)
def test_normalise_drops_invisible_elements(tag: str) -> None:
    """The content of script, style, noscript, template, svg, iframe and object is dropped."""
    html = f"<body><p>before</p><{tag}>HIDDENWORD <a>more</a></{tag}><p>after</p></body>"
    assert normalise(html) == "before after"


def test_normalise_drops_comments_keeps_title() -> None:
    """Comments go, the <title> text stays (it is visible in the tab and in results)."""
    html = "<html><head><title>My Title</title></head><body><!-- a comment -->Text</body></html>"
    assert normalise(html) == "my title text"


def test_normalise_collapses_whitespace_and_separates_elements() -> None:
    """Whitespace runs become one space; adjacent elements do not glue their words."""
    html = "<p>  one \n\t two  </p><p>three</p><div>four</div>\u00a0\u2003five\n"
    assert normalise(html) == "one two three four five"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<p>Ｆｕｌｌ ＷＩＤＴＨ</p>", "full width"),
        ("<p>Straße</p>", "strasse"),
        ("<p>ﬁne Ⅻ ½</p>", "fine xii 1⁄2"),
        ("<p>ΣΊΣΥΦΟΣ</p>", "σίσυφοσ"),
        ("<p>Cafe\u0301</p>", "café"),
        ("<p>&amp; &lt;b&gt; &eacute;</p>", "& <b> é"),
    ],
)
def test_normalise_nfkc_casefold_entities(html: str, expected: str) -> None:
    """Text is NFKC-normalised and case-folded; entities are decoded."""
    assert normalise(html) == expected


def test_normalise_hidden_input_and_attribute_values_never_appear() -> None:
    """Hidden input values, attribute values and alt texts are not visible text."""
    html = (
        '<form><input type="hidden" name="csrf" value="SECRETTOKEN">'
        '<input type="text" value="PREFILLED"></form>'
        '<a href="/x" title="TOOLTIP">link</a><img alt="ALTTEXT" src="a.png">'
    )
    assert normalise(html) == "link"
    rotated = html.replace("SECRETTOKEN", "OTHERTOKEN").replace("ALTTEXT", "OTHERALT")
    assert fingerprint(rotated).content_sha256 == fingerprint(html).content_sha256


def test_normalise_uses_charset_hints() -> None:
    """normalise decodes bytes with the Content-Type charset like decode_html."""
    assert normalise(b"<p>CAF\xc9</p>", "text/html; charset=iso-8859-1") == "café"


# --- fingerprint ----------------------------------------------------------------------------


def test_casefold_never_makes_whitespace() -> None:
    """No code point case-folds to whitespace unless it is whitespace, and " " folds to
    itself — so normalise_text need not collapse whitespace again after case folding."""
    assert " ".casefold() == " "
    made = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if not chr(code).isspace() and any(c.isspace() for c in chr(code).casefold())
    ]
    assert made == []


def test_normalise_text_ellipsis_as_nfkc_says() -> None:
    """normalise_text's "…" shortcut is NFKC's own decomposition of U+2026, beside other
    compatibility characters and combining marks."""
    assert unicodedata.normalize("NFKD", "\u2026") == "..."
    for text in ["wait\u2026", "a\u2026\u0301 ﬁ\u2026", "\u2026\u00a8x", "Ｆｕｌｌ\u2026\u2122"]:
        folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
        assert normalise_text(text) == " ".join(folded.split())


def test_fingerprint_str_and_utf8_bytes_agree() -> None:
    """The same page as str or as UTF-8 bytes has the same hashes (raw included)."""
    page = "<html><title>Tëst</title><p>Some text – with “quotes” and ☃ snowmen.</p></html>"
    as_str, as_bytes = fingerprint(page), fingerprint(page.encode("utf-8"))
    assert as_str == as_bytes
    assert as_str.raw_sha256 == hashlib.sha256(page.encode("utf-8")).digest()


def test_fingerprint_same_text_other_encoding_same_content() -> None:
    """A page re-encoded in latin-1 (declared) keeps content_sha256; raw_sha256 changes."""
    page = '<meta charset="iso-8859-1"><p>Crème brûlée à la carte</p>'
    utf8 = fingerprint(page.replace("iso-8859-1", "utf-8").encode("utf-8"))
    latin1 = fingerprint(page.encode("latin-1"))
    assert utf8.content_sha256 == latin1.content_sha256
    assert utf8.simhash == latin1.simhash
    assert utf8.raw_sha256 != latin1.raw_sha256


@pytest.mark.parametrize("value", [None, 42, bytearray(b"<p>x</p>"), memoryview(b"x"), ["<p>"]])
def test_fingerprint_rejects_non_str_bytes(value: Any) -> None:
    """Only str and bytes are pages; anything else is a TypeError."""
    with pytest.raises(TypeError, match="str or bytes"):
        fingerprint(value)


@pytest.mark.parametrize("page", ["", b"", "<html></html>", "<script>x()</script><!-- c -->"])
def test_fingerprint_empty_page(page: str | bytes) -> None:
    """A page without visible text has simhash 0, text_length 0 and the SHA-256 of ''."""
    fp = fingerprint(page)
    assert fp.simhash == 0
    assert fp.text_length == 0
    assert fp.content_sha256 == hashlib.sha256(b"").digest()
    assert fp.version == FINGERPRINT_VERSION


def test_fingerprint_value_checks() -> None:
    """Fingerprint refuses digests that are not 32 bytes and simhashes outside 64 bits."""
    digest = bytes(32)
    with pytest.raises(ValueError, match="32 bytes"):
        Fingerprint(raw_sha256=bytes(31), content_sha256=digest, simhash=0, text_length=0)
    with pytest.raises(ValueError, match="64-bit"):
        Fingerprint(raw_sha256=digest, content_sha256=digest, simhash=1 << 64, text_length=0)
    with pytest.raises(ValueError, match="64-bit"):
        Fingerprint(raw_sha256=digest, content_sha256=digest, simhash=-1, text_length=0)


#: page → (normalised text, content_sha256 hex, simhash); pinned, persisted with every snapshot.
#: The texts and content hashes of the first three are unchanged from fingerprint_version 1
#: (nothing hidden, volatile or binary in them); the fourth pins version 2's rules. The
#: simhash values are version 3's (words hashed by a polynomial over their code points).
GOLDEN_FINGERPRINTS = {
    "<p>Hello, World</p>": (
        "hello, world",
        "09ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b",
        10395591711151995340,
    ),
    (
        "<html><head><title>Changewatch</title></head><body><h1>Release notes</h1>"
        "<p>The quick brown fox jumps over the lazy dog.</p></body></html>"
    ): (
        "changewatch release notes the quick brown fox jumps over the lazy dog.",
        "128d814e703f88884d2c42c4112fe04b20dc97c59809ddee30a08713bbfc7d24",
        17489762583459135935,
    ),
    "<p>Ｆｕｌｌ width Straße café</p><script>var x=1</script>": (
        "full width strasse café",
        "4f28a5ed89c11ef257c5a11d7081e6208780331463593ba93e76027c5805df2b",
        11437200663344205321,
    ),
    # Version 2: hidden tokens and volatile stamps are not content; version 4: a stamp after
    # a label word goes with what joins it ("at", the comma), the label stays.
    (
        "<p>Report</p><div hidden>draft</div>"
        "<p>Generated at 2026-03-01T12:00:00Z, 5 minutes ago</p>"
    ): (
        "report generated",
        "6110c8c9c9e11e38ac09be1d247cd36ddf11afc32397dda8a257a57320144729",
        4730363603031769831,
    ),
    # Version 4: chrome (nav, footer) is hashed apart; a time inside prose is content.
    (
        "<nav><a href='/'>Home</a></nav><main><p>The match ended at 4:29 of the final period"
        "</p></main><footer>Updated 5 minutes ago</footer>"
    ): (
        "the match ended at 4:29 of the final period",
        "9621e554375438930741c851a5120e126bbd0bbe305e7b396643f2858fd246ff",
        14643410433410635196,
    ),
}


@pytest.mark.parametrize(("page", "golden"), GOLDEN_FINGERPRINTS.items())
def test_fingerprint_golden_vectors(page: str, golden: tuple[str, str, int]) -> None:
    """Normalised text, content_sha256 and simhash of fixed pages are pinned."""
    text, content_hex, simhash_value = golden
    fp = fingerprint(page)
    assert normalise(page) == text
    assert fp.content_sha256.hex() == content_hex
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == content_hex
    assert fp.simhash == simhash_value
    assert fp.text_length == len(text)


@pytest.mark.corpus
def test_simhash_stable_across_processes(corpus_fingerprints: dict[str, Fingerprint]) -> None:
    """Another interpreter with another PYTHONHASHSEED computes the same simhashes."""
    names = ["001", "aclu", "wikipedia", "nytimes-1"]
    code = (
        "import gzip, json, sys\n"
        "from changewatch.fingerprint import fingerprint\n"
        "out = [fingerprint(p).simhash for p in json.loads(sys.stdin.read())]\n"
        "pages = [gzip.decompress(open(f, 'rb').read()) for f in sys.argv[1:]]\n"
        "out += [fingerprint(page).simhash for page in pages]\n"
        "print(json.dumps(out))\n"
    )
    files = [str(CORPUS / f"{name}.html.gz") for name in names]
    expected = [fp[2] for fp in GOLDEN_FINGERPRINTS.values()]
    expected += [corpus_fingerprints[name].simhash for name in names]
    for seed in ("0", "12345"):
        result = subprocess.run(
            [sys.executable, "-c", code, *files],
            input=json.dumps(list(GOLDEN_FINGERPRINTS)),
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        assert json.loads(result.stdout) == expected


# --- SimHash and its features ---------------------------------------------------------------


def test_simhash_features_shingles_and_short_texts() -> None:
    """Features are word 2-shingles with counts; a one-word text's feature is the word."""
    assert simhash_features("") == {}
    assert simhash_features("one") == {"one": 1}
    assert simhash_features("one two") == {"one two": 1}
    assert simhash_features("a b a b c") == {"a b": 2, "b a": 1, "b c": 1}
    assert simhash_features("hello, world. again!") == {"hello world": 1, "world again": 1}


def test_simhash_feature_weight_capped() -> None:
    """A feature repeated more than MAX_FEATURE_WEIGHT times weighs MAX_FEATURE_WEIGHT."""
    features = simhash_features("a b c " * 1000)
    assert features["a b"] == MAX_FEATURE_WEIGHT == 255
    assert max(features.values()) == 255


@pytest.mark.parametrize("repeats", [1, 254, 255, 256, 257, 1000])
@pytest.mark.parametrize("distinct", [0, 3, 300, 5000])
def test_vectorised_simhash_weights_around_the_cap(repeats: int, distinct: int) -> None:
    """simhash(text) equals the feature definition when a shingle repeats up to, at and past
    MAX_FEATURE_WEIGHT times, beside few or many distinct shingles (both counting paths)."""
    text = "a b " * repeats + " ".join(f"w{i}" for i in range(distinct))
    assert simhash_text(text) == simhash_of_features(simhash_features(text))


@pytest.mark.parametrize(
    "text",
    [
        "x" * 1000,
        "ab " * 200 + "y" * 700 + " z",
        " " * 255 + "w" + " é" * 300 + " " + "\U0001d400" * 513,
        " ".join("w" * n for n in range(1, 90)),
        " ".join(f"w{i}" for i in range(40_000)),
    ],
    ids=["one-long-word", "long-word-mid-text", "astral-past-blocks", "many-lengths", "long"],
)
def test_vectorised_simhash_long_words_and_texts(text: str) -> None:
    """Words longer than, and word starts past, the 256-character blocks of the word-hash
    powers, and a text longer than the cached power tables, hash as the feature definition
    says."""
    assert simhash_text(text) == simhash_of_features(simhash_features(text))


@pytest.mark.corpus
def test_simhash_equals_simhash_package_on_corpus(
    corpus_texts: dict[str, str], corpus_fingerprints: dict[str, Fingerprint]
) -> None:
    """On every real page, our vectorised SimHash equals simhash.Simhash's for the features."""
    assert len(corpus_texts) == 130
    for name, text in corpus_texts.items():
        features = simhash_features(text)
        assert features, name
        assert max(features.values()) <= MAX_FEATURE_WEIGHT
        expected = simhash.Simhash(list(features.items()), hashfunc=feature_hash).value
        assert simhash_of_features(features) == expected, name
        assert corpus_fingerprints[name].simhash == expected, name
        assert corpus_fingerprints[name].text_length == len(text), name


def test_word_characters_are_what_the_feature_regex_calls_words() -> None:
    """The numpy word mask agrees with ``\\w`` (str.isalnum() or "_") on every code point."""
    simhash_module = importlib.import_module("changewatch.fingerprint.simhash64")
    codes = np.arange(0x110000, dtype=np.uint32)
    mask = simhash_module._word_mask(codes)
    word = re.compile(r"\w")
    differing = [c for c in range(0x110000) if bool(mask[c]) != (word.match(chr(c)) is not None)]
    assert differing == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=300))
def test_vectorised_simhash_equals_the_feature_definition(text: str) -> None:
    """simhash(text) — words hashed in numpy — equals SimHash of simhash_features(text)
    hashed one feature at a time by feature_hash, for any text (astral planes included)."""
    assert simhash_text(text) == simhash_of_features(simhash_features(text))


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=20),
        st.integers(min_value=1, max_value=MAX_FEATURE_WEIGHT),
        max_size=40,
    )
)
def test_simhash_equals_simhash_package_on_any_features(features: dict[str, int]) -> None:
    """For any weighted features (weights 1..255) our SimHash equals the package's."""
    ours = simhash_of_features(features)
    assert 0 <= ours <= MASK64
    if features:
        assert ours == simhash.Simhash(list(features.items()), hashfunc=feature_hash).value
    else:
        assert ours == 0


def test_feature_hash_is_pinned() -> None:
    """The per-feature hash is pinned (it keys stored simhashes): a polynomial hash per word,
    combined."""
    assert feature_hash(b"a b c").hex() == "89ef75c6e984d0e1"
    assert feature_hash(b"word").hex() == "71bca68a81cfe333"
    assert len(feature_hash(b"")) == 8
    assert feature_hash(b"a b c") != feature_hash(b"c b a")


# --- hamming and normalise_text properties --------------------------------------------------

_u64 = st.integers(min_value=0, max_value=MASK64)


@settings(max_examples=200)
@given(_u64, _u64)
def test_hamming_properties(a: int, b: int) -> None:
    """hamming is symmetric, 0 on itself, within 0..64 and counts the differing bits."""
    assert hamming(a, b) == hamming(b, a)
    assert hamming(a, a) == 0
    assert 0 <= hamming(a, b) <= 64
    assert hamming(a, b) == bin(a ^ b).count("1")
    assert (hamming(a, b) == 0) == (a == b)


def test_hamming_examples() -> None:
    """Pinned values: all bits, one bit, the top bit."""
    assert hamming(0, MASK64) == 64
    assert hamming(0b1011, 0b0001) == 2
    assert hamming(1 << 63, 0) == 1


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_normalise_text_idempotent(text: str) -> None:
    """normalise_text(normalise_text(t)) == normalise_text(t), with no edge whitespace."""
    once = normalise_text(text)
    assert normalise_text(once) == once
    assert once == once.strip()
    assert "  " not in once


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from([None, "text/html", "text/html; charset=koi8-r"]))
def test_fingerprint_never_crashes_on_bytes(data: bytes, content_type: str | None) -> None:
    """Any bytes fingerprint without raising, to a well-formed Fingerprint."""
    fp = fingerprint(data, content_type)
    assert len(fp.content_sha256) == 32
    assert 0 <= fp.simhash <= MASK64
    assert fp.raw_sha256 == hashlib.sha256(data).digest()


@settings(max_examples=100, deadline=None)
@given(
    st.binary(max_size=300),
    st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20),
)
def test_fingerprint_never_crashes_on_any_meta_label(data: bytes, label: str) -> None:
    """Whatever a page's <meta charset> says, decoding and fingerprinting do not raise."""
    page = b"<meta charset=" + label.encode("ascii") + b">" + data
    fingerprint(page)
    fingerprint(data, f"text/html; charset={label}")


# --- real pages: noise versus edits ---------------------------------------------------------

_SCRIPT_RE = re.compile(rb"(<script\b[^>]*>)(.*?)(</script\s*>)", re.IGNORECASE | re.DOTALL)
_BODY_RE = re.compile(rb"<body\b[^>]*>", re.IGNORECASE)
_BETWEEN_TAGS_RE = re.compile(rb">[ \t\r\n]+<")
_HIDDEN_VALUE_RE = re.compile(
    rb"""(<input\b[^>]*\btype\s*=\s*["']?hidden["']?[^>]*\bvalue\s*=\s*)("[^"]*"|'[^']*')""",
    re.IGNORECASE,
)
_PARAGRAPH_RUN_RE = re.compile(rb"<p\b[^>]*>([^<]{60,})", re.IGNORECASE)
_WORD_RE = re.compile(rb"\b[A-Za-z]{5,}\b")


def _insert_after_body(page: bytes, extra: bytes) -> bytes:
    match = _BODY_RE.search(page)
    at = match.end() if match else 0
    return page[:at] + extra + page[at:]


def _with_noise(page: bytes, token: bytes) -> bytes:
    """The page with an inline script and a hidden input whose values are ``token``."""
    extra = b'<script>var cwRender = "%s";</script><input type="hidden" name="cw" value="%s">'
    return _insert_after_body(page, extra % (token, token))


def _rerender(page: bytes) -> bytes:
    """A noise-only re-render: other script bodies, a comment, whitespace, hidden values."""
    page = _with_noise(page, b"second-render")
    page = _SCRIPT_RE.sub(
        lambda m: (
            m.group(1) + m.group(2) + (b"/* r2 */" if m.group(2).strip() else b"") + m.group(3)
        ),
        page,
    )
    page = _insert_after_body(page, b"<!-- rendered at 2026-03-01T12:00:00Z by node-7 -->")
    page = _BETWEEN_TAGS_RE.sub(b">\n \t <", page)
    return _HIDDEN_VALUE_RE.sub(lambda m: m.group(1) + b'"rotated-token"', page)


def _one_word_edit(page: bytes) -> bytes | None:
    """The page with one word of its first long paragraph replaced, or None if it has none."""
    match = _PARAGRAPH_RUN_RE.search(page)
    if match is None:
        return None
    words = list(_WORD_RE.finditer(match.group(1)))
    if not words:
        return None
    word = words[len(words) // 2]
    start, end = match.start(1) + word.start(), match.start(1) + word.end()
    return page[:start] + b"Xylophone" + page[end:]


@pytest.mark.corpus
def test_noise_only_rerender_keeps_content_hash(
    corpus: dict[str, bytes], corpus_fingerprints: dict[str, Fingerprint]
) -> None:
    """On every real page, script/comment/whitespace/hidden-value changes keep content_sha256."""
    rewritten_scripts = rotated_hidden = 0
    for name, page in corpus.items():
        second = _rerender(page)
        rewritten_scripts += second.count(b"/* r2 */") - 1
        rotated_hidden += second.count(b'"rotated-token"') - 1
        before, after = corpus_fingerprints[name], fingerprint(second)
        assert before.raw_sha256 != after.raw_sha256, name
        assert before.content_sha256 == after.content_sha256, name
        assert before.simhash == after.simhash, name
    # The edits really touched the pages' own scripts and hidden inputs, not only ours.
    assert rewritten_scripts >= 500
    assert rotated_hidden >= 20


@pytest.mark.corpus
def test_one_word_edit_changes_content_hash_and_few_simhash_bits(
    corpus: dict[str, bytes], corpus_fingerprints: dict[str, Fingerprint]
) -> None:
    """A one-word body edit changes content_sha256 and moves the SimHash by only a few bits.

    Seen on this corpus (100 pages edited): median 1 bit, 99 of 100 within 10 bits, max 15.
    """
    distances = []
    for name, page in corpus.items():
        edited = _one_word_edit(page)
        if edited is None:
            continue
        before, after = corpus_fingerprints[name], fingerprint(edited)
        if before.content_sha256 == after.content_sha256:
            # The paragraph sat inside a script, template or noscript: not visible text.
            continue
        distances.append(hamming(before.simhash, after.simhash))
    assert len(distances) >= 90
    assert statistics.median(distances) <= 3
    assert sum(d <= 10 for d in distances) >= 0.95 * len(distances)
    assert max(distances) <= 20


# --- fingerprint_version 2: hidden elements, boilerplate, volatile stamps, policies ----------


def test_fingerprint_module_doctests() -> None:
    """The doctest examples of the fingerprint, SimHash and record modules hold."""
    attempted = 0
    for name in (
        "changewatch.fingerprint.decode",
        "changewatch.fingerprint.text",
        "changewatch.fingerprint.page",
        "changewatch.fingerprint.simhash64",
        "changewatch.fingerprint.records",
    ):
        result = doctest.testmod(importlib.import_module(name))
        assert result.failed == 0, name
        attempted += result.attempted
    assert attempted >= 20


def test_fingerprint_version_is_4() -> None:
    """Content now covers the main region only (regions, label clocks): version 4 is stored."""
    assert FINGERPRINT_VERSION == 4
    assert fingerprint("<p>x</p>").version == 4


@pytest.mark.parametrize(
    "hidden",
    [
        "<div hidden>HIDDENWORD</div>",
        '<div hidden="until-found">HIDDENWORD</div>',
        '<span aria-hidden="true">HIDDENWORD</span>',
        '<span aria-hidden="TRUE"><b>HIDDENWORD</b></span>',
        '<div hidden><p aria-hidden="true">HIDDENWORD</p>HIDDENWORD</div>',
        '<input type="HIDDEN" value="HIDDENWORD">',
    ],
)
def test_normalise_drops_hidden_elements(hidden: str) -> None:
    """hidden, aria-hidden="true" (any case, nested) and hidden inputs carry no text."""
    assert normalise(f"<p>before</p>{hidden}<p>after</p>") == "before after"


def test_normalise_keeps_aria_hidden_false() -> None:
    """aria-hidden="false" is visible text."""
    assert normalise('<p aria-hidden="false">shown</p>') == "shown"


BOILERPLATE_PAGE = (
    "<header>Site Name</header><nav>Home About</nav>"
    "<main><header>Article Head</header><p>Body text</p></main>"
    "<article><header>Card Head</header></article><section><header>Sec Head</header></section>"
    "<aside>Related</aside><footer>Copyright</footer>"
)


def test_regions_split_content_from_chrome_and_boilerplate_leaves_chrome_out() -> None:
    """Page-level header, nav, aside and footer are chrome; a header inside main or article is
    content; boilerplate=True leaves the chrome out of the chrome text too."""
    parts = page_text(BOILERPLATE_PAGE)
    assert parts.content == "article head body text card head"
    assert parts.chrome == "site name home about sec head related copyright"
    assert normalise(BOILERPLATE_PAGE) == parts.content
    dropped = page_text(BOILERPLATE_PAGE, policy=FingerprintPolicy(boilerplate=True))
    assert (dropped.content, dropped.chrome) == (parts.content, "")
    flat = normalise(BOILERPLATE_PAGE, policy=FingerprintPolicy(regions=False))
    assert flat == (
        "site name home about article head body text card head sec head related copyright"
    )


def test_regions_on_deeply_nested_headers() -> None:
    """2,000 nested page-level headers are chrome beside a main region; without a main
    marker the headers outweigh the rest, the landmarks are not trusted, all is content."""
    headers = "<header>h" * 2000 + "</header>" * 2000
    parts = page_text(headers + "<main><p>kept</p></main>")
    assert parts.content == "kept"
    assert parts.chrome == " ".join(["h"] * 2000)
    flat = page_text(headers + "<p>kept</p>")
    assert (flat.content, flat.chrome) == (" ".join(["h"] * 2000) + " kept", "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("generated at 2026-03-01T12:00:00Z", "generated"),
        ("built 2026-03-01 12:00:00.123+01:00 ok", "built ok"),
        ("rendered mon, 01 mar 2026 12:00:00 gmt by x", "rendered by x"),
        ("on march 1, 2026 at 9:05 pm the end", "the end"),
        ("at 1st march 2026 09:05 here", "here"),
        ("at 01/03/2026 12:00 here", "here"),
        ("time 23:59:59 utc now", "time now"),
        ("updated 5 minutes ago by", "updated by"),
        ("updated an hour ago", "updated"),
        ("posted 3 days ago", "posted"),
        ("published 2026-03-01 and 1 march 2026", "published 2026-03-01 and 1 march 2026"),
        ("3 apples 20 pears 2026", "3 apples 20 pears 2026"),
        ("version 1.2.3", "version 1.2.3"),
    ],
)
def test_volatile_defaults(text: str, expected: str) -> None:
    """Label date-times, times of day and relative ages go (after a label word, or a block
    that is mostly the stamp); dates alone and numbers stay."""
    assert normalise(f"<p>{text}</p>") == expected


def test_volatile_patterns_configurable() -> None:
    """volatile=() keeps stamps; a custom pattern removes what it matches."""
    page = "<p>Build 7f3a9c at 12:00</p>"
    assert normalise(page, policy=FingerprintPolicy(volatile=())) == "build 7f3a9c at 12:00"
    custom = FingerprintPolicy(volatile=(r"\bbuild [0-9a-f]+\b",))
    assert normalise(page, policy=custom) == "at 12:00"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["12:00", "2026-03-01", "t", " ", "5", "minutes", "ago", "pm", "mar", "1,", "utc", "a"]
        ),
        max_size=30,
    )
)
def test_strip_volatile_idempotent(parts: list[str]) -> None:
    """strip_volatile reaches a fixed point: applying it twice equals applying it once."""
    once = strip_volatile(normalise_text(" ".join(parts)))
    assert strip_volatile(once) == once
    assert normalise_text(once) == once


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_normalise_idempotent_on_text(text: str) -> None:
    """normalise of text without markup characters is a fixed point."""
    text = text.replace("<", " ").replace("&", " ")
    once = normalise(text)
    assert normalise(once) == once


def test_policy_ignore_and_main_selectors() -> None:
    """ignore drops matching elements; main keeps only the first match's text."""
    page = '<div class="ad">Buy now</div><div id="c"><p>Story</p><p class="ad">x</p></div>'
    assert normalise(page, policy=FingerprintPolicy(ignore=(".ad",))) == "story"
    assert normalise(page, policy=FingerprintPolicy(main="#c")) == "story x"
    assert page_text(page, policy=FingerprintPolicy(main="#c")).chrome == "buy now"
    assert normalise(page, policy=FingerprintPolicy(main="#missing")) == "buy now story x"


def test_policy_structural_ignore_sees_the_tree_without_dropped_tags_with_hidden() -> None:
    """Ignored selectors match the tree left after dropped tags go, hidden elements still in."""
    first = FingerprintPolicy(ignore=("p:first-child",))
    assert normalise("<div><script>x</script><p>one</p><p>two</p></div>", policy=first) == "two"
    assert normalise("<div><p hidden>a</p><p>b</p></div>", policy=first) == "b"
    after_svg = FingerprintPolicy(ignore=("svg + p",))
    assert normalise("<div><svg></svg><p>one</p><p>two</p></div>", policy=after_svg) == "one two"


def test_policy_per_host() -> None:
    """Host entries apply to their host ('.domain': and its subdomains) and nowhere else."""
    policy = FingerprintPolicy(
        hosts={
            "example.com": FingerprintPolicy(ignore=(".ad",)),
            ".example.org": FingerprintPolicy(main="#story"),
        }
    )
    page = '<p class="ad">Ad</p><div id="story">Text</div>'
    assert normalise(page, policy=policy, host="example.com") == "text"
    assert normalise(page, policy=policy, host="www.example.org") == "text"
    assert normalise(page, policy=policy, host="EXAMPLE.ORG") == "text"
    assert normalise(page, policy=policy, host="other.net") == "ad text"
    assert normalise(page, policy=policy) == "ad text"
    rotated = page.replace(">Ad<", ">Other ad<")
    here = fingerprint(rotated, policy=policy, host="example.com")
    assert (
        here.content_sha256 == fingerprint(page, policy=policy, host="example.com").content_sha256
    )
    elsewhere = fingerprint(rotated, policy=policy, host="other.net")
    assert elsewhere.content_sha256 != fingerprint(page, policy=policy).content_sha256


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ignore": ("div[[",)}, "bad CSS selector 'div\\[\\['"),
        ({"main": "::nope("}, "bad CSS selector"),
        ({"volatile": ("(unclosed",)}, "bad volatile pattern '\\(unclosed'"),
        ({"ignore": "div"}, "ignore must be a list of strings"),
        ({"volatile": (1,)}, "volatile must be a list of strings"),
        ({"boilerplate": "yes"}, "boilerplate must be true or false"),
        ({"main": 3}, "main must be a string"),
        ({"hosts": {"a.com": "x"}}, "hosts\\['a.com'\\] must be a policy"),
    ],
)
def test_policy_bad_values(kwargs: dict[str, Any], message: str) -> None:
    """A bad selector, pattern or type raises ConfigError naming it."""
    with pytest.raises(ConfigError, match=message):
        FingerprintPolicy(**kwargs)


# --- binary bodies ---------------------------------------------------------------------------

BINARY_BODIES = {
    "pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj",
    "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF",
    "gif87": b"GIF87a\x01\x00",
    "gif89": b"GIF89a\x01\x00",
    "webp": b"RIFF\x24\x00\x00\x00WEBPVP8 ",
    "zip": b"PK\x03\x04\x14\x00",
    "gzip": gzip.compress(b"<p>hello</p>"),
}


@pytest.mark.parametrize("body", BINARY_BODIES.values(), ids=BINARY_BODIES.keys())
def test_binary_by_magic_bytes(body: bytes) -> None:
    """Magic bytes make a body binary: raw SHA-256 as content, simhash 0, no text, binary."""
    fp = fingerprint(body, "text/html")
    assert fp.binary
    assert fp.content_sha256 == fp.raw_sha256 == hashlib.sha256(body).digest()
    assert (fp.simhash, fp.text_length, fp.version) == (0, 0, FINGERPRINT_VERSION)
    assert normalise(body) == ""


@pytest.mark.parametrize(
    ("content_type", "binary"),
    [
        ("application/pdf", True),
        ("image/svg+xml", True),
        ("IMAGE/PNG; q=1", True),
        ("video/mp4", True),
        ("application/octet-stream", True),
        ("application/zip", True),
        ("text/html; charset=utf-8", False),
        ("text/plain", False),
        ("application/xhtml+xml", False),
        ("application/json", False),
        ("", False),
        (None, False),
    ],
)
def test_binary_by_content_type(content_type: str | None, binary: bool) -> None:
    """A non-text media type makes a body binary, str bodies included; text types do not."""
    assert is_binary(b"<p>hello</p>", content_type) is binary
    assert fingerprint("<p>hello</p>", content_type).binary is binary


def test_html_is_not_binary_and_binary_field_defaults_false() -> None:
    """An HTML page is not binary; Fingerprint(binary=...) defaults to False."""
    assert not fingerprint(b"<!doctype html><p>PK</p>").binary
    digest = bytes(32)
    assert Fingerprint(digest, digest, 0, 0).binary is False


# --- bad input: each has a defined result -----------------------------------------------------


def test_bad_input_empty_document() -> None:
    """An empty document: no text, simhash 0, content hash of ''."""
    for page in ("", b"", b"\xef\xbb\xbf", "<!doctype html>"):
        fp = fingerprint(page)
        assert (fp.text_length, fp.simhash, fp.binary) == (0, 0, False)
        assert fp.content_sha256 == hashlib.sha256(b"").digest()


@pytest.mark.parametrize("tag", ["div", "span", "header", "table", "p", "b"])
def test_bad_input_100000_deep_nesting_bounded_time(tag: str) -> None:
    """100,000 nested elements: the text is found, in bounded time (tag-stripping fallback).
    Timed in this process's CPU time (about 2 s for table and p: the model reads every tag),
    so a loaded machine's other processes do not count."""
    page = f"<{tag}>" * 100_000 + "deep text" + f"</{tag}>" * 100_000
    start = time.process_time()
    assert normalise(page) == "deep text"
    assert normalise(page, policy=FingerprintPolicy(boilerplate=True)) == "deep text"
    assert time.process_time() - start < 5


def test_bad_input_deep_fallback_drops_scripts_and_comments() -> None:
    """The deep-nesting fallback still drops scripts, styles and comments, decodes entities."""
    page = "<div>" * 5000 + "<script>var x='<b>'</script><!-- c -->a &amp; b<style>p{}</style>"
    assert normalise(page) == "a & b"


def test_bad_input_unclosed_tags() -> None:
    """Unclosed tags are closed by the HTML parser; all text is kept."""
    assert normalise("<div><p>one<p>two<b>three<i>four") == "one two three four"
    assert normalise("<p>text<script>never closed") == "text"
    assert normalise("<p>a</p><!-- unterminated comment <p>b</p>") == "a"


def test_bad_input_nul_bytes() -> None:
    """NUL bytes never crash; they are not visible text."""
    fp = fingerprint(b"<p>a\x00b</p>\x00<p>c</p>")
    assert fp.text_length > 0
    assert "\x00" not in normalise(b"<p>a\x00b</p>\x00<p>c</p>")


def test_bad_input_invalid_utf8() -> None:
    """Invalid UTF-8 becomes U+FFFD (case-folded text keeps it); no exception."""
    assert normalise(b"<p>caf\xe9 \xff ok</p>") == "caf\ufffd \ufffd ok"


def test_bad_input_invalid_utf8_read_as_python_replaces_it() -> None:
    """Invalid UTF-8 reads as Python's "replace" decoding, also where lexbor would differ
    (a NUL inside a multi-byte sequence), and UTF-8 bytes, BOM or not, read as their text."""
    page = b"<p>a\xc3\x00\x80b \xe2\x82\x00\xac</p>"
    assert normalise(page) == "a\ufffd\ufffdb \ufffd\ufffd"
    assert normalise(page) == normalise(page.decode("utf-8", "replace"))
    text = "<p>Grüße 12:00</p>"
    for body in (text.encode(), codecs.BOM_UTF8 + text.encode()):
        assert fingerprint(body).content_sha256 == fingerprint(text).content_sha256


@pytest.mark.parametrize(
    ("page", "golden"),
    [
        (
            codecs.BOM_UTF8 + "<p>Grüße 12:00</p>".encode(),
            (
                "8ec319e7d07e891dafda3f617e3443b418e57c41b364fab0ba1735be47d8b336",
                2305852085570642562,
                12,
            ),
        ),
        (
            b"<p>a\xc3\x00\x80b \xe2\x82\x00\xac</p>",
            (
                "2d6c41d4bc89cb946c2ab08ff6c3132b48edaeb9c7e8525815b088614df5e687",
                2122198374514065678,
                7,
            ),
        ),
        (
            b'<meta charset="windows-1252"><p>caf\xe9 \x93q\x94</p>',
            (
                "c779f64ffbb655a5ad6a2f68fbbe2ce58c7a911a449e483e515913c44a1fab29",
                3121265225674326134,
                8,
            ),
        ),
    ],
    ids=["utf8-bom", "invalid-utf8-nul", "meta-windows-1252"],
)
def test_fingerprint_golden_vectors_of_byte_pages(
    page: bytes, golden: tuple[str, int, int]
) -> None:
    """content_sha256, simhash and text_length of fixed byte pages (BOM, bad UTF-8, a legacy
    charset) are pinned."""
    fp = fingerprint(page)
    assert (fp.content_sha256.hex(), fp.simhash, fp.text_length) == golden


def test_bad_input_utf16_with_bom() -> None:
    """UTF-16 with a BOM decodes like the same page in UTF-8 (same content hash)."""
    page = "<p>Grüße – ☃</p>"
    utf16 = fingerprint(codecs.BOM_UTF16_LE + page.encode("utf-16-le"))
    assert utf16.content_sha256 == fingerprint(page.encode("utf-8")).content_sha256
    assert not utf16.binary


# --- fingerprint_record -----------------------------------------------------------------------


def test_canonical_json_form() -> None:
    """Sorted keys, no spaces, NFC strings, normalised numbers, nested containers."""
    record = {
        "z": {"b": [1, 2.5, {"y": None, "x": True}], "a": ()},
        "a": "e\u0301",
        "n": [0.1, 1e21, 1e-7, 123.0, -0.0, 10**30, Decimal("1.50"), Decimal("-1E+3"), 1e20],
    }
    assert canonical_json(record) == (
        '{"a":"\u00e9","n":[0.1,1e+21,1e-7,123,0,1000000000000000000000000000000,1.5,-1000,'
        '100000000000000000000],"z":{"a":[],"b":[1,2.5,{"x":true,"y":null}]}}'
    ).encode("utf-8")


def test_fingerprint_record_equalities() -> None:
    """Key order, int vs float vs Decimal of one value and NFC/NFD spelling do not matter."""
    assert fingerprint_record({"a": 1, "b": "caf\u00e9"}) == fingerprint_record(
        {"b": "cafe\u0301", "a": 1.0}
    )
    assert fingerprint_record({"p": Decimal("0.10")}) == fingerprint_record({"p": 0.1})
    assert fingerprint_record({"a": 1}) != fingerprint_record({"a": "1"})
    assert fingerprint_record({"a": [1, 2]}) != fingerprint_record({"a": [2, 1]})
    assert len(fingerprint_record({})) == 32
    assert fingerprint_record({}) == hashlib.sha256(b"{}").digest()


@pytest.mark.parametrize(
    ("record", "error", "message"),
    [
        ({"a": {"b": [1, {1, 2}]}}, TypeError, r"\$\.a\.b\[1\]: cannot fingerprint a set"),
        ({"a": b"bytes"}, TypeError, r"\$\.a: cannot fingerprint a bytes"),
        ({"a": [object()]}, TypeError, r"\$\.a\[0\]: cannot fingerprint a object"),
        ({"a": {1: "x"}}, TypeError, r"\$\.a: keys must be str"),
        ({"a": float("nan")}, ValueError, r"\$\.a: nan is not a finite number"),
        ({"a": [float("-inf")]}, ValueError, r"\$\.a\[0\]: -inf is not a finite number"),
        ({"a": Decimal("Infinity")}, ValueError, r"\$\.a: .* is not a finite number"),
        ({"e\u0301": 1, "\u00e9": 2}, ValueError, "equal after NFC"),
    ],
)
def test_fingerprint_record_refuses(record: dict[Any, Any], error: type, message: str) -> None:
    """Unknown types, non-str keys, non-finite numbers and NFC-colliding keys are refused,
    naming the path of the value."""
    with pytest.raises(error, match=message):
        fingerprint_record(record)


def test_fingerprint_record_needs_a_mapping() -> None:
    """The top level is a mapping."""
    with pytest.raises(TypeError, match="must be a mapping"):
        fingerprint_record([1, 2])  # type: ignore[arg-type]


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), _json, max_size=5))
def test_fingerprint_record_round_trip(record: dict[str, Any]) -> None:
    """canonical_json parses back as JSON, and re-fingerprinting the parsed value is stable."""
    try:
        encoded = canonical_json(record)
    except ValueError:  # keys colliding after NFC
        return
    parsed = json.loads(encoded.decode("utf-8", "surrogatepass"))
    assert canonical_json(parsed) == encoded


def test_binary_golden_vector() -> None:
    """A binary body's fingerprint is pinned: raw SHA-256 twice, simhash 0, binary."""
    fp = fingerprint(b"%PDF-1.7 golden")
    golden = "fbf536c9da41d9f267a234e9ae2d1484cd63461439845a7f021491f5f3a1ae0a"
    assert (fp.raw_sha256.hex(), fp.content_sha256.hex()) == (golden, golden)
    assert (fp.simhash, fp.text_length, fp.binary, fp.version) == (0, 0, True, FINGERPRINT_VERSION)


# --- the fingerprint policy in the policy TOML file -------------------------------------------

POLICY_TOML = """
drop_params = ["ref"]

[fingerprint]
ignore = [".ad", "#cookie-banner"]
add_volatile = ['build [0-9a-f]{7}']
boilerplate = false

[fingerprint.hosts."example.com"]
main = "article"
ignore = [".share"]

[fingerprint.hosts.".news.example"]
boilerplate = true
volatile = []
"""


def test_policy_toml_fingerprint_table(tmp_path: Path) -> None:
    """[fingerprint] and its host tables load from the canonicalisation policy file."""
    path = tmp_path / "policy.toml"
    path.write_text(POLICY_TOML)
    policy = load_fingerprint_policy(path)
    assert policy is not None
    assert policy.ignore == (".ad", "#cookie-banner")
    assert policy.volatile[-1] == "build [0-9a-f]{7}"
    assert policy.volatile[:-1] == DEFAULT_VOLATILE_PATTERNS
    site = policy.for_host("example.com")
    assert (site.main, site.ignore) == ("article", (".ad", "#cookie-banner", ".share"))
    news = policy.for_host("www.news.example")
    assert (news.boilerplate, news.volatile) == (True, ())
    page = '<p class="ad">ad</p><article>Story build 1a2b3c4 <i class="share">x</i></article>'
    assert normalise(page, policy=policy, host="example.com") == "story"
    # The same file still gives the URL policy, and load_settings reads both.
    assert "ref" in load_canon_policy(path).default.drop_params
    settings = load_settings({"CHANGEWATCH_CANON_POLICY": str(path)})
    assert settings.fingerprint_policy == policy
    assert settings.canon_policy is not None


def test_policy_toml_without_fingerprint_table(tmp_path: Path) -> None:
    """A policy file without [fingerprint] gives no fingerprint policy (the defaults)."""
    path = tmp_path / "policy.toml"
    path.write_text('drop_params = ["ref"]\n')
    assert load_fingerprint_policy(path) is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"nope": 1}, "fingerprint: unknown key 'nope'"),
        ({"ignore": "div"}, "ignore must be a list of strings"),
        ({"ignore": ["div[["]}, "bad CSS selector 'div\\[\\['"),
        ({"main": 5}, "main must be a CSS selector string"),
        ({"volatile": ["(x"]}, "bad volatile pattern"),
        ({"boilerplate": "no"}, "boilerplate must be true or false"),
        ({"hosts": {"a.com": {"mian": "x"}}}, "hosts.'a.com': unknown key 'mian'"),
        ({"hosts": {"a.com": {"main": "::x("}}}, "hosts.'a.com': .*bad CSS selector"),
        ({"hosts": {"a.com": 3}}, "hosts.'a.com' must be a table"),
        ({"hosts": []}, "'hosts' must be a table"),
    ],
)
def test_policy_toml_bad_values(table: dict[str, Any], message: str) -> None:
    """A bad [fingerprint] value raises ConfigError naming the key (and host)."""
    with pytest.raises(ConfigError, match=message):
        fingerprint_policy_from_mapping(table)


volatile_module = importlib.import_module("changewatch.fingerprint.volatile")

_VOLATILE_FRAGMENTS = [
    "generated at 2026-03-01t12:00:00z",
    "updated 5 minutes ago",
    "mon, 01 mar 2026 12:00:00 gmt",
    "at 9:05 pm",
    "3:16",
    "an hour ago",
    "march 1st, 2026 at 10:00",
    "wednesday, september 30th, 2026 at 12:00:00.123 pm cest",
    "01/03/2026 12:00",
    "1:23:45",
    "2026-01-02",
    "ago",
    "years",
    "word",
    "12",
    "x:1",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_VOLATILE_FRAGMENTS), min_size=1, max_size=40))
def test_label_stamps_are_removed_in_one_pass(parts: list[str]) -> None:
    """strip_volatile is idempotent on any mix of stamps, labels and words, and what it keeps
    is the text's words in order (it only ever removes whole words)."""
    text = " ".join(" ".join(parts).split())
    once = strip_volatile(text)
    assert strip_volatile(once) == once
    words = iter(text.split(" "))
    assert all(word in words for word in once.split(" ") if word)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(_VOLATILE_FRAGMENTS), st.text(min_size=1, max_size=120)),
        min_size=1,
        max_size=40,
    )
)
def test_volatile_search_on_collapsed_text_equals_the_public_one(parts: list[str]) -> None:
    """On normalise_text output, normalise's strip (no final collapsing pass) returns what
    strip_volatile returns."""
    text = normalise_text(" ".join(parts))
    pattern = DEFAULT_POLICY._volatile_re
    stripped = strip_volatile_text(text, pattern, default=True, collapsed=True)
    assert stripped == strip_volatile(text)


@pytest.mark.parametrize(
    "page",
    [
        b"<html hidden><body><p>secret</p></body></html>",
        b'<html aria-hidden="true"><p>secret</p>',
        b"<!doctype html><HTML HIDDEN><p>secret",
    ],
)
def test_a_hidden_root_element_leaves_no_text(page: bytes) -> None:
    """lexbor refuses to remove the root element; a page whose <html> is hidden shows
    nothing, so its text is empty (it used to raise SelectolaxError)."""
    assert normalise(page) == ""
    fp = fingerprint(page)
    assert (fp.text_length, fp.binary) == (0, False)
    assert fp.content_sha256 == fingerprint(b"<html><body></body></html>").content_sha256


def test_a_policy_ignoring_the_root_element_keeps_nothing() -> None:
    policy = FingerprintPolicy(ignore=("html",))
    assert normalise("<p>one</p><p>two</p>", policy=policy) == ""
    assert normalise("<p>one</p>", policy=FingerprintPolicy(ignore=("body",))) == ""
    assert normalise("<p>one</p><p class=x>two</p>", policy=FingerprintPolicy(ignore=(".x",))) == (
        "one"
    )


def test_should_parse_takes_a_page_with_a_hidden_root(tmp_path: Path) -> None:

    with ChangeWatch(database_url=f"sqlite:///{tmp_path / 'h.db'}", seen_url="memory:") as watch:
        first = watch.should_parse("https://example.com/h", b"<html hidden><p>a</p></html>")
        again = watch.should_parse("https://example.com/h", b"<html hidden><p>b</p></html>")
    assert (first.kind, again.kind) == ("new", "unchanged")


def test_feature_hash_takes_features_of_any_word_count() -> None:
    """A feature of five or more words hashes (its rotations wrap mod 64) instead of raising."""
    assert len(feature_hash(b"a b c d e f g")) == 8
    assert feature_hash(b"a b c d e") != feature_hash(b"a b c d f")
    # features of up to four words keep the values they had (word 3 is rotated by 63 bits)
    assert feature_hash(b"a b c d").hex() == "795f9996599ddcc9"
