"""The Postgres side of ``benchmarks/scale_run.py``: the database, the peer, sizes, reconcile."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import io
import json
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from _common import log
from _scale_pages import url
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

PEER_PAGES = 50_000
PER_SITEMAP = 50_000


def db_url(admin: str, name: str) -> str:
    return make_url(admin).set(database=name).render_as_string(hide_password=False)


def _admin(admin: str) -> sa.Engine:
    return sa.create_engine(admin, isolation_level="AUTOCOMMIT", poolclass=NullPool)


def create_database(admin: str, name: str) -> str:
    engine = _admin(admin)
    with engine.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    engine.dispose()
    return db_url(admin, name)


def drop_database(admin: str, name: str) -> None:
    engine = _admin(admin)
    with engine.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    engine.dispose()
    log(f"dropped {name}")


# -- bytes per page ---------------------------------------------------------------------------

_SIZES = """
WITH rels AS (
  SELECT COALESCE(parent.relname, c.relname) AS name, c.relkind, c.oid,
         COALESCE(ptab.relname, tab.relname, COALESCE(parent.relname, c.relname)) AS tbl
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
  LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
  LEFT JOIN pg_class parent ON parent.oid = i.inhparent
  LEFT JOIN pg_index x ON x.indexrelid = c.oid
  LEFT JOIN pg_class tab ON tab.oid = x.indrelid
  LEFT JOIN pg_inherits ti ON ti.inhrelid = tab.oid
  LEFT JOIN pg_class ptab ON ptab.oid = ti.inhparent
  WHERE c.relkind IN ('r', 'i')
)
SELECT tbl, name, relkind, COUNT(*) AS parts,
       SUM(pg_relation_size(oid)) AS main,
       SUM(CASE WHEN relkind = 'r' THEN pg_table_size(oid) - pg_relation_size(oid) ELSE 0 END)
         AS toast_fsm_vm
