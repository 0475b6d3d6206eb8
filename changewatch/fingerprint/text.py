"""The normalised visible text of a page — pure functions, no I/O."""

from __future__ import annotations

import html as html_lib
import re
import unicodedata
from collections.abc import Collection

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from changewatch.errors import PageTooComplexError
from changewatch.fingerprint.decode import decode_html, is_binary, utf8_source
from changewatch.fingerprint.guard import MAX_NESTING, normalise_bounded, too_deep
from changewatch.fingerprint.policy import DEFAULT_POLICY, FingerprintPolicy
from changewatch.fingerprint.refresh import redirect_target, stub_target
from changewatch.fingerprint.regions import (
    SEPARATOR,
    Block,
    PageParts,
    classify,
    outlinks,
    split_regions,
)
from changewatch.fingerprint.tree import drop_invisible, prepare
from changewatch.fingerprint.volatile import (
    may_hold_stamps,
    strip_label_stamps,
    strip_volatile_text,
)
from changewatch.fingerprint.walk import segment

__all__ = [
    "DEFAULT_MAX_NESTING",
    "normalise",
    "normalise_markup",
    "normalise_text",
    "page_text",
    "strip_volatile",
]

#: Pages nested deeper than this (by the model of
#: :func:`~changewatch.fingerprint.nesting.nesting_depth`) are read by a tag-stripping fallback
#: instead of lexbor, whose tree building is quadratic in nesting depth (100,000 nested
#: ``div``: 22 s).
DEFAULT_MAX_NESTING = MAX_NESTING


def _lt_count(text: str | bytes) -> int:
    """The number of ``<`` in ``text`` (counted by numpy: several times faster than
    ``bytes.count``)."""
    if isinstance(text, str):
        return text.count("<")
    return int(np.count_nonzero(np.frombuffer(text, dtype=np.uint8) == 0x3C))


_FALLBACK_DROP_RE = re.compile(
    r"<!--.*?(?:-->|$)|<(script|style|noscript|template|svg|iframe|object)\b.*?(?:</\1\s*>|$)",
    re.IGNORECASE | re.DOTALL,
)
_FALLBACK_TAG_RE = re.compile(r"<[^>]*>?")


def _fallback_text(text: str) -> str:
    """Visible text by tag stripping, for pages nested too deeply for the HTML parser."""
    text = _FALLBACK_DROP_RE.sub(" ", text)
    return html_lib.unescape(_FALLBACK_TAG_RE.sub(" ", text))


def normalise(
    html: str | bytes,
    content_type: str | None = None,
    policy: FingerprintPolicy | None = None,
    *,
    host: str | None = None,
) -> str:
    """Return the normalised text of a page's main content (see the module docstring).

    ``policy`` (default :data:`DEFAULT_POLICY`) is applied for ``host`` (see
    :meth:`FingerprintPolicy.for_host`). A binary body (:func:`is_binary`) has no text: ``""``.
    :func:`page_text` also returns the chrome and the outlinks.

    >>> normalise("<p>Hello,\\n  <b>World</b></p><script>x=1</script><!-- c -->")
    'hello, world'
    >>> normalise("<p>Built at 12:00 UTC</p><p hidden>x</p><nav>Home</nav>")
    'built'
    >>> normalise("<p>We met at 12:00 by the bridge.</p><p>Updated 12:00</p>")
    'we met at 12:00 by the bridge. updated'
    >>> normalise("<nav>Home</nav><main>Hi</main>", policy=FingerprintPolicy(regions=False))
    'home hi'
    """
    if is_binary(html, content_type):
        return ""
    return normalise_markup(html, content_type, policy, host=host)


def normalise_markup(
    html: str | bytes,
    content_type: str | None = None,
    policy: FingerprintPolicy | None = None,
    *,
    host: str | None = None,
) -> str:
    """:func:`normalise` for a body already known not to be binary (no second check).

    >>> normalise_markup("<p>Hello</p>")
    'hello'
    """
    return page_text(html, content_type, policy, host=host).content


