"""canonicalise and url_digest: the rules, the refusals, golden digests, WHATWG conformance."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
import shared_corpus
from hypothesis import example, given, settings
from hypothesis import strategies as st

from changewatch.errors import ChangewatchError, InvalidURLError
from changewatch.urls import (
    DEFAULT_MAX_URL_LENGTH,
    TRACKING_PARAMETERS,
    CanonPolicy,
    HostPolicy,
    canonicalise,
    digest_canonical,
    url_digest,
)

SHARED_CORPUS = shared_corpus.ROOT
WPT_DATA = SHARED_CORPUS / "urls" / "wpt-urltestdata.json"

#: WHATWG cases (input → reason) where canonicalise deliberately disagrees with browsers on
#: host, path or validity. Each one is skipped in the conformance test and checked to still
#: differ in ``test_whatwg_deliberate_differences_still_differ``.
DELIBERATE_DIFFERENCES: dict[str, str] = {
    "http://./": "a host that is empty once its trailing dot is dropped is refused",
    "http://../": "a host with an empty label is refused (not resolvable by DNS)",
    "http://foo.09..": "a host with an empty label is refused (not resolvable by DNS)",
    "http://!\"$&'()*+,-.;=_`{}~/": (
        'a host holding " ` { } is refused: RFC 3986 cannot carry it in a reg-name'
    ),
    "http://foo.bar/baz?qux#foo\bbar": "any C0 control character refuses the URL",
    "http://example.org/test?a#b\x00c": "any C0 control character refuses the URL",
    "https://www.example.com/path{\x7fpath.html?query'\x7f=query#fragment<\x7ffragment": (
        "a DEL character refuses the URL"
    ),
    "https://x/\x00y": "any C0 control character refuses the URL",
    "https://x/?\x00y": "any C0 control character refuses the URL",
    "https://x/?#\x00y": "any C0 control character refuses the URL",
}

# WHATWG "C0 control or space", stripped from both ends before parsing.
_C0_OR_SPACE = "".join(chr(i) for i in range(0x21))
_UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RFC3986_PATH_CHARS = _UNRESERVED | set(":/?#[]@!$&'()*+,;=")


# --- the canonical-form rules ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://EXAMPLE.COM/", "http://example.com/"),
        ("hTTpS://Www.Example.Com/", "https://www.example.com/"),
        ("http://example.com/Path/UPPER", "http://example.com/Path/UPPER"),
    ],
)
def test_scheme_and_host_lower_cased_path_case_kept(url: str, expected: str) -> None:
    """Scheme and host are lower-cased; the path keeps its case."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com:80/", "http://example.com/"),
        ("https://example.com:443/", "https://example.com/"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com:8080/", "http://example.com:8080/"),
        ("http://example.com:0080/", "http://example.com/"),
        ("http://example.com:/", "http://example.com/"),
        ("http://[::1]:80/", "http://[::1]/"),
    ],
)
def test_default_port_dropped_other_ports_kept(url: str, expected: str) -> None:
    """Only the scheme's own default port is dropped; leading zeros of a port are removed."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/a#top", "http://example.com/a"),
        ("http://example.com/a?x=1#top", "http://example.com/a?x=1"),
        ("http://example.com#", "http://example.com/"),
        ("http://example.com/a#frag?x=1", "http://example.com/a"),
    ],
)
def test_fragment_dropped(url: str, expected: str) -> None:
    """The fragment never reaches the canonical form, even when it contains a '?'."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize("key", sorted(TRACKING_PARAMETERS))
def test_every_tracking_parameter_dropped(key: str) -> None:
    """Each listed tracking key is removed, in any case, and other keys stay."""
    url = f"http://example.com/p?{key}=1&keep=2&{key.upper()}=3"
    assert canonicalise(url) == "http://example.com/p?keep=2"


@pytest.mark.parametrize(
    "key", ["utm_source", "UTM_MEDIUM", "Utm_Campaign", "utm_", "utm_anything_else", "utm%5Fid"]
)
def test_utm_prefix_dropped_in_any_case(key: str) -> None:
    """Any key starting with utm_ (case-insensitive, even percent-encoded) is dropped."""
    assert canonicalise(f"http://example.com/?{key}=x&a=1") == "http://example.com/?a=1"


@pytest.mark.parametrize(
    "key", ["keyword", "uid", "global", "sid", "id", "ref", "source", "pk_id", "campaign", "gad"]
)
def test_legitimate_parameters_kept(key: str) -> None:
    """Keys other lists eat (courlan: keyword, uid, global; session ids) are kept by default."""
    assert canonicalise(f"http://example.com/?{key}=1") == f"http://example.com/?{key}=1"


