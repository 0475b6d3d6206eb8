"""canonicalise's fast path (plain URLs, no parser) gives exactly what the full parse gives."""

from __future__ import annotations

import gzip
import json
import re

import pytest
import shared_corpus
from hypothesis import example, given, settings
from hypothesis import strategies as st

import changewatch.urls.canon as canon
from changewatch.errors import InvalidURLError
from changewatch.urls import DEFAULT_POLICY, CanonPolicy, HostPolicy, canonicalise
from changewatch.urls.canon import _PLAIN_URL, _canonicalise_parsed
from changewatch.urls.escapes import _escape, _escape_all

SHARED_CORPUS = shared_corpus.ROOT

POLICIES = {
    "default": DEFAULT_POLICY,
    "fold": CanonPolicy(default=HostPolicy(fold_trailing_slash=True)),
    "sessions": CanonPolicy(default=HostPolicy(strip_session_ids=True)),
    "per-host": CanonPolicy(hosts={"example.com": HostPolicy(fold_trailing_slash=True)}),
    "short": CanonPolicy(max_length=24),
    "keep": CanonPolicy(
        default=HostPolicy(
            keep_routing_fragments=True,
            keep_query_order=True,
            drop_params=frozenset({"a*", "b"}),
            keep_params=frozenset({"utm_x"}),
        )
    ),
}


def outcome(function: object, url: str, policy: CanonPolicy) -> str:
    """The result, or the refusal's message: both paths must agree on either."""
    try:
        if function is canonicalise:
            return canonicalise(url, policy)
        return _canonicalise_parsed(url, policy) if len(url) <= policy.max_length else "long"
    except InvalidURLError as exc:
        return f"refused: {exc}"


def same(url: str) -> None:
    for name, policy in POLICIES.items():
        fast = outcome(canonicalise, url, policy)
        full = outcome(_canonicalise_parsed, url, policy)
        if fast.startswith("refused: ") and "longer than" in fast:
            full = fast if full == "long" else full
        assert fast == full, (name, url)


_LABEL = st.one_of(
    st.text(alphabet="abcxyzAZ09-_.", min_size=0, max_size=8),
    st.sampled_from(["bücher", "ß", "Пример", "例え", "%41", "a%2e", "\u212a", "ａ", "\u00ad"]),
)
_SEGMENT = st.one_of(
    st.text(alphabet="az09-._~!$&'()*+,;=:@%2eE/?#|^`{}\\ é", max_size=10),
    st.sampled_from(["", ".", "..", "...", ".a", "xn--a", "a%2E", "%2e%2E", ".well-known", "%7e"]),
)
_QUERY = st.one_of(
    st.text(alphabet="abAB09=&_-.%2eEfF'?/;:@!$()*+,~|^`{}\\\" é", max_size=16),
    st.sampled_from(["utm_source=x&b=1&a=2", "UTM_X&&GCLID=1", "sid=1&a", "=&=", "a=%41%2f"]),
)
_FRAGMENT = st.text(alphabet="!/#?&=a%2E\"<>` é'\\", max_size=6)


@st.composite
def near_simple_urls(draw: st.DrawFn) -> str:
    """URLs at and around the edge of the fast path's shape."""
    scheme = draw(
        st.sampled_from(
            ["http://", "https://", "HTTP://", "HtTpS://", "http:", "ftp://", " http://"]
        )
    )
    userinfo = draw(
        st.sampled_from(["", "", "", "user@", "u:p@", "a%40b:c@", "@", ":@", "a@b@", "a b@", "[@"])
    )
    labels = draw(st.lists(_LABEL, min_size=1, max_size=4))
    if draw(st.booleans()):
        labels[0] = draw(st.sampled_from(["xn--", "XN--", "Xn--"])) + labels[0]
    host = ".".join(labels)
    if draw(st.integers(0, 5)) == 0:  # IPv6-like
        host = "[" + draw(st.text(alphabet="0123456789abcdefABCDEF:.", max_size=16)) + "]"
    elif draw(st.integers(0, 3)) == 0:  # IPv4-like: octets with and without leading zeros
        octets = st.sampled_from(["0", "1", "00", "01", "9", "10", "99", "255", "256", "300"])
        host = ".".join(draw(st.lists(octets, min_size=1, max_size=5)))
    host += draw(st.sampled_from(["", "", ".", ".."]))
    port = draw(
        st.sampled_from(
            [
                "",
                "",
                ":80",
                ":443",
                ":8080",
                ":",
                ":0",
                ":08080",
                ":080",
                ":00443",
                ":65535",
                ":65536",
                ":99999",
            ]
        )
    )
    segments = draw(st.lists(_SEGMENT, max_size=5))
    path = "".join("/" + s for s in segments)
    url = scheme + userinfo + host + port + path
    if draw(st.booleans()):
        url += "?" + draw(_QUERY)
    if draw(st.integers(0, 2)) == 0:
        url += "#" + draw(_FRAGMENT)
    return url