def page_text(
    html: str | bytes,
    content_type: str | None = None,
    policy: FingerprintPolicy | None = None,
    *,
    host: str | None = None,
    url: str | None = None,
    template_blocks: Collection[bytes] = (),
    volatile_blocks: Collection[bytes] = (),
    with_blocks: bool = False,
) -> PageParts:
    """The normalised main-content and chrome texts and the outlinks of a non-binary page.

    ``url``: the page's URL, against which relative outlinks are resolved. ``template_blocks``
    (text hashes of blocks on many of the host's pages) and ``volatile_blocks`` (block keys
    and shapes learned as noise for the host) come from the store; ``with_blocks`` asks for
    the :class:`~changewatch.fingerprint.regions.Block` list. See
    :mod:`~changewatch.fingerprint.regions` for the rules.

    >>> parts = page_text("<nav><a href='/a'>Home</a></nav><main><p>Hi</p></main>",
    ...                   url="https://example.com/x")
    >>> parts.content, parts.chrome, parts.links
    ('hi', 'home', ('https://example.com/a',))

    A page over a limit of :mod:`~changewatch.fingerprint.guard` raises
    :class:`~changewatch.errors.PageTooComplexError`, naming ``url`` when given.
    """
    try:
        return _page_parts(
            html, content_type, policy, host, url, template_blocks, volatile_blocks, with_blocks
        )
    except PageTooComplexError as exc:
        if url is None or exc.url is not None:
            raise
        raise PageTooComplexError(exc.limit_name, exc.limit, exc.found, url) from None


def _page_parts(
    html: str | bytes,
    content_type: str | None,
    policy: FingerprintPolicy | None,
    host: str | None,
    url: str | None,
    template_blocks: Collection[bytes],
    volatile_blocks: Collection[bytes],
    with_blocks: bool,
) -> PageParts:
    rules = (policy or DEFAULT_POLICY).for_host(host)
    source: str | bytes | None = utf8_source(html, content_type)
    if source is None:
        source = decode_html(html, content_type)
    if too_deep(source, _lt_count(source)):
        text = _strip(rules, normalise_text(_fallback_text(decode_html(html, content_type))))
        return PageParts(text, "", ())
    tree = LexborHTMLParser(source)
    found = prepare(tree, rules)
    if found is None:
        return PageParts("", "", ())
    root = tree.root
    redirect = redirect_target(found.refresh, found.base, url) if found.refresh else None
    if not rules.regions and not found.policy_main:
        return _flat_text(tree, rules, url, with_blocks, redirect)
    hrefs: list[str] = []
    segments = segment(root, found.main_ids, found.chrome_ids, hrefs) if root is not None else []
    links = outlinks(hrefs, found.base, url)
    joined = normalise_text(SEPARATOR.join(s.text for s in segments))
    pieces = joined.split(SEPARATOR)
    if len(pieces) != len(segments):
        # A separator in the page's own text (the parser leaves none; kept as a guard): the
        # blocks cannot be told apart after normalising, so all of the text is content.
        text = _strip(rules, joined.replace(SEPARATOR, " "))  # (and a page without text)
        return PageParts(text, "", links, redirect=stub_target(redirect, text))
    pieces = _strip_pieces(rules, joined, pieces)
    if found.policy_main or rules.regions:
        main = classify(
            segments, pieces, policy_main=found.policy_main, template_blocks=template_blocks
        )
    else:
        main = [True] * len(segments)
    content, chrome, blocks = split_regions(
        segments, pieces, main, volatile_blocks=volatile_blocks, with_blocks=with_blocks
    )
    return PageParts(
        content,
        "" if rules.boilerplate else chrome,
        links,
        blocks,
        bool(found.main_ids),
        stub_target(redirect, content),
    )