def test_tracking_lookalikes_kept() -> None:
    """Keys that only resemble tracking keys are kept (matching is exact, or utm_ prefix)."""
    url = "http://example.com/?utm=1&xutm_source=2&gclid_x=3&ga=4&fbclid2=5"
    assert canonicalise(url) == "http://example.com/?fbclid2=5&ga=4&gclid_x=3&utm=1&xutm_source=2"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/?b=&a=1", "http://example.com/?a=1&b="),
        ("http://example.com/?b&a", "http://example.com/?a&b"),
        ("http://example.com/?a=2&a=1&a=2", "http://example.com/?a=1&a=2&a=2"),
        ("http://example.com/?z=1&y=2&x=3", "http://example.com/?x=3&y=2&z=1"),
        ("http://example.com/?a=1&&b=2&", "http://example.com/?a=1&b=2"),
    ],
)
def test_query_pairs_sorted_blanks_and_duplicates_kept(url: str, expected: str) -> None:
    """Remaining pairs are sorted; blank values and duplicate keys survive; empty pairs go."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/?",
        "http://example.com/?&",
        "http://example.com/?utm_source=x",
        "http://example.com/?gclid=1&fbclid=2",
    ],
)
def test_empty_query_dropped(url: str) -> None:
    """A query that is empty, or empty once tracking keys are gone, leaves no '?'."""
    assert canonicalise(url) == "http://example.com/"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com//a///b//", "http://example.com/a/b/"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/a/b/..", "http://example.com/a/"),
        ("http://example.com/a/b/.", "http://example.com/a/b/"),
        ("http://example.com/../../a", "http://example.com/a"),
        ("http://example.com/a/%2e%2E/b", "http://example.com/b"),
        ("http://example.com/a/.%2e/b", "http://example.com/b"),
        ("http://example.com/foo/bar//..", "http://example.com/foo/bar/"),
        ("http://example.com/foo/bar//../..", "http://example.com/foo/"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com?a=1", "http://example.com/?a=1"),
    ],
)
def test_path_slashes_dot_segments_and_empty_path(url: str, expected: str) -> None:
    """Dot segments go (as browsers resolve them, '//' counting), then '//' runs collapse."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://user:secret@example.com/",
        "http://user@example.com/",
        "http://:@example.com/",
        "http://a@b@example.com/",
        "http://user:p%40ss@example.com/",
    ],
)
def test_userinfo_removed(url: str) -> None:
    """Credentials never reach the canonical form."""
    assert canonicalise(url) == "http://example.com/"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/%7e", "http://example.com/~"),
        ("http://example.com/%7E%41%61%30%2D%2E%5F", "http://example.com/~Aa0-._"),
        ("http://example.com/%c3%a9", "http://example.com/%C3%A9"),
        ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
        ("http://example.com/a%3Fb%23c%25d", "http://example.com/a%3Fb%23c%25d"),
        ("http://example.com/?q=a%26b%3Dc", "http://example.com/?q=a%26b%3Dc"),
        ("http://example.com/?q=%3b%2b%2f", "http://example.com/?q=%3B%2B%2F"),
        ("http://example.com/?q=%7e%41", "http://example.com/?q=~A"),
        ("http://example.com/100%", "http://example.com/100%25"),
        ("http://example.com/%zz", "http://example.com/%25zz"),
    ],
)
def test_percent_encoding_normalised(url: str, expected: str) -> None:
    """Hex is upper-cased, unreserved escapes decoded, reserved escapes and stray '%' kept."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/café", "http://example.com/caf%C3%A9"),
        ("http://example.com/€/😀", "http://example.com/%E2%82%AC/%F0%9F%98%80"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ('http://example.com/<"x">', "http://example.com/%3C%22x%22%3E"),
        ("http://example.com/?q=ü ü", "http://example.com/?q=%C3%BC%20%C3%BC"),
    ],
)
def test_characters_a_url_cannot_hold_are_utf8_encoded(url: str, expected: str) -> None:
    """Non-ASCII, space, quotes and angle brackets are UTF-8 percent-encoded."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://BÜCHER.example/", "http://xn--bcher-kva.example/"),
        ("http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),
        ("http://☃.net/", "http://xn--n3h.net/"),
        ("http://ｅｘａｍｐｌｅ．com/", "http://example.com/"),
        ("http://example.com./", "http://example.com/"),
        ("http://bücher.example./", "http://xn--bcher-kva.example/"),
    ],
)
def test_host_idna_and_trailing_dot(url: str, expected: str) -> None:
    """Non-ASCII hosts become punycode (percent-escapes read as UTF-8); one trailing dot goes."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://0x7f.1/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://127.1/",
        "http://127.0.1/",
        "http://0x7F000001/",
        "http://127.0.0.1./",
    ],
)
def test_numeric_ipv4_forms_written_dotted_decimal(url: str) -> None:
    """Hex, octal, short and single-number IPv4 hosts are written dotted-decimal."""
    assert canonicalise(url) == "http://127.0.0.1/"


@pytest.mark.parametrize(
    ("url", "reason_part"),
    [
        ("http://256.0.0.1/", "out of range"),
        ("http://4294967296/", "out of range"),
        ("http://1.2.3.4.5/", "more than four parts"),
        ("http://08.0.0.1/", "not a number"),
        ("http://-1.0.0.1/", "not a number"),
        ("http://+1.0.0.1/", "not a number"),
        ("http://1_0.0.0.1/", "not a number"),
        ("http://foo.0x7f/", "not a number"),
    ],
)
def test_bad_ipv4_hosts_refused(url: str, reason_part: str) -> None:
    """A host ending in a number must be a valid WHATWG IPv4 address (no signs, no '_')."""
    with pytest.raises(InvalidURLError) as info:
        canonicalise(url)
    assert reason_part in info.value.reason


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://[2001:DB8:0:0:0:0:0:1]/", "http://[2001:db8::1]/"),
        ("http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/"),
        ("https://[2001:db8:0:0:1:0:0:1]:443/", "https://[2001:db8::1:0:0:1]/"),
        ("http://[::ffff:1.2.3.4]/", "http://[::ffff:102:304]/"),
    ],
)
def test_ipv6_canonical_compressed(url: str, expected: str) -> None:
    """IPv6 hosts are written in RFC 5952 compressed, lower-case form."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http:\\\\example.com\\a\\b", "http://example.com/a/b"),
        ("http://example.com\\a", "http://example.com/a"),
        ("http:example.com/a", "http://example.com/a"),
        ("http:///example.com/a", "http://example.com/a"),
    ],
)
def test_backslashes_and_slash_count_after_scheme(url: str, expected: str) -> None:
    """'\\' counts as '/', and any number of slashes may follow the scheme (WHATWG)."""
    assert canonicalise(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "  http://example.com/a  ",
        "\t\nhttp://example.com/a\r\n",
        "\x00\x1fhttp://example.com/a\x0b",
        "http://exa\tmple.com/\na",
    ],
)
def test_whitespace_and_controls_stripped_at_ends_tabs_newlines_removed(url: str) -> None:
    """Leading/trailing spaces and C0 controls are stripped; tab, CR and LF removed anywhere."""
    assert canonicalise(url) == "http://example.com/a"


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason_part"),
    [
        ("", "empty"),
        ("   \t\n ", "empty"),
        ("/a/b", "no scheme"),
        ("//example.com/a", "no scheme"),
        ("example.com/a", "no scheme"),
        ("?a=1", "no scheme"),
        ("javascript:alert(1)", "'javascript'"),
        ("mailto:someone@example.com", "'mailto'"),
        ("data:text/html,hi", "'data'"),
        ("file:///etc/passwd", "'file'"),
        ("ftp://example.com/", "'ftp'"),
        ("http://", "empty host"),
        ("https:///", "empty host"),
        ("http://user@/", "empty host"),
        ("http://exa mple.com/", "forbidden character"),
        ("http://example.com:65536/", "out of range"),
        ("http://example.com:99999999999999999999/", "out of range"),
        ("http://example.com:8o/", "not a number"),
        ("http://example.com:-1/", "not a number"),
        ("http://example.com:٣/", "not a number"),
        ("http://example.com:1:2/", "more than one ':'"),
        ("http://example.com/a\x01b", "control character"),
        ("http://example.com/?q=\x7f", "control character"),
        ("http://a..b/", "empty label"),
        ("http://[::1/", "unclosed"),
        ("http://[::1]x/", "after the IPv6 host"),
        ("http://[::g]/", "invalid IPv6"),
        ("http://[fe80::1%25eth0]/", "zone identifier"),
        ("http://%zz.example/", "percent-encoding"),
        ("http://ho%7Fst/", "forbidden character"),
        ("http://ex%2Fample.com/", "forbidden character"),
        ("https://%EF%BF%BD/", "internationalised"),
        ("http://" + "a" * 64 + ".com/", "over 63"),
        ("http://" + ".".join(["a" * 60] * 5) + "/", "over 253"),
    ],
)
def test_invalid_urls_raise_with_reason(url: str, reason_part: str) -> None:
    """Each kind of bad input raises InvalidURLError whose .reason names the problem."""
    with pytest.raises(InvalidURLError) as info:
        canonicalise(url)
    error = info.value
    assert isinstance(error, ValueError)
    assert isinstance(error, ChangewatchError)
    assert reason_part in error.reason
    assert error.url == url
    assert error.reason in str(error)