@settings(max_examples=2000, deadline=None)
@given(near_simple_urls())
@example("http://example.com/a/b")
@example("http://example.com")
@example("http://a.123/")
@example("http://1.2.3.4/")
@example("http://0x7f.1/")
@example("http://example.com/a/./b/../c")
@example("http://example.com/a//b")
@example("http://example.com/a/")
@example("http://example.com./a")
@example("http://example.com../a")
@example("http://-a-.b-/x")
@example("http://xn--nxasmq6b.com/")
@example("http://xn--zz.com/")
@example("http://XN--zz.com/")
@example("http://" + "a" * 64 + ".com/")
@example("http://" + "a" * 63 + "/")
@example("http://example.com/;jsessionid=1/x")
@example("http://example.com/;jsessionid=1/../x")
@example("http://example.com/a//..;jsessionid=1/b")
@example("http://[2001:DB8::0:1]:8080/a?b")
@example("http://[::ffff:1.2.3.4]/")
@example("http://[1:2:3:4:5:6:7:8:9]/")
@example('http://example.com/caf\u00e9 x?q=\u00e9 "')
@example("http://example.com/a ")
@example("http://example.com/a?b ")
@example("http://example.com/a ?b")
@example("http://example.com/\ud800?\udfff")
@example("http://example.com/\x85\ufffe?\u2028")
@example("http://example.com/a|^`{}<>?|^`{}<>")
@example("http://example.com/%7e")
@example("http://example.com/a/%2e%2E/b")
@example("http://127.0.0.1:8080/p/1")
@example("https://example.com:443/")
@example("http://example.com:80/")
@example("http://example.com:080/")
@example("https://example.com:80/")
@example("http://10.0.0.1:65535/")
@example("http://10.0.0.1:65536/")
@example("http://10.0.0.01/")
@example("http://256.0.0.1/")
@example("http://u:p@example.com/")
@example("http://a@b@example.com/")
@example("http://example.com?b=1&a=2&utm_source=x")
@example("http://example.com/?q='")
@example("http://example.com/#!/a%41")
@example("http://example.com/#/a<b")
def test_fast_path_matches_the_full_parse(url: str) -> None:
    """The plain-URL path and the full WHATWG parse agree, under every test policy."""
    same(url)


@pytest.mark.corpus
def test_fast_path_matches_on_the_whatwg_cases() -> None:
    cases = json.loads((SHARED_CORPUS / "urls" / "wpt-urltestdata.json").read_text())
    inputs = [c["input"] for c in cases if isinstance(c, dict)]
    hrefs = [c["href"] for c in cases if isinstance(c, dict) and c.get("href")]
    assert len(inputs) > 500
    for url in inputs + hrefs:
        same(url)


@pytest.mark.corpus
def test_fast_path_matches_on_every_sitemap_url_of_the_corpus() -> None:
    seen = 0
    loc = re.compile(rb"<loc>\s*([^<]*?)\s*</loc>")
    for path in sorted((SHARED_CORPUS / "sitemaps-crawler-commons").rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError):
                continue
        for match in loc.finditer(data):
            same(match.group(1).decode("utf-8", "replace"))
            seen += 1
    assert seen > 50


