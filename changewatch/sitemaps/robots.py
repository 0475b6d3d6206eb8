"""robots.txt discovery: which sitemaps a site names, and when that cannot be known.

:func:`discover_site` fetches a site's robots.txt and reads its ``Sitemap:`` lines
(:func:`robots_sitemaps`). What robots.txt answers decides what the walk may conclude, because
a sitemap the walk never hears of makes every page it lists look *vanished*:

* **200 with ``Sitemap:`` lines** — those sitemaps;
* **200 without any**, or **404 / 410** (RFC 9309 §2.3.1.3: "unavailable", the site has no
  robots.txt) — the conventional ``/sitemap.xml``;
* **any other answer** — other 4xx (401, 403, 429…), 5xx, a network error or timeout, a
  redirect the fetcher refuses (to a private address, a loop), a body that is not text (HTML,
  binary, gzip) — the site's sitemaps are *unknown*: an error, and no guess. RFC 9309
  §2.3.1.4 treats an unreachable robots.txt as "disallow everything"; for reconciliation the
  safe reading is the same: nothing may be concluded from absence;
* **a robots.txt over** :data:`ROBOTS_MAX_BYTES` — the sitemaps of its complete lines are
  walked, and the cut is an error: a ``Sitemap:`` line past it is unknown.

Every error makes the host incomplete (no vanished pages computed). docs/sitemaps.md
("Discovery") has the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from ada_url import URL, join_url

from changewatch.errors import FetchError, SitemapError, UnsafeURLError
from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.model import Cutoff
from changewatch.sitemaps.netguard import character_refusal, check_url

__all__ = [
    "ROBOTS_MAX_BYTES",
    "Discovery",
    "discover",
    "discover_site",
    "not_text_reason",
    "robots_sitemaps",
]

#: robots.txt is read up to this size (RFC 9309 §2.5: parse at least 500 kibibytes).
ROBOTS_MAX_BYTES: Final = 512_000
#: robots.txt answers meaning "this site has no robots.txt" (RFC 9309 §2.3.1.3).
ABSENT_STATUSES: Final = frozenset({404, 410})

_SITEMAP_KEYS = frozenset({"sitemap", "sitemaps", "site-map", "site map"})
_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
#: C0 controls other than tab, LF, VT, FF and CR: no text file holds them.
_BINARY = frozenset(range(32)) - {9, 10, 11, 12, 13}

#: How the sitemaps of a :class:`Discovery` were found.
DiscoverySource = Literal["listed", "none listed", "no robots.txt", "unknown"]


def _decode(body: bytes) -> str:
    """The text of a robots.txt: its byte-order mark honoured, else UTF-8 (errors replaced)."""
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(encoding, "replace")
    return body.decode("utf-8", "replace")


def not_text_reason(body: bytes, content_type: str | None = None) -> str | None:
    """Why ``body`` is not a robots.txt (markup, binary, gzip), or ``None`` when it is text.

    A soft-404 page served with 200 is the common case: an HTML page names no sitemap, and
    reading it as "no Sitemap: lines" would make the walk guess.

    >>> not_text_reason(b"User-agent: *\\nSitemap: /s.xml\\n") is None
    True
    >>> not_text_reason(b"  <!DOCTYPE html><title>Not found</title>", "text/html")
    'an HTML or XML document (Content-Type text/html), not a robots.txt'
    >>> not_text_reason(b"\\x1f\\x8b\\x08\\x00")
    'gzip data, not a robots.txt'
    """
    if body.startswith(b"\x1f\x8b"):
        return "gzip data, not a robots.txt"
    text = _decode(body)
    served = f" (Content-Type {content_type})" if content_type else ""
    if text.lstrip().startswith("<"):
        return f"an HTML or XML document{served}, not a robots.txt"
    for char in text:
        if ord(char) in _BINARY:
            return f"binary data (control character U+{ord(char):04X}){served}, not text"
    return None


def robots_sitemaps(body: bytes, base: str) -> list[str]:
    """The sitemap URLs a robots.txt lists, in order, without repeats.

    ``Sitemap:`` lines are matched case-insensitively anywhere in the file, in or out of
    groups (RFC 9309 §2.2.4); ``site-map``/``sitemaps`` typos and a bare absolute URL on
    a line of its own are accepted as crawler-commons does. Relative URLs are resolved
    against ``base`` (the robots.txt URL); comments (``#`` to the end of the line) and
    unusable URLs are dropped. A UTF-8 or UTF-16 byte-order mark is honoured.

    >>> robots_sitemaps(b"User-agent: *\\nSITEMAP : /a.xml # main\\n", "https://x.org/robots.txt")
    ['https://x.org/a.xml']
    """
    # A dict keeps the order of first appearance with a constant-time repeat check: the list
    # test it replaces made a 493 KB robots.txt of 24,000 Sitemap: lines cost 6.15 s.
    found: dict[str, None] = {}
    for line in _decode(body).splitlines():
        line = line.partition("#")[0].strip()
        key, colon, value = line.partition(":")
        key = key.strip().lower()
        if colon and key in _SITEMAP_KEYS:
            candidate = value.strip()
        elif line.lower().startswith(("http://", "https://")) and " " not in line:
            candidate = line
        else:
            continue
        if not candidate or character_refusal(candidate) is not None:
            continue
        try:
            url = check_url(join_url(base, candidate))
        except (ValueError, UnsafeURLError):
            continue
        found.setdefault(url)
    return list(found)


@dataclass(frozen=True, slots=True)
class Discovery:
    """What a site's robots.txt says about its sitemaps."""

    robots_url: str
    #: The sitemaps to walk (empty when they are unknown).
    sitemaps: tuple[str, ...]
    #: ``listed`` (its ``Sitemap:`` lines), ``none listed`` or ``no robots.txt`` (404/410:
    #: ``/sitemap.xml``), ``unknown`` (robots.txt could not be read: nothing to walk).
    source: DiscoverySource
    #: ``(URL, message)`` of every failure; any one makes the host incomplete.
    errors: tuple[tuple[str, str], ...] = ()


def _read(
    robots: str, client: SafeClient, cutoff: Cutoff | None
) -> tuple[bytes, str, str | None, bool]:
    """``(body, final URL, Content-Type, cut)``: at most :data:`ROBOTS_MAX_BYTES` bytes; when
    the file is longer, ``cut`` is true and the body ends at its last complete line."""
    body = bytearray()
    with client.stream(robots, cutoff=cutoff) as response:
        final, content_type = response.final_url, response.content_type
        for piece in response.iter_bytes():
            body += piece
            if len(body) > ROBOTS_MAX_BYTES:
                del body[ROBOTS_MAX_BYTES:]
                end = max(body.rfind(b"\n"), body.rfind(b"\r"))
                del body[end + 1 :]
                return bytes(body), final, content_type, True
    return bytes(body), final, content_type, False


def discover_site(site_url: str, client: SafeClient, *, cutoff: Cutoff | None = None) -> Discovery:
    """Read the robots.txt of the site at ``site_url``: its sitemaps, or why they are unknown.

    Never raises for what the site answers (every failure is in ``errors``); an invalid
    ``site_url`` raises :class:`~changewatch.errors.UnsafeURLError` or ``ValueError``.
    """
    site = URL(check_url(site_url))
    origin = f"{site.protocol}//{site.host}"
    robots = f"{origin}/robots.txt"
    fallback = (f"{origin}/sitemap.xml",)
    try:
        body, final, content_type, cut = _read(robots, client, cutoff)
    except FetchError as exc:
        if exc.status in ABSENT_STATUSES and not isinstance(exc, UnsafeURLError):
            return Discovery(robots, fallback, "no robots.txt")
        return Discovery(robots, (), "unknown", ((robots, _unreachable(robots, exc)),))
    except SitemapError as exc:
        return Discovery(robots, (), "unknown", ((robots, _unreachable(robots, exc)),))
    refusal = not_text_reason(body, content_type)
    if refusal is not None:
        message = f"robots.txt is {refusal}: the site's sitemaps are unknown"
        return Discovery(robots, (), "unknown", ((robots, message),))
    listed = tuple(robots_sitemaps(body, final))
    errors: tuple[tuple[str, str], ...] = ()
    if cut:
        errors = (
            (
                robots,
                f"robots.txt is longer than {ROBOTS_MAX_BYTES:,} bytes: read up to its last "
                f"complete line before that ({len(listed)} sitemaps); any Sitemap: line after "
                "it is unknown",
            ),
        )
    if listed:
        return Discovery(robots, listed, "listed", errors)
    return Discovery(robots, () if cut else fallback, "none listed", errors)


def _unreachable(robots: str, exc: SitemapError) -> str:
    detail = str(exc).removeprefix(f"{robots}: ")
    return f"robots.txt unreachable ({detail}): the site's sitemaps are unknown"


def discover(site_url: str, client: SafeClient) -> list[str]:
    """The sitemaps of the site at ``site_url`` (:func:`discover_site`).

    Raises :class:`~changewatch.errors.FetchError` naming robots.txt when they cannot be
    known (robots.txt unreachable, not text, or cut at :data:`ROBOTS_MAX_BYTES`); a missing
    robots.txt (404, 410) or one without ``Sitemap:`` lines gives ``/sitemap.xml``.
    """
    found = discover_site(site_url, client)
    if found.errors:
        url, message = found.errors[0]
        raise FetchError(url, message)
    return list(found.sitemaps)