def test_over_max_length_refused() -> None:
    """A URL over max_length characters is refused; at the limit it is accepted."""
    base = "http://example.com/"
    at_limit = base + "a" * (DEFAULT_MAX_URL_LENGTH - len(base))
    assert canonicalise(at_limit) == at_limit
    with pytest.raises(InvalidURLError) as info:
        canonicalise(at_limit + "a")
    assert str(DEFAULT_MAX_URL_LENGTH) in info.value.reason
    with pytest.raises(InvalidURLError, match="longer than 20"):
        canonicalise("http://example.com/abc", max_length=20)


@pytest.mark.parametrize("value", [None, b"http://example.com/", 42, ["http://example.com/"]])
def test_non_str_raises_type_error(value: Any) -> None:
    """Anything but str is a programming error: TypeError, not InvalidURLError."""
    with pytest.raises(TypeError, match="must be str"):
        canonicalise(value)


# --- url_digest -----------------------------------------------------------------------------

#: url → (canonical form, blake2b-128 hex of it), pinned; a change here re-keys every store.
GOLDEN_DIGESTS = {
    "http://example.com/": ("http://example.com/", "9aba6a18c5a5d94534a3b99c485d4547"),
    "HTTPS://Example.COM:443/a//b/./c/../d?b=2&utm_source=x&a=1#top": (
        "https://example.com/a/b/d?a=1&b=2",
        "5a71b2892114f924d2f9f54472904075",
    ),
    "http://bücher.example/": ("http://xn--bcher-kva.example/", "34d85911507f2147134add67ee548d24"),
    "http://0x7f.1/": ("http://127.0.0.1/", "ba731f941b3fd5919cd4a41b8535ed3f"),
    "https://[2001:DB8:0:0:0:0:0:1]:8443/x?q=%7e": (
        "https://[2001:db8::1]:8443/x?q=~",
        "5adf3fb68e67e798f77891304e6a90f4",
    ),
    "http://example.com/%E2%82%AC?z=&a=1&a=0": (
        "http://example.com/%E2%82%AC?a=0&a=1&z=",
        "bd6c4ab768cdd301db311f185634c8d8",
    ),
    "https://Faß.example./Ab/%7e?q='x'&fbclid=1&ttclid=2": (
        "https://xn--fa-hia.example/Ab/~?q=%27x%27",
        "b173788b6c447fed7bed5b32c5cc33b4",
    ),
}