FROM rels GROUP BY tbl, name, relkind ORDER BY tbl, relkind DESC, main DESC
"""


def sizes(database: str, loaded: int) -> dict[str, Any]:
    """``pg_relation_size`` of every table and index, partitions summed, per stored page."""
    engine = sa.create_engine(database, poolclass=NullPool)
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        log("VACUUM ANALYZE …")
        conn.exec_driver_sql("VACUUM ANALYZE page_snapshots, page_versions")
        counts = {
            t: conn.exec_driver_sql(f"SELECT COUNT(*) FROM {t}").scalar_one()
            for t in ("page_snapshots", "page_versions")
        }
        rows = conn.exec_driver_sql(_SIZES).all()
        total = conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar_one()
    engine.dispose()
    pages = int(counts["page_snapshots"])  # the rows stored (workers stop at different pages)
    out = []
    for tbl, name, kind, parts, main, extra in rows:
        if not main and not extra:
            continue
        out.append(
            {
                "table": tbl,
                "relation": name,
                "kind": "heap" if kind == "r" else "index",
                "partitions": parts,
                "bytes": int(main),
                "toast_fsm_vm": int(extra),
                "bytes_per_page": round(int(main) / max(1, pages), 1),
            }
        )
    for r in out:
        print(
            f"| {r['table']} | {r['relation']} | {r['kind']} | {r['bytes']:,} | "
            f"{r['bytes_per_page']} |"
        )
    print(f"database: {total:,} bytes, {total / max(1, pages):.1f} per page; rows {counts}")
    return {
        "pages": pages,
        "contiguous_pages": loaded,
        "rows": counts,
        "relations": out,
        "database_bytes": int(total),
    }


# -- the peer: the same rows, bare ----------------------------------------------------------------


def _timed_inserts(conn: Any, table: str, cols: list[str], rows: list[Any], batch: int) -> float:
    sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})"
    started = time.perf_counter()
    for i in range(0, len(rows), batch):
        with conn.cursor() as cur:
            cur.executemany(sql, rows[i : i + batch])
        conn.commit()
    return time.perf_counter() - started


def _timed_copy(conn: Any, table: str, cols: list[str], rows: list[Any]) -> float:
    started = time.perf_counter()
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(cols)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    conn.commit()
    return time.perf_counter() - started


def peer(database: str, batch: int) -> dict[str, Any]:
    """Bare executemany (a commit per ``batch``) and COPY of PEER_PAGES stored pages' rows —
    their snapshot and version rows — into unpartitioned copies of the two tables with the
    same indexes (``LIKE … INCLUDING ALL``), and the client CPU of fingerprinting the bodies."""
    import psycopg

    plain = make_url(database).set(drivername="postgresql").render_as_string(hide_password=False)
    out: dict[str, Any] = {"pages": PEER_PAGES, "batch": batch}
    with psycopg.connect(plain) as conn:
        data: dict[str, tuple[list[str], list[Any]]] = {}
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM page_snapshots")
            stored = int((cur.fetchone() or (0,))[0])
            below = min(256, 1 + 256 * PEER_PAGES // max(1, stored))  # digests are uniform
            cur.execute(
                "SELECT * FROM page_snapshots WHERE get_byte(url_digest, 0) < %s LIMIT %s",
                (below, PEER_PAGES),
            )
            cols = [d.name for d in cur.description or ()]
            snaps = cur.fetchall()
            data["page_snapshots"] = (cols, snaps)
            digests = [r[cols.index("url_digest")] for r in snaps]
            cur.execute("SELECT * FROM page_versions WHERE url_digest = ANY(%s)", (digests,))
            data["page_versions"] = ([d.name for d in cur.description or ()], cur.fetchall())
            for table in data:
                cur.execute(f"DROP TABLE IF EXISTS peer_{table}")
                cur.execute(f"CREATE TABLE peer_{table} (LIKE {table} INCLUDING ALL)")
        conn.commit()
        for how in ("executemany", "copy"):
            seconds = 0.0
            for table, (cols, rows) in data.items():
                if how == "copy":
                    seconds += _timed_copy(conn, f"peer_{table}", cols, rows)
                else:
                    seconds += _timed_inserts(conn, f"peer_{table}", cols, rows, batch)
                conn.execute(f"TRUNCATE peer_{table}")
                conn.commit()
            out[how] = {"seconds": round(seconds, 2), "pages_per_s": round(len(snaps) / seconds, 1)}
            log(f"[peer] bare {how}: {len(snaps) / seconds:,.0f} pages/s")
        for table in data:
            conn.execute(f"DROP TABLE peer_{table}")
        conn.commit()
    out["pages"] = len(data["page_snapshots"][1])
    out["version_rows"] = len(data["page_versions"][1])
    out["client_cpu"] = client_cpu()
    return out


def client_cpu(n: int = 5_000) -> dict[str, float]:
    """One process's rate of making the pages' bodies, and of ``fingerprint`` on them."""
    from _scale_pages import body, load_sentences

    from changewatch.fingerprint import fingerprint

    sentences = load_sentences(Path("/tmp/cw-scale/sentences.json"))
    started = time.process_time()
    bodies = [body(i, sentences) for i in range(n)]
    made = time.process_time() - started
    started = time.process_time()
    for b in bodies:
        fingerprint(b)
    printed = time.process_time() - started
    out = {
        "pages": n,
        "mean_body_bytes": round(sum(map(len, bodies)) / n, 1),
        "make_pages_per_cpu_s": round(n / made, 1),
        "fingerprint_pages_per_cpu_s": round(n / printed, 1),
    }
    log(f"[peer] client CPU: {out}")
    return out


# -- reconcile --------------------------------------------------------------------------------


def write_sitemaps(directory: Path, n: int, hosts: int, port: int) -> dict[int, int]:
    """Per host h: gzip sitemaps of PER_SITEMAP of its URLs and ``index-<h>.xml``."""
    counts: dict[int, int] = {}
    for h in range(hosts):
        ids = range(h, n, hosts)
        files = 0
        for k in range(0, len(ids), PER_SITEMAP):
            buf = io.StringIO()
            buf.write('<?xml version="1.0" encoding="UTF-8"?>\n')
            buf.write('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n')
            for i in ids[k : k + PER_SITEMAP]:
                buf.write(f"<url><loc>{url(i, hosts, port)}</loc></url>\n")
            buf.write("</urlset>\n")
            data = gzip.compress(buf.getvalue().encode(), compresslevel=1)
            (directory / f"h{h}-{files}.xml.gz").write_bytes(data)
            files += 1
        base = f"http://127.0.0.{h + 1}:{port}"
        rows = "".join(
            f"<sitemap><loc>{base}/h{h}-{f}.xml.gz</loc></sitemap>\n" for f in range(files)
        )
        (directory / f"index-{h}.xml").write_text(
            '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex '
            f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{rows}</sitemapindex>\n'
        )
        counts[h] = files
    return counts


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def guess_type(self, path: Any) -> str:
        return "application/gzip" if str(path).endswith(".gz") else "application/xml"


@contextlib.contextmanager
def serve(directory: Path, hosts: int, port: int) -> Iterator[None]:
    """One HTTP server per loopback host 127.0.0.<1 … hosts>, all on ``port``."""
    servers = []
    for h in range(hosts):
        handler = lambda *a, **k: _Quiet(*a, directory=str(directory), **k)  # noqa: E731
        server = http.server.ThreadingHTTPServer((f"127.0.0.{h + 1}", port), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    try:
        yield
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def reconcile(database: str, n: int, hosts: int, port: int, work: Path) -> dict[str, Any]:
    """Serve sitemaps of the n URLs; ``changewatch reconcile`` of each host's index, each in a
    child process (its own peak RSS); the counts it reports."""
    directory = work / "sitemaps"
    directory.mkdir(parents=True, exist_ok=True)
    started = time.time()
    marker = directory / f"written-{n}-{hosts}-{port}.json"
    if marker.exists():  # the same files as a previous run wrote (they are deterministic)
        counts = {int(k): v for k, v in json.loads(marker.read_text()).items()}
    else:
        counts = write_sitemaps(directory, n, hosts, port)
        marker.write_text(json.dumps(counts))
    size = sum(p.stat().st_size for p in directory.glob("*.xml*"))
    log(f"{n:,} URLs in {sum(counts.values())} gzip sitemaps, {size / 1e6:.0f} MB")
    out: dict[str, Any] = {"urls": n, "sitemaps": sum(counts.values()), "bytes": size}
    out["write_s"] = round(time.time() - started, 1)
    starts = [f"http://127.0.0.{h + 1}:{port}/index-{h}.xml" for h in range(hosts)]
    command = [str(Path(sys.executable).parent / "changewatch"), "--database-url", database]
    command += ["reconcile", *starts, "--allow-private", "--json"]
    out["command"] = "changewatch reconcile INDEX_URL … --allow-private --json"
    with serve(directory, hosts, port):
        began = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(command)],
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - began
    lines = proc.stdout.strip().splitlines()
    usage = json.loads(lines[-1]) if lines else {}
    reports: list[Any] = []
    with contextlib.suppress(ValueError):
        reports = [json.loads("\n".join(lines[:-1]))]
    if not reports:
        for line in lines[:-1]:
            with contextlib.suppress(ValueError):
                reports.append(json.loads(line))
    for report in reports:
        if isinstance(report, dict):
            report["hosts"] = dict(sorted(report.get("hosts", {}).items())[:3])  # a sample
    out.update(
        wall_s=round(wall, 1),
        urls_per_s=round(n / wall, 1),
        exit=proc.returncode,
        peak_rss_mib=usage.get("peak_rss_mib"),
        cpu_s=usage.get("cpu_s"),
        reports=reports,
        raw_stdout_head=proc.stdout[:3000],
        stderr=proc.stderr[-3000:],
    )
    log(f"[reconcile] {wall:.1f}s, {n / wall:,.0f} URLs/s, RSS {usage.get('peak_rss_mib')} MiB")
    return out


def _child(command: list[str]) -> None:
    """Run ``command``; print its stdout, then one JSON line of its CPU and peak RSS."""
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    print(json.dumps({"peak_rss_mib": usage.ru_maxrss / 1024, "cpu_s": round(cpu, 1)}))
    sys.exit(proc.returncode)


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    _child(json.loads(sys.argv[2]))
