"""A stocked store and a local site that lies, for the reconcile tests of issue 16.

The store holds :data:`PAGES` pages of ``shop.test`` (resolved to 127.0.0.1 by the client);
:func:`reconcile_site` walks the real HTTP server through :class:`WalkSource` and reconciles
against the real store, recorded in ``reconcile_runs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.reconcile import ReconcileResult, run_reconcile
from changewatch.reconcile.sources import WalkSource
from changewatch.sitemaps.fetch import SafeClient
from changewatch.sitemaps.model import Limits
from changewatch.store.reconcile import ReconcileStore
from changewatch.store.tables import reconcile_findings

from .._http_server import LocalSite

if TYPE_CHECKING:
    from conftest import Clock

HOST = "shop.test"
#: Stored pages of the host.
PAGES = 20
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def page_url(site: LocalSite, n: int) -> str:
    """The URL of stored page ``n``."""
    return site.url(f"/p{n}", host=HOST)


def urlset(*locs: str, lastmod: str = "2020-01-01") -> bytes:
    """A urlset listing ``locs``."""
    rows = "".join(f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod></url>" for loc in locs)
    return f'<?xml version="1.0"?><urlset {NS}>{rows}</urlset>'.encode()


def index(*locs: str) -> bytes:
    """A sitemapindex listing ``locs``."""
    rows = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0"?><sitemapindex {NS}>{rows}</sitemapindex>'.encode()


def pages(site: LocalSite, numbers: range | Sequence[int]) -> list[str]:
    """The URLs of stored pages ``numbers``."""
    return [page_url(site, n) for n in numbers]


def stock(watch: ChangeWatch, site: LocalSite, count: int = PAGES) -> None:
    """Store ``count`` distinct pages of the host."""
    for n in range(count):
        html = f"<html><body><h1>page {n}</h1><p>{'words ' * 30} {n}</p></body></html>"
        assert watch.should_parse(page_url(site, n), html).kind == "new"


def local_client(**options: Any) -> SafeClient:
    """Every host name resolves to 127.0.0.1; loopback allowed; no real sleeping."""
    defaults: dict[str, Any] = {
        "allow_private": True,
        "resolve": lambda host, port: ["127.0.0.1"],
        "connect_timeout": 2.0,
        "read_timeout": 2.0,
        "total_timeout": 10.0,
        "sleep": lambda seconds: None,
        "retries": 1,
    }
    defaults.update(options)
    return SafeClient(**defaults)


def reconcile_site(
    watch: ChangeWatch,
    clock: Clock,
    arguments: Sequence[str],
    *,
    client: SafeClient | None = None,
    limits: Limits | None = None,
    source_options: dict[str, Any] | None = None,
    **options: Any,
) -> ReconcileResult:
    """Walk ``arguments`` on the local site and reconcile them with the store (recorded)."""
    with client or local_client() as used:
        source = WalkSource(arguments, used, limits=limits or Limits(), **(source_options or {}))
        return run_reconcile(
            source,
            store=ReconcileStore(watch.store),
            clock=clock,
            sites=list(arguments),
            url_policy=watch.url_policy,
            **options,
        )


def vanished_findings(watch: ChangeWatch, run_id: int | None) -> int:
    """How many vanished rows the run recorded."""
    f = reconcile_findings.c
    with watch.store.engine.connect() as conn:
        query = sa.select(sa.func.count()).where(f.run_id == run_id, f.kind == "vanished")
        return int(conn.execute(query).scalar_one())