@pytest.mark.parametrize(("url", "golden"), GOLDEN_DIGESTS.items())
def test_url_digest_golden(url: str, golden: tuple[str, str]) -> None:
    """Canonical forms and their 16-byte digests are pinned (persisted in stores)."""
    canonical, hex_digest = golden
    assert canonicalise(url) == canonical
    digest = url_digest(url)
    assert isinstance(digest, bytes)
    assert len(digest) == 16
    assert digest.hex() == hex_digest
    assert digest_canonical(canonical) == digest


def test_url_digest_equal_for_equivalent_urls() -> None:
    """URLs that canonicalise equal have equal digests; different ones differ."""
    same = [
        "http://example.com/a?b=1&a=2",
        "HTTP://EXAMPLE.com:80/a?a=2&b=1&utm_source=x#frag",
        "http://user:pw@example.com//x/../a?a=2&b=1&gclid=z",
    ]
    digests = {url_digest(url) for url in same}
    assert len(digests) == 1
    assert url_digest("http://example.com/a?a=2") not in digests


def test_url_digest_stable_across_hash_seeds() -> None:
    """Digests come from hashlib, so two interpreters with different PYTHONHASHSEED agree."""
    urls = list(GOLDEN_DIGESTS)
    code = (
        "import json, sys\n"
        "from changewatch.urls import url_digest\n"
        "print(json.dumps([url_digest(u).hex() for u in json.loads(sys.stdin.read())]))\n"
    )
    outputs = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(urls),
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        outputs.append(json.loads(result.stdout))
    assert outputs[0] == outputs[1] == [url_digest(url).hex() for url in urls]


# --- properties -----------------------------------------------------------------------------