def _flat_text(
    tree: LexborHTMLParser,
    rules: FingerprintPolicy,
    url: str | None,
    with_blocks: bool,
    redirect: str | None,
) -> PageParts:
    """``regions = false``: all visible text is content, read by lexbor in one call (the
    speed of version 3), stamps judged with the whole text as one block. The blocks, when
    asked for, are still walked (for their keys); learned noise needs regions."""
    root = tree.root
    if root is None:
        return PageParts("", "", ())
    text = _strip(rules, normalise_text(root.text(separator=" ", skip_empty=True)))
    hrefs = [
        href.strip()
        for node in tree.css("a[href], area[href]")
        if isinstance(href := node.attributes.get("href"), str)
    ]
    base_node = tree.css_first("base[href]")
    base = base_node.attributes.get("href") if base_node is not None else None
    links = outlinks(hrefs, base.strip() if isinstance(base, str) else None, url)
    blocks: tuple[Block, ...] = ()
    if with_blocks:
        segments = segment(root, set(), set())
        texts = [normalise_text(s.text) for s in segments]
        pieces = _strip_pieces(rules, " ".join(texts), texts)
        blocks = split_regions(segments, pieces, [True] * len(segments), with_blocks=True)[2]
    return PageParts(text, "", links, blocks, redirect=stub_target(redirect, text))


def _strip_pieces(rules: FingerprintPolicy, joined: str, pieces: list[str]) -> list[str]:
    """Each block's text stripped of spaces at its ends and of its volatile stamps; blocks
    without ``:`` and a digit or " ago" (where every default stamp is anchored) are not
    looked at."""
    if rules._volatile_re is not None:
        return [_strip(rules, piece.strip()) for piece in pieces]
    if not rules._label_stamps or not may_hold_stamps(joined):
        return [piece.strip() for piece in pieces]
    return [
        strip_label_stamps(piece.strip()) if may_hold_stamps(piece) else piece.strip()
        for piece in pieces
    ]


def _strip(rules: FingerprintPolicy, text: str) -> str:
    return strip_volatile_text(
        text, rules._volatile_re, default=rules._label_stamps, collapsed=True
    )


def _visible_text(tree: LexborHTMLParser, rules: FingerprintPolicy) -> str:
    """The raw visible text of a parsed page: invisible elements dropped, nothing else
    (the floor ``benchmarks/fingerprint.py`` measures against)."""
    if not drop_invisible(tree, rules):
        return ""
    root = tree.root
    return root.text(separator=" ", skip_empty=True) if root is not None else ""


def strip_volatile(text: str, policy: FingerprintPolicy | None = None) -> str:
    """Remove the policy's volatile stamps from normalised text taken as one block: the
    default stamps where they stand as labels, added patterns wherever they match.

    >>> strip_volatile("generated at 2026-03-01t12:00:00z by node-7, updated 5 minutes ago")
    'generated by node-7, updated'
    >>> strip_volatile("the ceremony opens at 2:30pm after a parade through the old town")
    'the ceremony opens at 2:30pm after a parade through the old town'
    """
    rules = policy or DEFAULT_POLICY
    return strip_volatile_text(
        text, rules._volatile_re, default=rules._label_stamps, collapsed=False
    )


def normalise_text(text: str) -> str:
    """NFKC, case-fold and collapse whitespace; idempotent.

    >>> normalise_text("  Ｆｕｌｌ\\u00a0WIDTH  ")
    'full width'
    """
    text = " ".join(text.split())
    if text.isascii():
        return text.lower()  # ASCII is already NFKC and case-folds to lower case
    if not unicodedata.is_normalized("NFKC", text):
        # NFKC text has its marks in order already: nothing for NFKC to sort, and case
        # folding adds at most a mark or two before a run (a quick check, 8x cheaper).
        text = _stream_safe(text)
    if len(text) > _BOUNDED_FROM:
        # NFKC expands up to 18× (U+FDFA): long text is folded in pieces, under a cap.
        return normalise_bounded(text, _fold)
    return _normalise_collapsed(text)


#: Text longer than this (in characters) is normalised in pieces under the caps of
#: :func:`~changewatch.fingerprint.guard.normalise_bounded`.
_BOUNDED_FROM = 1 << 16


#: The most non-starters (characters of canonical combining class other than 0, counted in
#: their NFKD) a run of them may hold before :func:`_stream_safe` puts U+034F COMBINING
#: GRAPHEME JOINER in: the limit of Unicode's Stream-Safe Text Format (UAX #15 §13).
MAX_NON_STARTERS = 30
_GRAPHEME_JOINER = "\u034f"


