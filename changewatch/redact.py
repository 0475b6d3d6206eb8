"""Secrets kept out of what changewatch prints and logs — pure functions, no I/O.

Database and Redis URLs carry passwords in their userinfo (``scheme://user:password@host``).
Every message that may name such a URL goes through :func:`redact_url` or :func:`scrub`: the
store's and the seen-sets' error messages, the CLI's error lines and logs. This is the one
place that knows how.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

__all__ = ["redact_url", "scrub", "url_secret"]

#: ``scheme://user:password@`` anywhere in a text: group 1 keeps ``scheme://user:``. The
#: password runs to the last ``@`` before the host (passwords may hold an unencoded ``@``).
_USERINFO_RE = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)[^/\s]*@")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")

#: What a hidden secret is shown as.
HIDDEN = "***"


def url_secret(url: str) -> str | None:
    """The password in a URL's userinfo (percent-decoded), or ``None``.

    >>> url_secret("postgresql+psycopg://app:s%40cret@db/x"), url_secret("redis://h:6379/0")
    ('s@cret', None)
    """
    match = _USERINFO_RE.match(url)
    if match is None:
        return None
    password = url[match.end(1) : match.end() - 1]
    return unquote(password) or None


def redact_url(url: str) -> str:
    """The URL with the password of its userinfo shown as ``***``.

    >>> redact_url("postgresql+psycopg://app:secret@db:5432/crawl")
    'postgresql+psycopg://app:***@db:5432/crawl'
    >>> redact_url("redis://:p@ss@cache:6379/0"), redact_url("sqlite:///x.db")
    ('redis://:***@cache:6379/0', 'sqlite:///x.db')
    """
    if _SCHEME_RE.match(url) is None:
        return url
    return _USERINFO_RE.sub(rf"\1{HIDDEN}@", url, count=1)


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every URL password and each of ``secrets`` (raw and percent-encoded
    forms) shown as ``***``.

    >>> scrub("connect to redis://:hunter2@h:1/0 failed: auth hunter2", ["hunter2"])
    'connect to redis://:***@h:1/0 failed: auth ***'
    """
    text = _USERINFO_RE.sub(rf"\1{HIDDEN}@", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, HIDDEN)
    return text