_label = st.from_regex(r"[a-zA-Z0-9]([a-zA-Z0-9\-]{0,10}[a-zA-Z0-9])?", fullmatch=True)
_host = st.one_of(
    st.lists(_label, min_size=1, max_size=4).map(".".join),
    st.lists(_label, min_size=1, max_size=3).map(lambda labels: ".".join(labels) + "."),
    st.text(st.characters(min_codepoint=0x61, max_codepoint=0x2FF), min_size=1, max_size=12),
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda ip: f"[{ip}]"),
    st.integers(min_value=0, max_value=2**32 + 5).map(str),
    st.integers(min_value=0, max_value=2**32).map(hex),
    st.lists(
        st.sampled_from(["0", "08", "0x", "0xff", "0777", "255", "256", "-1", "+1", "1_0", ""]),
        min_size=1,
        max_size=5,
    ).map(".".join),
    st.text(min_size=1, max_size=12),
)
_url_char = st.one_of(
    st.sampled_from(list("/.%?#&=;+,:@!$'()*~-_ab\\ [ ]<>\"{}|^`")),
    st.sampled_from(["%2e", "%2E", "%2F", "%7e", "%41", "%25", "%zz", "%", "..", "./", "//"]),
    st.characters(codec="utf-8"),
)
_fragment = st.lists(_url_char, max_size=12).map("".join)
_key = st.one_of(
    st.sampled_from([*sorted(TRACKING_PARAMETERS), "utm_source", "UTM_X", "a", "b", "A"]),
    _fragment,
)
_query = st.lists(st.tuples(_key, st.one_of(st.none(), _fragment)), max_size=5).map(
    lambda pairs: "&".join(k if v is None else f"{k}={v}" for k, v in pairs)
)
_port = st.one_of(
    st.just(""),
    st.integers(min_value=0, max_value=70000).map(lambda p: f":{p}"),
    st.sampled_from([":80", ":443", ":", ":0080", ":x"]),
)


@st.composite
def _http_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "hTtPs"]))
    slashes = draw(st.sampled_from(["//", "//", "/", "///", "\\\\", ""]))
    userinfo = draw(st.sampled_from(["", "user@", "u:p@", ":@"]))
    url = f"{scheme}:{slashes}{userinfo}{draw(_host)}{draw(_port)}"
    if draw(st.booleans()):
        url += "/" + draw(_fragment)
    if draw(st.booleans()):
        url += "?" + draw(_query)
    if draw(st.booleans()):
        url += "#" + draw(_fragment)
    return url


def _canonical_or_none(url: str) -> str | None:
    try:
        return canonicalise(url)
    except InvalidURLError:
        return None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_only_raises_invalid_url_error(text: str) -> None:
    """On any text, canonicalise returns an idempotent http(s) URL or raises InvalidURLError."""
    canonical = _canonical_or_none(text)
    if canonical is not None:
        assert canonical.startswith(("http://", "https://"))
        assert canonicalise(canonical) == canonical


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("http:/\\[]%.@?#&=0x1fF ")), max_size=40))
def test_url_alphabet_soup_only_raises_invalid_url_error(text: str) -> None:
    """Strings made of URL punctuation only ever raise InvalidURLError, and are idempotent."""
    canonical = _canonical_or_none(text)
    if canonical is not None:
        assert canonicalise(canonical) == canonical


@settings(max_examples=400, deadline=None)
@given(_http_urls())
def test_url_shaped_inputs_idempotent(url: str) -> None:
    """On http(s)-shaped URLs: InvalidURLError or a fixed point of canonicalise."""
    canonical = _canonical_or_none(url)
    if canonical is not None:
        assert canonical.isascii()
        assert not re.search(r"[\x00-\x20\x7f#]", canonical)
        assert canonicalise(canonical) == canonical
        assert url_digest(url) == digest_canonical(canonical)


_resource_segment = st.sampled_from(["a", "B", "caf%C3%A9", "x~y", "a%2Fb", "100%25", "v1.2"])


