"""Main content versus chrome, and a page's outlinks — pure functions, no I/O.

:func:`page_text` turns a parsed page into a :class:`PageParts`: the normalised text of its
main content, the normalised text of its chrome (navigation, banners, footers, asides,
dialogs, cookie notices, link lists), its outlinks, and — on request — one
:class:`Block` per block of text with a stable key, so that a caller can learn which blocks of a
host change on every fetch while its content does not.

How a block (:mod:`~changewatch.fingerprint.blocks`) is classified, first rule that applies:

1. the ``<title>``, and every block inside an explicit main marker (``main``, ``article``,
   ``[role=main]``, ``[itemprop=articleBody]``; the innermost mark wins) are **main**;
2. every block inside a landmark that is not content (``nav``, ``aside``, page-level
   ``header``/``footer``, ``role=navigation|banner|contentinfo|complementary|search``,
   dialogs, cookie/consent regions) is **chrome**;
3. a policy ``main`` selector that matched makes every other block chrome;
4. a block of *prose* (:data:`PROSE_MIN_WORDS` words or more, less than half of its text in
   links) is **main** wherever it stands: a heuristic never moves a paragraph out of the
   content;
5. with an explicit main marker on the page, any other block (short, or mostly links) is
   **chrome**; without one, a block mostly made of links is chrome, or one whose text hash
   the caller says stands on many of the host's pages (``template_blocks``), and every other
   block is **main**.

Without an explicit main marker, where no main region can be told apart, all visible text is
content: if a landmark holds prose while the main blocks hold less than a quarter of the
page's words, the landmarks are not trusted (a whole page inside a dialog or a header) and
every block is main; if link-dense blocks outweigh the rest three to one (a page of links),
they are main.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal
from urllib.parse import urljoin

from changewatch.errors import InvalidURLError
from changewatch.fingerprint.blocks import CHROME, MAIN, Segment
from changewatch.urls import canonicalise

__all__ = [
    "MIN_MAIN_SHARE",
    "PROSE_MIN_WORDS",
    "SEPARATOR",
    "Block",
    "PageParts",
    "block_shape",
    "classify",
    "links_sha256",
    "outlinks",
    "split_regions",
]

#: A block of at least this many words, under half of them in links, is prose.
PROSE_MIN_WORDS = 7
#: A sentence around a link ("npm shares account data as mentioned in the section about
#: account data."): up to two thirds of a block may be link text if the rest holds at least
#: this many characters — a menu or a list of links has next to none of its own.
PROSE_MIN_OWN_CHARS = 32
#: Without an explicit main marker, main blocks holding fewer than this share of the words
#: mean the landmarks cannot be trusted: every block is main.
MIN_MAIN_SHARE = 0.25

# NUL separates blocks through one normalise_text call over the whole page: the HTML parser
# never leaves one in a text node (HTML §13.2.6.4.7 drops it in body text, and makes it
# U+FFFD elsewhere), NFKC and case folding leave it alone, it is no whitespace, and it is
# ASCII — an ASCII page stays on normalise_text's fast path (version 4.0 used U+FDD0, which
# sent every page through the NFKC checks).
SEPARATOR = "\x00"


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a page's text, as the orchestration sees it to learn per-host noise.

    ``key``: blake2b-64 of the block's structural path and its ordinal among the blocks of
    the same path (``body/div/nav/ul/li#3``) — stable while the page's layout is.
    ``shape``: blake2b-64 of the text with every digit made ``0`` — stable while a counter
    counts. ``text_hash``: blake2b-64 of the normalised text. ``region``: ``"main"`` or
    ``"chrome"``. ``prose``: a block of sentences. ``learnable``: learned noise may exclude
    it — never prose, never a block inside an explicit main marker (``main``, ``article``…):
    learned noise can never hide a change to what a page marks as its content.
    ``excluded``: it was left out of the hashes as learned noise (``volatile_blocks``).
    """

    key: bytes
    shape: bytes
    text_hash: bytes
    region: Literal["main", "chrome"]
    prose: bool
    path: str
    length: int
    learnable: bool = False
    excluded: bool = False


