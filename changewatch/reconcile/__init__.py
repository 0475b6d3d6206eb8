"""Sitemap reconciliation: what the crawl missed, what is stale, what vanished.

The job compares what a site's sitemaps list with what the snapshot store holds, per host:

* **missing** — listed, never stored (looked up exactly in ``page_snapshots``, never in a
  seen-set, so a URL a Bloom filter wrongly reported as seen is caught here);
* **stale** — stored, but the entry's ``lastmod`` is newer than the page's ``last_seen``;
* **fresh** — stored and not stale (including entries without a ``lastmod``);
* **vanished** — stored pages of the host that no sitemap of the host listed, only for a
  host whose every walk completed without error.

The **lastmod trust** figure of a host says how far its ``lastmod`` values match the changes
the store actually observed (docs/reconcile.md).

Modules, pure first: :mod:`~changewatch.reconcile.values` (sources, stored pages,
findings, results), :mod:`~changewatch.reconcile.plan` (the rules),
:mod:`~changewatch.reconcile.index` (in-memory host index and digest table);
orchestration: :mod:`~changewatch.reconcile.job` (:func:`reconcile`, :func:`run_reconcile`)
and :mod:`~changewatch.reconcile.sources` (the sitemap walk as a source).

The names below are importable from here; the job (and with it the store) loads on first
use, so the store's queries can import the values without a cycle.
"""

from typing import TYPE_CHECKING, Any

from changewatch.reconcile.plan import ListedKind, classify, lastmod_verdict, site_host
from changewatch.reconcile.values import (
    Finding,
    HostResult,
    LastmodTrust,
    ReconcileResult,
    SitemapProblem,
    SitemapSource,
    StaticSource,
    StoredPage,
    Verdict,
    WalkOutcome,
)

if TYPE_CHECKING:
    from changewatch.reconcile.job import reconcile, run_reconcile
    from changewatch.reconcile.sources import WalkSource

_LAZY = {
    "reconcile": "changewatch.reconcile.job",
    "run_reconcile": "changewatch.reconcile.job",
    "WalkSource": "changewatch.reconcile.sources",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'changewatch.reconcile' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Finding",
    "HostResult",
    "LastmodTrust",
    "ListedKind",
    "ReconcileResult",
    "SitemapProblem",
    "SitemapSource",
    "StaticSource",
    "StoredPage",
    "Verdict",
    "WalkOutcome",
    "WalkSource",
    "classify",
    "lastmod_verdict",
    "reconcile",
    "run_reconcile",
    "site_host",
]