@st.composite
def _equivalent_spellings(draw: st.DrawFn) -> tuple[str, str]:
    """A URL and another spelling of it that every rule says is the same resource."""
    scheme = draw(st.sampled_from(["http", "https"]))
    host = draw(st.sampled_from(["example.com", "bücher.example", "10.0.0.1", "[2001:db8::1]"]))
    segments = draw(st.lists(_resource_segment, min_size=1, max_size=4))
    pairs = draw(st.lists(st.sampled_from(["a=1", "b=", "c", "a=2", "q=%2F"]), max_size=4))
    base = f"{scheme}://{host}/" + "/".join(segments) + ("?" + "&".join(pairs) if pairs else "")
    # The other spelling: each rule's equivalence applied or not, independently.
    other_host = host
    if draw(st.booleans()) and host == "bücher.example":
        other_host = "xn--bcher-kva.example"
    if draw(st.booleans()) and host == "10.0.0.1":
        other_host = draw(st.sampled_from(["0xa.0.0.1", "167772161", "012.0.1"]))
    if draw(st.booleans()) and host == "[2001:db8::1]":
        other_host = "[2001:DB8:0:0:0:0:0:1]"
    if draw(st.booleans()) and not other_host.startswith("["):
        other_host = other_host.upper() + draw(st.sampled_from(["", "."]))
    if draw(st.booleans()):
        other_host += ":80" if scheme == "http" else ":443"
    if draw(st.booleans()):
        other_host = "user:pw@" + other_host
    other_segments = list(segments)
    if draw(st.booleans()):
        other_segments.insert(
            draw(st.integers(0, len(segments) - 1)),
            draw(st.sampled_from([".", "%2e", "zz/..", "zz/%2E%2e", ""])),
        )
    path = (
        "/".join(other_segments)
        .replace("~", "%7e")
        .replace("a", draw(st.sampled_from(["a", "%61"])))
    )
    path = path.replace("%2F", draw(st.sampled_from(["%2F", "%2f"])))
    other_pairs = draw(st.permutations(pairs))
    if draw(st.booleans()):
        other_pairs.insert(
            0, draw(st.sampled_from(["utm_source=x", "GCLID=1", "fbclid=", "_ga=1"]))
        )
    if draw(st.booleans()):
        other_pairs.append("")
    query = "&".join(other_pairs)
    other = f"{scheme.upper() if draw(st.booleans()) else scheme}://{other_host}/{path}"
    if query or draw(st.booleans()):
        other += "?" + query
    other += draw(st.sampled_from(["", "#", "#top", "#a?b=1"]))
    return base, other


@settings(max_examples=400, deadline=None)
@given(_equivalent_spellings())
def test_equivalent_spellings_give_equal_digests(spellings: tuple[str, str]) -> None:
    """Two spellings equal under every rule (case, ports, userinfo, IP forms, IDNA, dots,
    escapes, tracking keys, order, fragments) have one canonical form and one digest."""
    base, other = spellings
    assert canonicalise(other) == canonicalise(base)
    assert url_digest(other) == url_digest(base)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/?q='x'", "http://example.com/?q=%27x%27"),
        ("http://example.com/?q=%27x%27", "http://example.com/?q=%27x%27"),
        ("http://example.com/it's", "http://example.com/it's"),
    ],
)
def test_apostrophe_in_query_as_browsers_send_it(url: str, expected: str) -> None:
    """Browsers send "'" in an http(s) query as %27 (WHATWG special-query set), so both are one."""
    assert canonicalise(url) == expected


def test_lone_surrogates_become_replacement_characters() -> None:
    """A str with lone surrogates is read as WHATWG reads a USVString: U+FFFD, encoded."""
    assert canonicalise("http://example.com/\ud800x") == "http://example.com/%EF%BF%BDx"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_label, _label), min_size=1, max_size=6))
def test_query_order_does_not_matter(pairs: list[tuple[str, str]]) -> None:
    """Permuting the query pairs never changes the canonical form."""
    forward = "&".join(f"{k}={v}" for k, v in pairs)
    backward = "&".join(f"{k}={v}" for k, v in reversed(pairs))
    assert canonicalise(f"http://e.com/?{forward}") == canonicalise(f"http://e.com/?{backward}")


# --- WHATWG URL conformance (web-platform-tests urltestdata.json) ---------------------------


def _load_wpt_cases() -> list[dict[str, Any]]:
    if not shared_corpus.PRESENT:
        return []
    data = json.loads(WPT_DATA.read_text(encoding="utf-8"))
    cases = []
    for case in data:
        if not isinstance(case, dict) or case.get("base") is not None:
            continue
        scheme = case["input"].strip(_C0_OR_SPACE).lower()
        if scheme.startswith(("http:", "https:")):
            cases.append(case)
    return cases


WPT_CASES = _load_wpt_cases()
# Without the corpus, one placeholder case that the corpus marker skips with its reason.
_WPT_PARAMS = [pytest.param(case, id=f"wpt{i}") for i, case in enumerate(WPT_CASES)] or [
    pytest.param({}, id="wpt", marks=pytest.mark.corpus)
]


def _split_canonical(canonical: str) -> tuple[str, str]:
    """(hostname without port, path) of a canonical URL."""
    authority, _, rest = canonical.partition("://")[2].partition("/")
    host = authority[: authority.index("]") + 1] if authority.startswith("[") else authority
    host = host.rpartition(":")[0] if ":" in host and not host.startswith("[") else host
    return host, "/" + rest.partition("?")[0]


