"""Client-side redirects: a page whose ``<meta http-equiv="refresh">`` sends the reader
elsewhere at once — pure, no I/O.

A *redirect stub* ("You should be redirected quickly, if not click here") is what a site
serves in place of a page it moved, or on and off while it deploys: its text is not the
page's content, any more than the body of an HTTP 301 is. A page is a stub when its refresh
names a URL other than the page's own and fires within :data:`MAX_REDIRECT_DELAY` seconds
(search engines read an instant meta refresh as a permanent redirect), and its main content
is short (:data:`MAX_STUB_WORDS`); a refresh without a URL, or to the page itself, reloads
it and is no redirect.

The ``content`` attribute is read as HTML's "shared declarative refresh steps" read it
(HTML Living Standard §4.2.5.3): a delay in seconds, then ``;``/``,``, then an optional
``url=``, then the URL, optionally in quotes.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from changewatch.errors import InvalidURLError
from changewatch.urls import canonicalise

__all__ = [
    "MAX_REDIRECT_DELAY",
    "MAX_STUB_WORDS",
    "parse_refresh",
    "redirect_target",
    "stub_target",
]

#: A refresh that fires within this many seconds, to another URL, makes the page a stub.
MAX_REDIRECT_DELAY = 5
#: ... if its main content is at most this many words: a page of real content that also
#: carries a quick refresh is compared as content (a stub says "redirecting", "moved", "click
#: here"), so a refresh can never hide an edit to a page's text.
MAX_STUB_WORDS = 100

_WHITESPACE = "\t\n\f\r "
_NEVER = 10**9
#: A refresh value longer than this is not read (a URL is at most a few KiB).
_MAX_CONTENT = 8192


def parse_refresh(content: str) -> tuple[int, str | None] | None:
    """The delay (whole seconds) and the URL (``None``: reload) of a refresh ``content``,
    or ``None`` if the value is not one.

    >>> parse_refresh("0; url=https://example.com/new")
    (0, 'https://example.com/new')
    >>> parse_refresh("5;URL='/moved'"), parse_refresh("300"), parse_refresh("soon")
    ((5, '/moved'), (300, None), None)
    """
    if len(content) > _MAX_CONTENT:
        return None
    text = content.lstrip(_WHITESPACE)
    digits = len(text) - len(text.lstrip("0123456789"))
    if not digits and not text.startswith("."):
        return None
    # More than 9 digits is longer than any redirect waits (and int() refuses 4,300).
    delay = int(text[:digits]) if 0 < digits <= 9 else _NEVER if digits else 0
    text = text[digits:].lstrip("0123456789.")
    if not text:
        return delay, None
    if text[0] not in _WHITESPACE + ";,":
        return None
    text = text.lstrip(_WHITESPACE)
    if text[:1] in (";", ","):
        text = text[1:].lstrip(_WHITESPACE)
    if not text:
        return delay, None
    if text[:3].lower() == "url":
        rest = text[3:].lstrip(_WHITESPACE)
        if rest.startswith("="):
            text = rest[1:].lstrip(_WHITESPACE)
    if text[:1] in ("'", '"'):
        quote, text = text[0], text[1:]
        text = text.split(quote, 1)[0]
    text = text.strip(_WHITESPACE)
    return delay, text or None


def redirect_target(content: str, base: str | None, url: str | None) -> str | None:
    """Where a refresh ``content`` sends the reader, resolved against ``base`` (the page's
    ``<base href>``, else its ``url``), if it makes the page a redirect stub; else ``None``.

    >>> redirect_target("0; url=/en/", None, "https://example.com/en")
    'https://example.com/en/'
    >>> redirect_target("0; url=/en", None, "https://example.com/en") is None  # itself
    True
    >>> redirect_target("600; url=/other", None, "https://example.com/en") is None  # late
    True
    """
    parsed = parse_refresh(content)
    if parsed is None or parsed[1] is None or parsed[0] > MAX_REDIRECT_DELAY:
        return None
    target = parsed[1]
    anchor = url if base is None else (urljoin(url, base) if url else base)
    if anchor:
        try:
            target = urljoin(anchor, target)
        except ValueError:
            return None
    if urlsplit(target).scheme.lower() not in ("http", "https"):
        return None
    if url is not None and _same_page(target, url):
        return None
    return target


def stub_target(target: str | None, content: str) -> str | None:
    """``target`` (a page's :func:`redirect_target`) if the page's normalised main
    ``content`` is short enough for a redirect stub (:data:`MAX_STUB_WORDS`), else ``None``.

    >>> stub_target("https://a.example/", "you should be redirected, if not click here.")
    'https://a.example/'
    >>> stub_target("https://a.example/", "a " * 200) is None
    True
    """
    if target is None or content.count(" ") >= MAX_STUB_WORDS:
        return None
    return target


def _same_page(target: str, url: str) -> bool:
    """Whether ``target`` is the page itself (canonicalised alike; a URL that cannot be
    canonicalised is compared as written)."""
    try:
        return canonicalise(target) == canonicalise(url)
    except InvalidURLError:
        return target == url