@dataclass(frozen=True, slots=True)
class PageParts:
    """The normalised texts of a page's main content and chrome, and its outlinks;
    ``redirect``: where the page sends its reader if it is a redirect stub
    (:mod:`~changewatch.fingerprint.refresh`)."""

    content: str
    chrome: str
    links: tuple[str, ...]
    blocks: tuple[Block, ...] = ()
    main_marked: bool = False
    redirect: str | None = None


def _hash8(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()


_DIGITS = str.maketrans("123456789", "000000000")


def block_shape(text: str) -> str:
    """A block's text with every ASCII digit made ``0``: a counter keeps its shape.

    >>> block_shape("1,234 views · 56 comments")
    '0,000 views · 00 comments'
    """
    return text.translate(_DIGITS)


def _is_prose(text: str, link_chars: int) -> bool:
    if 2 * link_chars > len(text) and (
        3 * link_chars > 2 * len(text) or len(text) - link_chars < PROSE_MIN_OWN_CHARS
    ):
        return False
    return len(text.split(None, PROSE_MIN_WORDS)) >= PROSE_MIN_WORDS


def classify(
    segments: list[Segment],
    pieces: list[str],
    *,
    policy_main: bool,
    template_blocks: Collection[bytes] = (),
) -> list[bool]:
    """Whether each segment is main content (``True``) or chrome, by the module's rules.

    ``pieces``: each segment's normalised text (label stamps removed).
    """
    marked = policy_main or any(s.mark == MAIN for s in segments)
    out: list[bool] = []
    for seg, text in zip(segments, pieces, strict=True):
        if seg.path.endswith("/title"):
            out.append(True)
        elif seg.mark == MAIN:
            # Inside an explicit main marker nothing depends on links: a link added around
            # words (markup) must not move them out of the content.
            out.append(True)
        elif seg.mark == CHROME or policy_main:
            out.append(False)
        elif _is_prose(text, seg.link_chars):
            out.append(True)
        elif (
            marked
            or 2 * seg.link_chars > len(text)
            or (template_blocks and _hash8(text) in template_blocks)
        ):
            out.append(False)
        else:
            out.append(True)
    if not marked and segments:
        return _trust_check(segments, pieces, out)
    return out


def _trust_check(segments: list[Segment], pieces: list[str], main: list[bool]) -> list[bool]:
    """Without a main marker: all blocks are main when the chrome holds most of the page
    and cannot be told from its content — a landmark holding prose (a page inside a dialog
    or a header), or link-dense blocks outweighing the rest (a page of links)."""
    main_words = landmark_words = dense_words = 0
    landmark_prose = False
    for seg, text, is_main in zip(segments, pieces, main, strict=True):
        if not text:
            continue
        words = text.count(" ") + 1
        if is_main:
            main_words += words
        elif seg.mark == CHROME:
            landmark_words += words
            landmark_prose = landmark_prose or _is_prose(text, seg.link_chars)
        else:
            dense_words += words
    if landmark_prose and main_words < MIN_MAIN_SHARE * (main_words + landmark_words):
        return [True] * len(segments)
    if dense_words and main_words < MIN_MAIN_SHARE * (main_words + dense_words):
        return [seg.mark != CHROME for seg in segments]
    return main


def split_regions(
    segments: list[Segment],
    pieces: list[str],
    main: list[bool],
    *,
    volatile_blocks: Collection[bytes] = (),
    with_blocks: bool = False,
) -> tuple[str, str, tuple[Block, ...]]:
    """The content and chrome texts (each the pieces of its region joined by spaces) and,
    ``with_blocks``, the :class:`Block` list.

    Blocks whose ``key`` or ``shape`` is in ``volatile_blocks`` (learned noise) are left out
    of both texts when they are learnable (:class:`Block`): learned noise never hides a
    paragraph, nor anything inside an explicit main marker.
    """
    if not (with_blocks or volatile_blocks):
        content = [p for p, m in zip(pieces, main, strict=True) if m and p]
        chrome = [p for p, m in zip(pieces, main, strict=True) if not m and p]
        return " ".join(content), " ".join(chrome), ()
    blocks: list[Block] = []
    content, chrome = [], []
    ordinals: dict[str, int] = {}
    for seg, text, is_main in zip(segments, pieces, main, strict=True):
        if not text:
            continue
        ordinal = ordinals.get(seg.path, 0)
        ordinals[seg.path] = ordinal + 1
        prose = _is_prose(text, seg.link_chars)
        key = _hash8(f"{seg.path}#{ordinal}")
        shape = _hash8(block_shape(text))
        learnable = not prose and seg.mark != MAIN
        excluded = learnable and (key in volatile_blocks or shape in volatile_blocks)
        if with_blocks:
            region: Literal["main", "chrome"] = "main" if is_main else "chrome"
            blocks.append(
                Block(
                    key,
                    shape,
                    _hash8(text),
                    region,
                    prose,
                    seg.path,
                    len(text),
                    learnable,
                    excluded,
                )
            )
        if not excluded:
            (content if is_main else chrome).append(text)
    return " ".join(content), " ".join(chrome), tuple(blocks)


def outlinks(hrefs: list[str], base_href: str | None, url: str | None) -> tuple[str, ...]:
    """The page's outlinks: ``hrefs`` canonicalised, unique, sorted.

    Relative links are resolved against ``url`` (and the page's ``<base href>``); without a
    page URL they are kept as written, fragment removed. ``javascript:``, ``mailto:``,
    ``tel:`` and fragment-only links are no outlinks; a link :func:`canonicalise` refuses
    is left out.

    >>> outlinks(["/b", "#top", "mailto:x@example.com", "https://EXAMPLE.com/b#f"], None,
    ...          "https://example.com/a")
    ('https://example.com/b',)
    """
    base = url
    if base_href and url is not None:
        base = _resolve(url, base_href) or url
    origin = _origin(base) if base is not None else None
    found: set[str] = set()
    for href in set(hrefs):
        if not href or href[0] == "#":
            continue
        if href[0] == "/" or href[:8].lower().startswith(_LINK_SCHEMES):
            # Absolute or root-relative: depends on the page's origin only, so the memo is
            # shared by every page of a host.
            link = _canonical_link(origin, href)
        else:
            link = _relative_link(base, href)
        if link is not None:
            found.add(link)
    return tuple(sorted(found))


_LINK_SCHEMES = ("http:", "https:")


def _origin(url: str) -> str | None:
    """``scheme://authority`` of an absolute http(s) URL, else ``None``.

    >>> _origin("https://example.com:8443/a/b?q"), _origin("/relative")
    ('https://example.com:8443', None)
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return None
    end = min((i for i in (rest.find(c) for c in "/?#") if i != -1), default=len(rest))
    return f"{scheme}://{rest[:end]}"


@lru_cache(maxsize=65536)
def _canonical_link(origin: str | None, href: str) -> str | None:
    """An absolute (``http(s)://``, ``//host``) or root-relative (``/path``) link,
    canonicalised; without an origin a root-relative link is kept, fragment removed."""
    if href.startswith("//"):
        if origin is None:
            return None
        absolute = origin.split(":", 1)[0] + ":" + href
    elif href[0] == "/":
        if origin is None:
            return href.split("#", 1)[0]
        absolute = origin + href
    else:
        absolute = href
    try:
        return canonicalise(absolute)
    except InvalidURLError:
        return None


@lru_cache(maxsize=16384)
def _relative_link(base: str | None, href: str) -> str | None:
    """A link relative to the page (``page.html``, ``../x``, ``?q=1``) or of another scheme
    (``mailto:``, ``javascript:``: no outlink)."""
    head = href.split("/", 1)[0]
    if ":" in head:
        return None  # a scheme other than http(s)
    if base is None:
        return href.split("#", 1)[0] or None  # no page URL to resolve it against
    absolute = _resolve(base, href)
    if absolute is None or not absolute[:8].lower().startswith(_LINK_SCHEMES):
        return None
    try:
        return canonicalise(absolute)
    except InvalidURLError:
        return None


def _resolve(base: str, href: str) -> str | None:
    try:
        return urljoin(base, href)
    except ValueError:
        return None


def links_sha256(links: tuple[str, ...]) -> bytes:
    """SHA-256 of the sorted outlinks, one a line (UTF-8)."""
    return hashlib.sha256("\n".join(links).encode("utf-8", "surrogatepass")).digest()