def _our_path_rules(pathname: str) -> str:
    """Apply our rules on top of a WHATWG pathname, independently of urls.py.

    Upper-case escapes, decode unreserved ones, percent-encode what RFC 3986 cannot hold
    (WHATWG leaves "|", "^" and stray "%" raw) and collapse '//' runs.
    """
    out = []
    i = 0
    while i < len(pathname):
        char = pathname[i]
        escape = pathname[i + 1 : i + 3]
        if char == "%" and re.fullmatch(r"[0-9A-Fa-f]{2}", escape):
            decoded = chr(int(escape, 16))
            out.append(decoded if decoded in _UNRESERVED else "%" + escape.upper())
            i += 3
            continue
        if char in _RFC3986_PATH_CHARS - {"?", "#"}:
            out.append(char)
        else:
            out.append("".join(f"%{b:02X}" for b in char.encode("utf-8")))
        i += 1
    return re.sub(r"/{2,}", "/", "".join(out))


@pytest.mark.corpus
def test_whatwg_counts() -> None:
    """All but the listed deliberate differences agree with browsers (counts pinned)."""
    failures = sum(1 for case in WPT_CASES if case.get("failure"))
    differences = sum(1 for case in WPT_CASES if case["input"] in DELIBERATE_DIFFERENCES)
    assert differences == len(DELIBERATE_DIFFERENCES) == 10
    print(f"WHATWG: {len(WPT_CASES)} cases ({failures} failures), {differences} deliberate")


@pytest.mark.corpus
def test_whatwg_corpus_loaded() -> None:
    """The WHATWG data yields a few hundred base-less http(s) cases, both kinds present."""
    failures = [case for case in WPT_CASES if case.get("failure")]
    assert len(WPT_CASES) >= 250
    assert len(failures) >= 100
    assert len(WPT_CASES) - len(failures) >= 100


@pytest.mark.corpus
@pytest.mark.parametrize("case", _WPT_PARAMS)
def test_whatwg_conformance(case: dict[str, Any]) -> None:
    """Browser failures raise InvalidURLError; otherwise host and path agree with browsers."""
    url = case["input"]
    if url in DELIBERATE_DIFFERENCES:
        pytest.skip(f"deliberate difference: {DELIBERATE_DIFFERENCES[url]}")
    if case.get("failure"):
        with pytest.raises(InvalidURLError):
            canonicalise(url)
        return
    canonical = canonicalise(url)
    host, path = _split_canonical(canonical)
    assert host == case["hostname"].lower()
    assert path == _our_path_rules(case["pathname"])
    assert canonicalise(case["href"]) == canonical


@pytest.mark.corpus
def test_whatwg_deliberate_differences_still_differ() -> None:
    """Every listed deliberate difference is in the data and really differs from browsers."""
    by_input = {case["input"]: case for case in WPT_CASES}
    for url in DELIBERATE_DIFFERENCES:
        case = by_input[url]
        assert not case.get("failure"), url
        canonical = _canonical_or_none(url)
        assert canonical is None or _split_canonical(canonical)[0] != case["hostname"], url


# --- the fast paths of canonicalise against the straightforward algorithm -------------------