def _stream_safe(text: str) -> str:
    """``text`` with U+034F before each character that is (or decomposes to) non-starters
    only and would take a run of them past :data:`MAX_NON_STARTERS` non-starters.

    NFKC sorts a run of marks by their combining classes by insertion, quadratic in the
    run (CPython: "a" + "\u0301\u0316" × 64,000 took 13.8 s); the joiner is a starter that
    nothing composes with, so it ends the run, and normalising is linear. Real text holds a
    few marks on a base (UAX #15 §13 chose 30 as far beyond any), so it is left as it was;
    a run is counted from its first pure mark (a precomposed base's own marks are not
    counted, unlike UAX #15, which cuts a few marks sooner). The joiner stays in the text:
    folding never lengthens such a run, so normalising again adds none (idempotent).

    >>> marks = _stream_safe("a" + "\u0301" * 61)
    >>> [len(run) for run in marks[1:].split("\u034f")]
    [30, 30, 1]
    >>> _stream_safe("e\u0301\u0316") == "e\u0301\u0316"
    True
    """
    if _MARKS[0] is None:
        _build_marks()
    runs = _MARKS[0]
    assert runs is not None
    if runs.search(text) is None:
        return text
    weights = _MARK_WEIGHTS
    out: list[str] = []
    last = 0
    for match in runs.finditer(text):
        count = 0
        for at in range(match.start(), match.end()):
            weight = weights.get(text[at], 0)
            if weight == 0:
                count = 0  # a starter beyond the BMP (an emoji): the run ends
                continue
            if count + weight > MAX_NON_STARTERS:
                out.append(text[last:at])
                out.append(_GRAPHEME_JOINER)
                last = at
                count = 0
            count += weight
    out.append(text[last:])
    return "".join(out)


#: Characters that are or decompose (NFKD) to non-starters only, with how many they
#: decompose to (1 or 2: U+0344, U+0F73, U+0F75, U+0F81); built on first need.
_MARK_WEIGHTS: dict[str, int] = {}
#: Runs of such characters long enough to pass :data:`MAX_NON_STARTERS` (and of any
#: characters beyond the BMP, where the loop tells marks from others).
_MARKS: list[re.Pattern[str] | None] = [None]
#: Every non-starter is below this code point (planes 2 and up hold ideographs, tags,
#: variation selectors and private use: starters; a unit test checks every code point).
_MARKS_BELOW = 0x20000


def _build_marks() -> None:
    """Fill :data:`_MARK_WEIGHTS` and :data:`_MARKS` from ``unicodedata`` (0.04 s)."""
    combining = unicodedata.combining
    for code in range(_MARKS_BELOW):
        char = chr(code)
        if combining(char) or unicodedata.decomposition(char):
            form = unicodedata.normalize("NFKD", char)
            if all(combining(part) for part in form):
                _MARK_WEIGHTS[char] = len(form)
    shortest = MAX_NON_STARTERS // max(_MARK_WEIGHTS.values()) + 1
    # re tests a set of BMP characters by a bitmap, one with others by a list of ranges
    # (0.56 µs a character for these 187): the marks beyond the BMP are matched as any
    # character there (one range), and told apart in the loop (0.025 µs a character).
    members = "".join(re.escape(char) for char in sorted(_MARK_WEIGHTS) if char <= "\uffff")
    _MARKS[0] = re.compile(f"(?:[{members}]|[\\U00010000-\\U0010ffff]){{{shortest},}}")


def _fold(text: str) -> str:
    """NFKC, case fold, NFKC: what :func:`_normalise_collapsed` does before collapsing."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def _normalise_collapsed(text: str) -> str:
    """:func:`normalise_text` of non-ASCII ``text`` whose whitespace is collapsed already."""
    changed = False
    if not unicodedata.is_normalized("NFKC", text):
        # NFKC decomposes each character fully before composing, so a character replaced by
        # its full decomposition normalises alike; U+2026 "…" (NFKD "...") is the commonest
        # reason web text is not NFKC, and str.replace is much cheaper than normalize.
        text = text.replace("\u2026", "...")
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
            changed = True
    text = text.casefold()  # never makes whitespace (a unit test checks every code point)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
        changed = True
    # NFKC can turn a character into a space sequence (U+00A8 → " ̈"): collapse again.
    return " ".join(text.split()) if changed else text
