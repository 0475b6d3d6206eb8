"""Sitemap reconciliation benchmark: ``changewatch reconcile`` beside ultimate-sitemap-parser.

One run builds everything it measures:

* N URLs (default 1,000,000) in 20 gzip sitemaps (50,000 URLs each for 1M) behind a
  sitemap index, written to a temporary directory and served by a local HTTP server;
* a fresh Postgres database (``cw_bench_reconcile``, created and dropped by this script)
  migrated to head and bulk-loaded with ``COPY``: N ``page_snapshots`` rows and their
  ``page_versions`` rows (one page in ten has two versions, so the lastmod trust figure
  looks up a previous version). 1% of the listed URLs are not stored (missing), 5% were last
  seen before their sitemap ``lastmod`` (stale), and 1% of the stored rows are listed
  nowhere (vanished).

Then, in separate child processes (so each peak RSS is that process's own ``ru_maxrss``):

* ``changewatch reconcile INDEX_URL --allow-private --json`` — the whole job: fetch, parse,
  canonicalise, read the host's stored pages once (``host_index``: a host this size is
  classified in memory), vanished diff, findings recorded in ``reconcile_runs`` /
  ``reconcile_findings``;
* ultimate-sitemap-parser 1.8.1 (``SitemapFetcher(INDEX_URL).sitemap()`` and iterating
  ``all_pages()``) — fetching and parsing the same files from the same server, nothing more.

Wall and CPU times (user + system of the child; the Postgres server's work is not in it) are
medians of ``--repeats`` runs; peak RSS is the largest. Run::

    python benchmarks/reconcile.py --quick      # 20,000 URLs, 4 sitemaps: a smoke test
    python benchmarks/reconcile.py              # 1,000,000 URLs, 20 sitemaps (minutes)

Needs the Postgres server of ``CHANGEWATCH_TEST_DATABASE_URL`` (default
postgresql+psycopg://postgres@127.0.0.1:5432/postgres). Progress goes to stderr, the table
(or ``--json``) to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import http.server
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
DATABASE = "cw_bench_reconcile"
SITEMAPS = 20
LASTMOD = "2026-01-01T00:00:00+00:00"
FIRST_SEEN = datetime(2025, 1, 1, tzinfo=UTC)
SEEN_BEFORE_LASTMOD = datetime(2025, 6, 1, tzinfo=UTC)
SEEN_AFTER_LASTMOD = datetime(2026, 2, 1, tzinfo=UTC)
PREVIOUS_SEEN = datetime(2025, 3, 1, tzinfo=UTC)
CHANGED_AT = datetime(2025, 4, 1, tzinfo=UTC)
_START = time.perf_counter()


def note(message: str) -> None:
    print(f"[{time.perf_counter() - _START:7.1f}s] {message}", file=sys.stderr, flush=True)


# -- the site -------------------------------------------------------------------------------------


def write_sitemaps(directory: Path, base: str, n: int) -> int:
    """SITEMAPS gzip sitemaps (50,000 URLs each for 1M) and an index; returns how many."""
    count = SITEMAPS
    per = (n + count - 1) // count
    for k in range(count):
        buf = io.StringIO()
        buf.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        buf.write('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n')
        for i in range(k * per, min(n, (k + 1) * per)):
            buf.write(f"<url><loc>{base}/p/{i}</loc><lastmod>{LASTMOD}</lastmod></url>\n")
        buf.write("</urlset>\n")
        (directory / f"pages-{k}.xml.gz").write_bytes(
            gzip.compress(buf.getvalue().encode(), compresslevel=6)
        )
    rows = "".join(f"<sitemap><loc>{base}/pages-{k}.xml.gz</loc></sitemap>\n" for k in range(count))
    (directory / "index.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{rows}'
        "</sitemapindex>\n"
    )
    return count


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def guess_type(self, path: Any) -> str:
        return "application/gzip" if str(path).endswith(".gz") else "application/xml"


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[http.server.ThreadingHTTPServer]:
    handler = lambda *a, **k: _Quiet(*a, directory=str(directory), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


# -- the store ------------------------------------------------------------------------------------


def create_database(admin_url: str) -> str:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{DATABASE}"'))
    admin.dispose()
    return make_url(admin_url).set(database=DATABASE).render_as_string(hide_password=False)


def drop_database(admin_url: str) -> None:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)'))
    admin.dispose()


def load_store(url: str, base: str, n: int) -> dict[str, int]:
    """Migrate, then COPY n snapshot rows and their first versions; the expected totals."""
    from changewatch.store import create_engine
    from changewatch.store.migrate import upgrade
    from changewatch.urls import digest_canonical, url_host

    engine = create_engine(url)
    upgrade(engine)
    host = url_host(base + "/")
    zero32 = bytes(32)
    expected = {"missing": 0, "stale": 0, "vanished": 0, "fresh": 0}
    snap_cols = (
        "url_digest, host, url, canon_version, fingerprint_version, raw_sha256, content_sha256, "
        "simhash, text_length, first_seen, last_seen, last_changed, version_count, fetch_count"
    )
    ver_cols = (
        "url_digest, version_no, kind, raw_sha256, content_sha256, simhash, "
        "fingerprint_version, text_length, first_seen, last_seen"
    )
    extra = n // 100
    with engine.connect() as conn:
        raw: Any = conn.connection.driver_connection
        with raw.cursor() as cur:
            for table, cols in (("page_snapshots", snap_cols), ("page_versions", ver_cols)):
                with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
                    for i in range(n + extra):
                        listed = i < n
                        if listed and i % 100 == 0:
                            if table == "page_snapshots":
                                expected["missing"] += 1
                            continue
                        page = f"{base}/p/{i}"
                        digest = digest_canonical(page)
                        stale = listed and i % 20 == 1
                        seen = SEEN_BEFORE_LASTMOD if stale else SEEN_AFTER_LASTMOD
                        # One page in ten changed once: two versions, so the previous version's
                        # last_seen is looked up for the lastmod trust figure.
                        versions = 2 if i % 10 == 3 else 1
                        changed = CHANGED_AT if versions == 2 else FIRST_SEEN
                        if table == "page_snapshots":
                            kind = "fresh" if listed and not stale else "stale"
                            expected["vanished" if not listed else kind] += 1
                            fixed = (digest, host, page, 2, 2, zero32, zero32, i, 100)
                            copy.write_row((*fixed, FIRST_SEEN, seen, changed, versions, 2))
                        else:
                            fixed = (zero32, zero32, i, 2, 100)
                            if versions == 2:
                                first = (digest, 1, "new", *fixed, FIRST_SEEN, PREVIOUS_SEEN)
                                copy.write_row(first)
                            kind = "changed" if versions == 2 else "new"
                            copy.write_row((digest, versions, kind, *fixed, changed, seen))
        raw.commit()
        conn.execute(sa.text("ANALYZE"))
        conn.commit()
    engine.dispose()
    return expected


# -- the children ---------------------------------------------------------------------------------


def child(kind: str, start: str, database_url: str | None) -> None:
    """Run one side in this process and print its wall time and peak RSS as JSON."""
    began = time.perf_counter()
    if kind == "changewatch":
        from changewatch.cli import main

        out = io.StringIO()
        code: Any = 0
        with contextlib.redirect_stdout(out):
            try:
                arguments = ["--database-url", str(database_url), "reconcile", start]
                main([*arguments, "--allow-private", "--json"], standalone_mode=False)
            except SystemExit as exc:
                code = exc.code
        result = json.loads(out.getvalue())
        result.pop("hosts", None)
        result["exit"] = code
    else:
        from usp.fetch_parse import SitemapFetcher

        tree = SitemapFetcher(url=start, recursion_level=0).sitemap()
        result = {"pages": sum(1 for _ in tree.all_pages())}
    wall = time.perf_counter() - began
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    print(
        json.dumps(
            {
                "wall_s": wall,
                "cpu_s": cpu,
                "peak_rss_mib": usage.ru_maxrss / 1024,
                "result": result,
            }
        )
    )


def measure(kind: str, start: str, database_url: str | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--start", start]
    if database_url:
        command += ["--database-url", database_url]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} child failed:\n{proc.stderr[-3000:]}")
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="20,000 URLs: a smoke test")
    parser.add_argument("--urls", type=int, help="URLs listed (default 1,000,000)")
    parser.add_argument("--repeats", type=int, help="runs per side (default 3 quick, 1 full)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--child", choices=("changewatch", "usp"), help=argparse.SUPPRESS)
    parser.add_argument("--start", help=argparse.SUPPRESS)
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.start, args.database_url)
        return
    n = args.urls or (20_000 if args.quick else 1_000_000)
    repeats = args.repeats or (3 if args.quick else 1)
    admin_url = os.environ.get("CHANGEWATCH_TEST_DATABASE_URL") or DEFAULT_ADMIN_URL
    with tempfile.TemporaryDirectory(prefix="cw-bench-reconcile-") as tmp, serve(Path(tmp)) as srv:
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        count = write_sitemaps(Path(tmp), base, n)
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
        note(f"{n:,} URLs in {count} gzip sitemaps ({size / 1e6:.1f} MB) behind {base}/index.xml")
        database_url = create_database(admin_url)
        try:
            expected = load_store(database_url, base, n)
            note(f"store loaded: {expected}")
            ours, theirs = [], []
            for r in range(repeats):
                ours.append(measure("changewatch", f"{base}/index.xml", database_url))
                got = {k: ours[-1]["result"][k] for k in expected}
                if got != expected or ours[-1]["result"]["exit"] not in (0, None):
                    raise SystemExit(f"wrong reconciliation: {got} != {expected}: {ours[-1]}")
                note(f"run {r + 1}: changewatch {ours[-1]['wall_s']:.1f}s")
                theirs.append(measure("usp", f"{base}/index.xml", None))
                if theirs[-1]["result"]["pages"] != n:
                    raise SystemExit(f"usp read {theirs[-1]['result']['pages']} pages, not {n}")
                note(f"run {r + 1}: usp {theirs[-1]['wall_s']:.1f}s")
        finally:
            drop_database(admin_url)
    report(n, count, repeats, expected, ours, theirs, as_json=args.json)


def report(
    n: int,
    count: int,
    repeats: int,
    expected: dict[str, int],
    ours: list[dict[str, Any]],
    theirs: list[dict[str, Any]],
    *,
    as_json: bool,
) -> None:
    rows = []
    for name, runs, task in (
        ("changewatch reconcile", ours, "fetch + parse + reconcile with Postgres + record"),
        ("ultimate-sitemap-parser 1.8.1", theirs, "fetch + parse"),
    ):
        wall = statistics.median(r["wall_s"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        rss = max(r["peak_rss_mib"] for r in runs)
        rows.append({"tool": name, "task": task, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss})
    ratio = rows[1]["wall_s"] / rows[0]["wall_s"]
    summary = {
        "urls": n,
        "sitemaps": count,
        "repeats": repeats,
        "expected": expected,
        "rows": rows,
        "usp_over_changewatch_wall": ratio,
    }
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{n:,} URLs, {count} gzip sitemaps + index, store of {n:,} rows (Postgres)")
    print(f"found: {expected}; wall: median of {repeats}; RSS: peak of the child process")
    print(f"{'tool':32} {'wall s':>9} {'URLs/s':>11} {'CPU s':>8} {'peak RSS MiB':>13}  task")
    for row in rows:
        print(
            f"{row['tool']:32} {row['wall_s']:9.2f} {n / row['wall_s']:11,.0f} "
            f"{row['cpu_s']:8.2f} {row['peak_rss_mib']:13.1f}  {row['task']}"
        )
    print(f"usp wall / changewatch wall: {ratio:.2f}×")


if __name__ == "__main__":
    main()
