"""What several benchmarks share: progress on stderr, a scratch Postgres database, percentiles.

Imported as ``_common`` (a benchmark run as a script has ``benchmarks/`` on ``sys.path``).
"""

from __future__ import annotations

import gzip
import math
import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

#: The shared real-data corpus: CHANGEWATCH_CORPUS, else ../shared/corpus beside the checkout.
CORPUS = Path(
    os.environ.get("CHANGEWATCH_CORPUS")
    or Path(__file__).resolve().parents[2] / "shared" / "corpus"
)
PAGES = CORPUS / "pages-readability"


def real_pages(limit: int | None = None, *, required: bool = True) -> list[tuple[str, bytes]]:
    """The corpus's real pages as ``(name, bytes)``, name-sorted; without the corpus, exit
    with a line naming where it was looked for (``required``) or return the demo site's
    pages instead, said on stderr (for smoke runs on a fresh clone)."""
    paths = sorted(PAGES.glob("*.html.gz"))[:limit]
    if paths:
        return [(p.name.removesuffix(".html.gz"), gzip.decompress(p.read_bytes())) for p in paths]
    if required:
        sys.exit(
            f"no pages under {PAGES}: set CHANGEWATCH_CORPUS or put the corpus at "
            "../shared/corpus beside the checkout"
        )
    from changewatch.demo.site import first_site

    log(f"no corpus at {PAGES}: using the demo site's pages (figures are not comparable)")
    pages = sorted(first_site().pages.items())
    return [(path.strip("/").replace("/", "_") or "home", body) for path, body in pages][:limit]


def log(message: str) -> None:
    """Progress on stderr, so stdout stays the table."""
    print(message, file=sys.stderr, flush=True)


@contextmanager
def scratch_database(admin_url: str, prefix: str) -> Iterator[str]:
    """A new, empty database ``<prefix>_<random>`` on the server of ``admin_url``; its URL
    (psycopg driver) is yielded, and it is dropped afterwards whatever happens."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin_target = make_url(admin_url).set(drivername="postgresql+psycopg")
    admin = sa.create_engine(admin_target, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            yield admin_target.set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            log(f"dropped {name}")
    finally:
        admin.dispose()


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (``q`` in 0..1) of ``values``.

    >>> percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5), percentile(list(range(1, 101)), 0.99)
    (3.0, 99)
    """
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]