def _reference_canonicalise(url: str, policy: CanonPolicy) -> str:
    """canonicalise written plainly: ada's component offsets, every control character
    looked for up front, every path and query rewritten by _ESCAPE_RE, every query pair
    tested. canonicalise takes shortcuts (offsets found in the href, a control scan only
    where one can hide, already-canonical escapes kept, a trigger search before pairs are
    tested); the outputs and errors must be the same."""
    from ada_url._ada_wrapper import ffi, lib

    from changewatch.urls.canon import (
        _CONTROL_RE,
        _JSESSIONID_RE,
        _SCHEME_RE,
        _SLASHES_RE,
        _check_domain,
        _remove_dot_segments,
    )
    from changewatch.urls.escapes import _ESCAPE_RE, _escape
    from changewatch.urls.reasons import refusal_reason

    if len(url) > policy.max_length:
        raise InvalidURLError(url, f"longer than {policy.max_length} characters")
    text = url.strip(_C0_OR_SPACE)
    text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    if _CONTROL_RE.search(text):
        raise InvalidURLError(url, "contains a control character")
    if not text:
        raise InvalidURLError(url, "empty URL")
    head = text[:6].lower()
    if head.startswith("http:"):
        prefix, skip = "http://", 5
    elif head == "https:":
        prefix, skip = "https://", 6
    else:
        match = _SCHEME_RE.match(text)
        if match is None:
            raise InvalidURLError(url, "not an absolute URL (no scheme)")
        raise InvalidURLError(url, f"scheme {match[1].lower()!r} is not http or https")
    data = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()
    parsed = lib.ada_parse(data, len(data))
    try:
        raw = lib.ada_get_href(parsed)
        if not raw.length:
            raise InvalidURLError(url, refusal_reason(text[skip:]))
        c = lib.ada_get_components(parsed)
        host_start, host_end, path_start = c.host_start, c.host_end, c.pathname_start
        hash_start = None if c.hash_start == 0xFFFFFFFF else c.hash_start
        href: str = ffi.unpack(raw.data, raw.length).decode("utf-8", "replace")
    finally:
        lib.ada_free(parsed)
    if href[host_start] == "@":
        host_start += 1
    host = href[host_start:host_end]
    if host[0] != "[":
        host = _check_domain(url, host) if "." in (host[0], host[-1]) or ".." in host else host
        if len(host) > 63:
            host = _check_domain(url, host)
        if set(host) & set('"`{}'):
            raise InvalidURLError(url, f"host {host!r} contains a forbidden character")
    rules = policy.rules_for(host)
    rest = _ESCAPE_RE.sub(_escape, href[path_start:hash_start])
    path, _, query = rest.partition("?")
    if rules.strip_session_ids and ";" in path:
        path = _JSESSIONID_RE.sub("", path)
        if "/." in path:
            path = _remove_dot_segments(path)
    path = _SLASHES_RE.sub("/", path)
    if rules.fold_trailing_slash and len(path) > 1 and path[-1] == "/":
        path = path[:-1]
    result = prefix + host + href[host_end:path_start] + (path or "/")
    kept = []
    for pair in query.split("&"):
        key = pair.partition("=")[0].lower()
        dropped = key in rules._drop_exact or key.startswith(rules._drop_prefixes)
        if pair and not (dropped and key not in rules.keep_params):
            kept.append(pair)
    if kept:
        result += "?" + "&".join(kept if rules.keep_query_order else sorted(kept))
    if rules.keep_routing_fragments and hash_start is not None:
        fragment = href[hash_start + 1 :]
        if fragment[:1] in ("!", "/"):
            result += "#" + _ESCAPE_RE.sub(_escape, fragment)
    return result


_POLICIES = [
    CanonPolicy(),
    CanonPolicy(default=HostPolicy(strip_session_ids=True, fold_trailing_slash=True)),
    CanonPolicy(
        default=HostPolicy(
            drop_params=frozenset({"a*", "B", "x.y"}),
            keep_params=frozenset({"gclid", "utm_x"}),
            keep_query_order=True,
            keep_routing_fragments=True,
        ),
        hosts={".example.com": HostPolicy(strip_session_ids=True, keep_params=frozenset({"sid"}))},
    ),
]
_noise = st.sampled_from(
    ["\x00", "\x01", "\x1f", "\x7f", "\t", "\n", " ", "\x01/..", "/x\x7f/..", "\x0b/./",
     "%01", "%7f", "%1F", "%7E", "%c3%a9", "%C3%A9", "%2f", "%41", "%", "'", "é", "\ud800",
     ";jsessionid=1", "//", "/..", "@", ":81", ".", "UTM_a=1", "SID=2", "&&", "=", "#!/", "?"]
)  # fmt: skip


@st.composite
def _noisy_urls(draw: st.DrawFn) -> str:
    """A URL-shaped string with a few awkward pieces (controls, escapes, keys) put in."""
    plain = st.sampled_from(
        [
            "http://example.com/a/b/c?b=1&a=2&utm_x=3#f",
            "https://u:p@Bücher.example:8080/x/%7e/?gclid=1&SID=2&a",
            "http://10.0.0.1/p;jsessionid=1/q/?#!/r",
            "http://[::1]:81/a.html?q=%2f",
        ]
    )
    url = draw(st.one_of(plain, _http_urls(), _equivalent_spellings().map(lambda pair: pair[1])))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(url)))
        url = url[:at] + draw(_noise) + url[at:]
    return url


def _outcome(fn: Any, url: str, policy: CanonPolicy) -> tuple[str, str | None, str | None]:
    try:
        return ("ok", fn(url, policy), None)
    except InvalidURLError as exc:
        return ("error", exc.reason, exc.url)


@settings(max_examples=1500, deadline=None)
@example("http://example.com/a\x01/../b", CanonPolicy())  # a control in a removed segment
@given(
    _noisy_urls(),
    st.sampled_from(_POLICIES),
)
def test_fast_paths_agree_with_the_straightforward_algorithm(url: str, policy: CanonPolicy) -> None:
    """canonicalise (shortcuts) and _reference_canonicalise (none) give equal results."""
    outcome = _outcome(canonicalise, url, policy)
    assert outcome == _outcome(_reference_canonicalise, url, policy)
    if outcome[0] == "ok":
        assert url_digest(url, policy) == digest_canonical(str(outcome[1]))
