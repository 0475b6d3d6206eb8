"""Hypothesis strategies for hostile input: URLs, HTML and sitemaps; and the fuzz profiles.

Shared by the fuzz tests here; the atheris targets beside them build the same shapes from
raw fuzzer bytes. Profiles: ``fuzz-ci`` (``CI=true``: more examples) and ``fuzz-dev``; each
example must finish within :data:`EXAMPLE_DEADLINE` (no hang on any input).
"""

from __future__ import annotations

import gzip
import os
from datetime import timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: Longest time any one example may take (generous: the machine is shared and loaded).
EXAMPLE_DEADLINE = timedelta(seconds=2)

settings.register_profile(
    "fuzz-ci",
    max_examples=500,
    deadline=EXAMPLE_DEADLINE,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz-dev",
    max_examples=150,
    deadline=EXAMPLE_DEADLINE,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: Decorate each fuzz test with this: the CI profile under ``CI=true``.
FUZZ = settings.get_profile("fuzz-ci" if os.environ.get("CI", "").lower() == "true" else "fuzz-dev")

_unicode = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_ascii_word = st.text(st.sampled_from("abcxyzAZ09-_.~"), min_size=1, max_size=10)
_escape = st.builds(lambda b: f"%{b:02X}", st.integers(0, 255)) | st.sampled_from(
    ["%", "%2", "%zz", "%00", "%2e", "%2E%2e", "%u0041"]
)
_segment = st.lists(
    _ascii_word | _escape | _unicode | st.sampled_from([".", "..", "", ";a=b", ":", "@"]),
    max_size=4,
).map("".join)

schemes = st.sampled_from(
    ["http", "https", "HTTP", "HtTpS", "ftp", "javascript", "data", "file", "ws", "", "h\ttp"]
)
hosts = st.one_of(
    st.lists(_ascii_word, min_size=1, max_size=4).map(".".join),
    st.lists(_unicode.filter(bool), min_size=1, max_size=3).map(".".join),
    st.tuples(*[st.integers(0, 300)] * 4).map(lambda t: ".".join(map(str, t))),
    st.sampled_from(
        ["[::1]", "[2001:db8::1]", "[::ffff:127.0.0.1]", "[fe80::1%25eth0]", "0x7f.1",
         "2130706433", "localhost", "xn--", "xn--fa-hia.example", "..", "a..b", "[", "]"]
    ),
    st.builds(lambda a, b: f"{a}%{b:02x}", _ascii_word, st.integers(0, 255)),
)  # fmt: skip
userinfo = st.one_of(
    st.just(""),
    st.builds(lambda u, p: f"{u}:{p}@", _ascii_word, _ascii_word),
    st.builds(lambda u: f"{u}@", _unicode),
)
ports = st.one_of(
    st.just(""), st.integers(0, 70000).map(lambda p: f":{p}"), st.sampled_from([":", ":x"])
)
queries = st.one_of(
    st.just(""),
    st.lists(
        st.tuples(_ascii_word | _unicode | _escape, _ascii_word | _unicode | _escape),
        max_size=6,
    ).map(lambda kv: "?" + "&".join(f"{k}={v}" for k, v in kv)),
    st.sampled_from(["?", "?&&", "?a", "?a=1&a=2&utm_source=x", "?;", "?=", "?%"]),
)
fragments = st.one_of(st.just(""), st.builds(lambda f: f"#{f}", _segment))
separators = st.sampled_from(["://", ":/", ":", ":\\\\", ":////", "://\t"])


@st.composite
def urls(draw: st.DrawFn) -> str:
    """URL-shaped strings, valid and broken, plus any text at all now and then."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=60))
    path = "/".join(draw(st.lists(_segment, max_size=6)))
    return (
        draw(schemes)
        + draw(separators)
        + draw(userinfo)
        + draw(hosts)
        + draw(ports)
        + ("/" if draw(st.booleans()) else "")
        + path
        + draw(queries)
        + draw(fragments)
    )


_tags = st.sampled_from(
    ["p", "div", "span", "a", "b", "script", "style", "noscript", "nav", "footer", "header",
     "main", "article", "table", "tr", "td", "li", "ul", "h1", "template", "iframe", "svg",
     "math", "title", "textarea", "pre", "br", "img", "meta", "xmp", "plaintext", "x-y"]
)  # fmt: skip
_attr_values = st.one_of(_unicode, st.sampled_from(["hidden", "display:none", "nav", '"', "'"]))
_attrs = st.lists(
    st.tuples(
        st.sampled_from(["class", "id", "hidden", "style", "aria-hidden", "role", "x"]),
        _attr_values,
    ),
    max_size=3,
).map(lambda kv: "".join(f' {k}="{v}"' for k, v in kv))
_text = st.one_of(
    _unicode,
    st.sampled_from(
        ["&amp;", "&lt;", "&#0;", "&#x110000;", "&nbsp;", "12:00 UTC", "5 minutes ago",
         "2026-03-01", "\x00", "\r\n", "<!--", "-->", "<![CDATA[x]]>", "</", "<", ">", "&"]
    ),
)  # fmt: skip


def _element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda tag, attrs, inner, close: f"<{tag}{attrs}>{inner}" + (f"</{tag}>" if close else ""),
        _tags,
        _attrs,
        st.lists(children, max_size=4).map("".join),
        st.booleans(),
    )


html_text = st.recursive(_text, _element, max_leaves=40)


@st.composite
def html_documents(draw: st.DrawFn) -> str | bytes:
    """HTML as str or as bytes in some encoding (with or without a meta charset)."""
    body = draw(html_text)
    head = draw(
        st.sampled_from(
            ["", '<meta charset="utf-8">', '<meta charset="latin-1">', '<meta charset="x-bogus">',
             '<meta http-equiv="content-type" content="text/html; charset=shift_jis">']
        )
    )  # fmt: skip
    document = f"<!doctype html><html><head>{head}<title>t</title></head><body>{body}</body></html>"
    form = draw(st.sampled_from(["str", "utf-8", "utf-16", "latin-1", "raw"]))
    if form == "str":
        return document
    if form == "raw":
        return draw(st.binary(max_size=200))
    return document.encode(form, errors="replace")


# -- sitemaps ------------------------------------------------------------------------------

_xml_unsafe = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_lastmods = st.one_of(
    st.dates().map(str),
    st.datetimes().map(lambda d: d.isoformat() + "Z"),
    st.sampled_from(["2026-13-45", "yesterday", "", "0000-00-00T00:00:00+25:00", "2026-03-01T12"]),
)
_namespaces = st.sampled_from(
    ["", ' xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"', ' xmlns="urn:bogus"',
     ' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"']
)  # fmt: skip
_hostile = st.sampled_from(
    ["", '<!DOCTYPE urlset [<!ENTITY x "xxxxxxxxxx">]>', '<!DOCTYPE x SYSTEM "file:///etc/passwd">',
     "<?xml-stylesheet href='x'?>", "<!-- comment -->", "<![CDATA[", "\x00", "&x;"]
)  # fmt: skip


def _loc(url: str, cdata: bool) -> str:
    return f"<![CDATA[{url}]]>" if cdata and "]]>" not in url else url.translate(_xml_unsafe)


@st.composite
def sitemap_documents(draw: st.DrawFn) -> bytes:
    """Sitemaps and feeds, valid and hostile: urlset, index, text, RSS, Atom, gzip, encodings."""
    site = "https://example.com/"
    locs = draw(
        st.lists(
            st.one_of(st.builds(lambda p: site + p, _segment), urls(), st.just(site + "a?b=1&c=2")),
            max_size=12,
        )
    )
    kind = draw(st.sampled_from(["urlset", "sitemapindex", "text", "rss", "atom", "raw"]))
    prolog = draw(st.sampled_from(["", '<?xml version="1.0" encoding="UTF-8"?>', "\ufeff"]))
    hostile = draw(_hostile)
    cdata = draw(st.booleans())
    if kind == "raw":
        return draw(st.binary(max_size=300))
    if kind == "text":
        body = "\n".join(locs)
    elif kind in ("urlset", "sitemapindex"):
        item = "url" if kind == "urlset" else "sitemap"
        entries = "".join(
            f"<{item}><loc>{_loc(loc, cdata)}</loc><lastmod>{draw(_lastmods)}</lastmod>"
            f"{draw(st.sampled_from(['', '<image:image/>', '<priority>2</priority>']))}</{item}>"
            for loc in locs
        )
        body = f"{prolog}{hostile}<{kind}{draw(_namespaces)}>{entries}</{kind}>"
    elif kind == "rss":
        items = "".join(f"<item><link>{_loc(loc, cdata)}</link></item>" for loc in locs)
        body = f'{prolog}{hostile}<rss version="2.0"><channel>{items}</channel></rss>'
    else:
        items = "".join(
            f'<entry><link href="{loc.translate(_xml_unsafe)}"/></entry>' for loc in locs
        )
        body = f'{prolog}{hostile}<feed xmlns="http://www.w3.org/2005/Atom">{items}</feed>'
    if draw(st.booleans()):  # cut short
        body = body[: draw(st.integers(0, len(body)))]
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-16", "latin-1"]))
    data = body.encode(encoding, errors="replace")
    if draw(st.integers(0, 4)) == 0:
        data = gzip.compress(data)
    return data
