"""URL canonicalisation and the URL digest — pure functions, no I/O.

Canonicalisation decides what "the same page" means. ``canonicalise`` parses the URL as
browsers do (WHATWG URL Standard, with the ada parser: UTS #46 hosts, every IPv4 form,
IPv6, percent-encode sets, dot segments, ``\\`` as ``/``), then applies the rules a
crawler needs on top of it:

* only ``http`` and ``https``; control characters, bad hosts, bad ports and URLs over
  ``max_length`` raise :class:`InvalidURLError` with ``.reason``;
* one trailing dot of the host is dropped; hosts with empty labels, labels over 63 or
  names over 253 characters, or ``"`` ````` ``{`` ``}`` are refused;
* userinfo is removed (credentials never reach the store or the logs), the default port
  dropped, the empty path is ``/`` (RFC 3986 §6.2.3);
* in path and query, percent-encodings are upper-cased and encoded unreserved characters
  decoded (RFC 3986 §6.2.2.1–2); reserved ones (``%2F``, ``%3F``, ``%23``, ``%25``,
  ``%26``, ``%3D``, ``%3B``, ``%2B``…) stay encoded; characters RFC 3986 cannot hold are
  UTF-8 percent-encoded; runs of ``/`` in the path collapse to one;
* tracking parameters (:data:`TRACKING_PARAMETERS`, ``utm_*``) are removed, keys compared
  case-insensitively; the remaining pairs are sorted, blank values and duplicates kept;
* the fragment is dropped.

A :class:`CanonPolicy` adds per-host rules (extra parameters to drop or keep, session ids,
trailing slashes, query order, routing fragments). :func:`canon_version` names the rules
and the policy together; it is stored with every snapshot. docs/canonicalisation.md is
the rule-by-rule reference, with sources and examples.

The package's modules: :mod:`~changewatch.urls.canon` (``canonicalise``),
:mod:`~changewatch.urls.policy` (policies and :func:`canon_version`),
:mod:`~changewatch.urls.escapes` (percent-encoding), :mod:`~changewatch.urls.digest` (the
digest and the stored form) and :mod:`~changewatch.urls.reasons` (why ada refused a URL).
"""

from changewatch.urls.canon import canonicalise
from changewatch.urls.digest import digest_canonical, stored_url, strip_query, url_digest, url_host
from changewatch.urls.policy import (
    CANON_RULES_VERSION,
    CANON_VERSION,
    DEFAULT_MAX_URL_LENGTH,
    DEFAULT_POLICY,
    SESSION_ID_PARAMETERS,
    TRACKING_PARAMETERS,
    TRACKING_PREFIXES,
    CanonPolicy,
    HostPolicy,
    canon_version,
)

__all__ = [
    "CANON_RULES_VERSION",
    "CANON_VERSION",
    "DEFAULT_MAX_URL_LENGTH",
    "DEFAULT_POLICY",
    "SESSION_ID_PARAMETERS",
    "TRACKING_PARAMETERS",
    "TRACKING_PREFIXES",
    "CanonPolicy",
    "HostPolicy",
    "canon_version",
    "canonicalise",
    "digest_canonical",
    "stored_url",
    "strip_query",
    "url_digest",
    "url_host",
]
