"""The rules of a reconciliation: what a listed entry is and what its ``lastmod`` says —
pure functions, no I/O.

One rule set, written once over arrays (:func:`judge`): the job applies it to a batch of
entries whether their stored pages came from an in-memory :class:`~changewatch.reconcile.
index.HostIndex` or from batched lookups. :func:`classify` and :func:`lastmod_verdict` are
the same rules for one entry, for readers and tests.

* **missing** — listed, never stored; **stale** — stored, but the entry's ``lastmod`` is
  newer than the page's ``last_seen``; **fresh** — stored and not stale (including entries
  without a ``lastmod``).
* The **lastmod verdict** of a fresh entry compares its ``lastmod`` with the history the
  store observed (docs/reconcile.md): ``ahead`` — ``last_changed < lastmod <= last_seen``
  (``lastmod`` moved while the content did not); ``behind`` — ``lastmod <
  previous_last_seen`` (the old version was still seen after ``lastmod``); ``agrees`` —
  ``previous_last_seen <= lastmod <= last_changed``. No verdict without a ``lastmod``, for a
  page never stored, for a ``lastmod`` after the last fetch, or for a page with one version
  whose ``lastmod`` precedes its first fetch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from changewatch.reconcile.index import NO_TIME, to_micros
from changewatch.reconcile.values import StoredPage, Verdict
from changewatch.urls import CanonPolicy, canonicalise, url_host

__all__ = ["Judged", "ListedKind", "classify", "judge", "lastmod_verdict", "site_host"]

ListedKind = Literal["missing", "stale", "fresh"]

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


class Judged(NamedTuple):
    """:func:`judge`'s answer for a batch of stored entries: one mask each."""

    stale: Bools
    ahead: Bools
    behind: Bools
    agrees: Bools


def judge(lastmod: I64, last_seen: I64, last_changed: I64, previous: I64) -> Judged:
    """Classify stored entries and judge their ``lastmod``, over arrays of microseconds
    (:func:`~changewatch.reconcile.index.to_micros`; :data:`~changewatch.reconcile.index.
    NO_TIME` for "none"). An entry is fresh where it is not stale; at most one verdict
    holds per entry.

    >>> day = 86_400_000_000
    >>> j = judge(*(np.array(v, np.int64) for v in ([2 * day, 4 * day, 7 * day, 10 * day],
    ...     [9 * day] * 4, [5 * day] * 4, [3 * day] * 4)))
    >>> j.stale.tolist(), j.behind.tolist(), j.agrees.tolist(), j.ahead.tolist()
    ([False, False, False, True], [True, False, False, False], [False, True, False, False], \
[False, False, True, False])
    """
    dated = lastmod != NO_TIME
    stale = dated & (lastmod > last_seen)
    judged = dated & ~stale
    ahead = judged & (lastmod > last_changed)
    either = judged & ~ahead & (previous != NO_TIME)
    behind = either & (lastmod < previous)
    return Judged(stale, ahead, behind, either & ~behind)


def _one(lastmod: datetime | None, page: StoredPage) -> Judged:
    return judge(
        np.array([to_micros(lastmod)], np.int64),
        np.array([to_micros(page.last_seen)], np.int64),
        np.array([to_micros(page.last_changed)], np.int64),
        np.array([to_micros(page.previous_last_seen)], np.int64),
    )


def classify(lastmod: datetime | None, page: StoredPage | None) -> ListedKind:
    """What one listed entry is: ``missing``, ``stale`` or ``fresh`` (:func:`judge`).

    >>> from datetime import datetime, UTC
    >>> t = datetime(2026, 1, 2, tzinfo=UTC)
    >>> page = StoredPage(b"d" * 16, "example.com", t, t, 1, None)
    >>> classify(None, None), classify(None, page), classify(t, page)
    ('missing', 'fresh', 'fresh')
    >>> classify(datetime(2026, 1, 3, tzinfo=UTC), page)
    'stale'
    """
    if page is None:
        return "missing"
    return "stale" if bool(_one(lastmod, page).stale[0]) else "fresh"


def lastmod_verdict(lastmod: datetime | None, page: StoredPage | None) -> Verdict | None:
    """Whether one entry's ``lastmod`` matches the store's history of the page (:func:`judge`).

    >>> from datetime import datetime, UTC
    >>> def day(d): return datetime(2026, 1, d, tzinfo=UTC)
    >>> changed = StoredPage(b"d" * 16, "h", last_seen=day(9), last_changed=day(5),
    ...                      version_count=2, previous_last_seen=day(3))
    >>> [lastmod_verdict(day(d), changed) for d in (2, 4, 7, 10)]
    ['behind', 'agrees', 'ahead', None]
    """
    if page is None:
        return None
    judged = _one(lastmod, page)
    for verdict in ("ahead", "behind", "agrees"):
        if bool(getattr(judged, verdict)[0]):
            return verdict
    return None


def site_host(url: str, policy: CanonPolicy | None = None) -> str:
    """The host (with a non-default port) a site or sitemap URL belongs to.

    >>> site_host("https://Example.com:443/sitemap.xml")
    'example.com'
    """
    return url_host(canonicalise(url, policy))