@pytest.mark.corpus
def test_fast_path_matches_on_the_links_of_the_real_pages() -> None:
    href = re.compile(rb"""href\s*=\s*["']?(https?://[^"'\s>]+)""", re.IGNORECASE)
    urls = set()
    for path in sorted((SHARED_CORPUS / "pages-readability").glob("*.html.gz")):
        for match in href.finditer(gzip.decompress(path.read_bytes())):
            urls.add(match.group(1).decode("utf-8", "replace"))
    assert len(urls) > 1000
    fast = 0
    for url in sorted(urls):
        same(url)
        fast += _PLAIN_URL.fullmatch(url) is not None
    assert fast > len(urls) // 10  # the fast path is not a corner case on real links


def _parsed(url: str, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether canonicalise(url) ran the WHATWG parser on the URL (not only on its host,
    once, for the host cache); the outcome is checked either way."""
    calls: list[str] = []

    def counting(text: str, policy: CanonPolicy) -> str:
        calls.append(text)
        return _canonicalise_parsed(text, policy)

    expected = outcome(_canonicalise_parsed, url, DEFAULT_POLICY)
    monkeypatch.setattr(canon, "_canonicalise_parsed", counting)
    assert outcome(canonicalise, url, DEFAULT_POLICY) == expected
    return url in calls


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "https://www.example.co.uk/news/2026/11/30/article-title",
        "http://shop.example/p/12345",
        "http://127.0.0.1:8080/p/1",
        "https://example.com:8443/a",
        "https://example.com/a/b.html",
        "https://docs.example.org/en/latest/api.html",
        "https://Example.com/",
        "https://example.com",
        "https://example.com:443/",
        "http://127.0.0.1:080/",
        "https://example.com/a?b=1&utm_source=x&a=2",
        "https://example.com/a#top",
        "https://example.com/a//b",
        "https://example.com/a/../b",
        "https://example.com/%7e",
        "https://user:secret@example.com/",
        "https://example.com./",
        "https://bücher.example/a?b=1",
        "https://Пример.испытание/",
        "https://0x7f.1/",
        "https://192.168.000.1/",
        "https://xn--bcher-kva.example/",
        "https://[2001:DB8::1]:8080/",
        "https://example.com/café/a b?q=é",
    ],
)
def test_typical_urls_take_the_fast_path(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Links with a plain path and query (and any host but IPv6) skip the URL's parse."""
    assert not _parsed(url, monkeypatch)


@pytest.mark.parametrize(
    "url",
    [
        "https://[::1%25eth0]/",
        "https://example.com/a/%2e%2e/b",
        "https://example.com/a b ",
        "https://example.com/\ud800",
        "https://example.com\\a",
        "https://example.com/?q='",
        "https://example.com:99999/",
        "https://a@b@example.com/",
        " https://example.com/",
        "https://" + "a" * 64 + ".example/",
    ],
)
def test_other_urls_take_the_full_parse(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What only the parser can decide (IPv6, encoding, refusals) goes to it."""
    assert _parsed(url, monkeypatch)


def _dot_segments_plainly(path: str) -> str:
    """RFC 3986 §5.2.4 written out, segment by segment."""
    output: list[str] = []
    segments = path.split("/")
    for segment in segments[1:]:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    result = "/" + "/".join(output)
    return result + "/" if segments[-1] in (".", "..") and not result.endswith("/") else result


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="/.a", max_size=14).map(lambda text: "/" + text))
def test_dot_segment_removal_matches_rfc_3986(path: str) -> None:
    """The shortcut for paths with "." segments only gives what the full algorithm gives
    (up to runs of "/", which the rules collapse next)."""
    collapse = canon._collapse_slashes
    assert collapse("/", canon._remove_dot_segments(path)) == collapse(
        "/", _dot_segments_plainly(path)
    )


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="%%%0129aAfFgG/.~-_=&?", max_size=16))
def test_escape_shortcut_matches_the_escape_rule(text: str) -> None:
    """For plain text (only "%" to rewrite) the shortcut equals the general escape rule."""
    assert canon._fix_escapes(text) == _escape_all(_escape, text)
