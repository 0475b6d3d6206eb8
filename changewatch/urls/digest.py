"""The URL digest, and what of a canonical URL is kept — pure functions, no I/O."""

from __future__ import annotations

import hashlib

from changewatch.urls.canon import canonicalise
from changewatch.urls.policy import CanonPolicy

__all__ = ["digest_canonical", "stored_url", "strip_query", "url_digest", "url_host"]


def url_digest(
    url: str, policy: CanonPolicy | None = None, *, max_length: int | None = None
) -> bytes:
    """Return the 16-byte blake2b digest of the canonical form of ``url``.

    The digest is stable across processes, machines and Python versions (``hashlib``, not
    ``hash()``), so it can key a shared store and a persisted seen-set.

    >>> url_digest("http://example.com/").hex()
    '9aba6a18c5a5d94534a3b99c485d4547'
    """
    hasher = _BLAKE2B_128.copy()  # digest_canonical, inlined
    hasher.update(canonicalise(url, policy, max_length=max_length).encode())
    return hasher.digest()


# Copying a ready blake2b-128 state is about a third cheaper than constructing one per URL.
_BLAKE2B_128 = hashlib.blake2b(digest_size=16)


def digest_canonical(canonical: str) -> bytes:
    """Return the 16-byte blake2b digest of an already canonical URL."""
    hasher = _BLAKE2B_128.copy()
    hasher.update(canonical.encode("utf-8"))
    return hasher.digest()


def url_host(canonical: str) -> str:
    """Return the host (with a non-default port) of a canonical URL.

    >>> url_host("https://example.com:8443/a?b")
    'example.com:8443'
    """
    return canonical.partition("://")[2].partition("/")[0]


def strip_query(canonical: str) -> str:
    """Return a canonical URL without its query string (or routing fragment).

    >>> strip_query("https://example.com/a?session=1")
    'https://example.com/a'
    """
    return canonical.partition("?")[0].partition("#")[0]


def stored_url(canonical: str, policy: str) -> str | None:
    """The form of a canonical URL kept under a URL-storage policy (``full``, ``no-query``,
    ``none``): the URL, the URL without its query, or nothing.

    >>> stored_url("https://example.com/a?q=1", "no-query")
    'https://example.com/a'
    >>> stored_url("https://example.com/a?q=1", "none") is None
    True
    """
    if policy == "full":
        return canonical
    if policy == "no-query":
        return strip_query(canonical)
    return None
