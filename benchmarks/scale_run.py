"""The 10M-page run of docs/scale.md, one phase per sub-command, results merged into a JSON.

    python benchmarks/scale_run.py redis   [--urls 10000000] [--peer-urls 2000000]
    python benchmarks/scale_run.py setup   [--partitions 16]        # fresh h_scale_10m
    python benchmarks/scale_run.py load    [--pages 10000000] [--workers 2] [--batch 2000]
    python benchmarks/scale_run.py recrawl [--changed]              # the pages `load` stored
    python benchmarks/scale_run.py peer                             # bare executemany / COPY
    python benchmarks/scale_run.py sizes                            # bytes per page
    python benchmarks/scale_run.py reconcile [--urls 10000000]
    python benchmarks/scale_run.py drop
    python benchmarks/scale_run.py report                           # markdown of the JSON

Common options: ``--out`` (the results JSON, default ``scale_results.json``; each phase
replaces its own key), ``--work`` (progress files and the sentence cache, default
``/tmp/cw-scale``), ``--stop-at HH:MM`` (UTC: a phase stops cleanly at its next batch past
it and records how far it got), ``--pg`` / ``--redis`` (servers; Redis db 13, flushed after).

``load`` and ``recrawl`` run ``ChangeWatch.should_parse_many`` from ``--workers`` processes,
worker ``w`` taking pages ``i ≡ w (mod W)`` in order (``benchmarks/_scale_pages.py``). Each
worker writes its position after every committed batch, so ``load`` resumes where it
stopped; the parent prints pages done, pages/s (overall and over the last interval) and
each worker's RSS every ``--every`` seconds, and keeps that timeline in the JSON.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import subprocess
import sys
import time
from argparse import ArgumentParser, Namespace
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _scale_pages as pages
import _scale_redis
import _scale_store
from _common import log

DATABASE = os.environ.get("CW_SCALE_DATABASE", "h_scale_10m")  # a smaller peer run: another
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/13"


def rss_mib(pid: int) -> float:
    """Current resident set of ``pid`` (``VmRSS``), MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def stop_time(text: str | None) -> float | None:
    """``HH:MM`` UTC today as a ``time.time()``."""
    if not text:
        return None
    hour, minute = (int(x) for x in text.split(":"))
    now = datetime.now(UTC)
    return now.replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()


def save(out: Path, key: str, value: Any) -> None:
    data = json.loads(out.read_text()) if out.exists() else {}
    data[key] = value
    out.write_text(json.dumps(data, indent=2, default=str) + "\n")
    log(f"saved {key} to {out}")


# -- the workers ----------------------------------------------------------------------------------


def worker(args: dict[str, Any]) -> None:
    """Feed pages w, w+W, … below ``end`` to ``should_parse_many``; write progress."""
    from changewatch import ChangeWatch

    state_path = Path(args["state"])
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    nxt = state.get("next", args["w"])
    kinds: Counter[str] = Counter(state.get("kinds", {}))
    busy = float(state.get("busy_s", 0.0))
    cpu0 = float(state.get("cpu_s", 0.0))
    sentences = pages.load_sentences(Path(args["sentences"]))
    step, batch, end = args["workers"], args["batch"], args["end"]
    watch = ChangeWatch(database_url=args["db"], seen_url="memory:")
    try:
        while nxt < end and not Path(args["stop"]).exists():
            if args["stop_at"] and time.time() >= args["stop_at"]:
                break
            idx = list(range(nxt, min(end, nxt + batch * step), step))
            items = [
                (
                    pages.url(i, args["hosts"], args["port"]),
                    pages.body(i, sentences, changed=args["changed"]),
                )
                for i in idx
            ]
            began = time.perf_counter()
            decisions = watch.should_parse_many(items)
            busy += time.perf_counter() - began
            kinds.update(f"{d.kind}/{d.path}" for d in decisions)
            nxt = idx[-1] + step
            usage = resource.getrusage(resource.RUSAGE_SELF)
            state = {
                "next": nxt,
                "done": sum(kinds.values()),
                "kinds": dict(kinds),
                "busy_s": busy,
                "cpu_s": cpu0 + usage.ru_utime + usage.ru_stime,
                "peak_rss_mib": usage.ru_maxrss / 1024,
                "pid": os.getpid(),
            }
            tmp = state_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state))
            tmp.replace(state_path)
    finally:
        watch.close()


def server_cpu(admin: str, seen: dict[int, float]) -> None:
    """Record the CPU seconds (user + system) of every Postgres process serving DATABASE
    (backends and autovacuum workers, from ``pg_stat_activity`` and ``/proc/<pid>/stat``)."""
    import psycopg
    from sqlalchemy.engine import make_url

    plain = make_url(admin).set(drivername="postgresql").render_as_string(hide_password=False)
    tick = os.sysconf("SC_CLK_TCK")
    with psycopg.connect(plain, autocommit=True) as conn:
        pids = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (DATABASE,),
        ).fetchall()
    for (pid,) in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seen[pid] = max(seen.get(pid, 0.0), (int(fields[11]) + int(fields[12])) / tick)


def _states(paths: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) if p.exists() else {} for p in paths]


def run_workers(a: Namespace, phase: str, end: int, changed: bool) -> dict[str, Any]:
    """Run the worker processes of ``phase`` to ``end`` (or the stop time); the figures."""
    work = Path(a.work)
    paths = [work / f"{phase}-w{w}.json" for w in range(a.workers)]
    stop = work / f"{phase}.stop"
    stop.unlink(missing_ok=True)
    before = sum(s.get("done", 0) for s in _states(paths))
    cpu_before = sum(s.get("cpu_s", 0.0) for s in _states(paths))
    backends: dict[int, float] = {}
    jobs = [
        {
            "w": w,
            "workers": a.workers,
            "batch": a.batch,
            "end": end,
            "changed": changed,
            "db": _scale_store.db_url(a.pg, DATABASE),
            "state": str(paths[w]),
            "stop": str(stop),
            "stop_at": stop_time(a.stop_at),
            "sentences": str(work / "sentences.json"),
            "hosts": a.hosts,
            "port": a.port,
        }
        for w in range(a.workers)
    ]
    procs = [multiprocessing.Process(target=worker, args=(job,)) for job in jobs]
    began = time.time()
    for proc in procs:
        proc.start()
    timeline: list[dict[str, Any]] = []
    last_t, last_done = began, before
    while any(p.is_alive() for p in procs):
        time.sleep(1.0)
        server_cpu(a.pg, backends)
        now = time.time()
        if now - last_t < a.every and any(p.is_alive() for p in procs):
            continue
        states = _states(paths)
        done = sum(s.get("done", 0) for s in states)
        rss = [round(rss_mib(p.pid or 0), 1) for p in procs]
        point = {
            "t_s": round(now - began, 1),
            "done": done,
            "rate": round((done - last_done) / (now - last_t), 1),
            "rss_mib": rss,
            "client_cpu_s": round(sum(s.get("cpu_s", 0.0) for s in states) - cpu_before, 1),
            "server_cpu_s": round(sum(backends.values()), 1),
        }
        timeline.append(point)
        overall = (done - before) / max(1e-9, now - began)
        log(
            f"[{phase}] {done:,} pages done, {point['rate']:,.0f} pages/s now, "
            f"{overall:,.0f} pages/s this run, RSS {rss} MiB"
        )
        last_t, last_done = now, done
    wall = time.time() - began
    failed = [p.exitcode for p in procs if p.exitcode]
    states = _states(paths)
    done = sum(s.get("done", 0) for s in states)
    kinds: Counter[str] = Counter()
    for s in states:
        kinds.update(s.get("kinds", {}))
    client = sum(s.get("cpu_s", 0.0) for s in states) - cpu_before
    server = sum(backends.values())
    per_page = 1000 / max(1, done - before)
    return {
        "phase": phase,
        "workers": a.workers,
        "batch": a.batch,
        "target_pages": end,
        "pages_done": done,
        "pages_this_run": done - before,
        "wall_s_this_run": round(wall, 1),
        "pages_per_s_this_run": round((done - before) / wall, 1),
        "client_cpu_s_this_run": round(client, 1),
        "server_cpu_s_this_run": round(server, 1),
        "client_cpu_ms_per_page": round(client * per_page, 3),
        "server_cpu_ms_per_page": round(server * per_page, 3),
        "worker_busy_s": [round(s.get("busy_s", 0.0), 1) for s in states],
        "peak_rss_mib": [round(s.get("peak_rss_mib", 0.0), 1) for s in states],
        "positions": [s.get("next") for s in states],
        "kinds": dict(kinds),
        "failed_exit_codes": failed,
        "timeline": timeline,
        "finished": done >= end and not failed,
    }


def with_earlier(out: Path, key: str, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the earlier runs of a resumed phase kept under ``earlier_runs``."""
    data = json.loads(out.read_text()) if out.exists() else {}
    old = data.get(key)
    if old and old.get("pages_done", 0) < result["pages_done"]:
        earlier = old.pop("earlier_runs", [])
        result["earlier_runs"] = [*earlier, old]
    return result


# -- the phases -----------------------------------------------------------------------------------


def phase_load(a: Namespace) -> None:
    Path(a.work).mkdir(parents=True, exist_ok=True)
    pages.load_sentences(Path(a.work) / "sentences.json")
    result = run_workers(a, "load", a.pages, changed=False)
    save(Path(a.out), "load", with_earlier(Path(a.out), "load", result))


def loaded_end(a: Namespace) -> int:
    """How many pages ``load`` stored, as a contiguous range (the least worker position)."""
    states = _states([Path(a.work) / f"load-w{w}.json" for w in range(a.workers)])
    positions = [s.get("next", w) for w, s in enumerate(states)]
    return min(positions) - min(positions) % a.workers if positions else 0


def phase_recrawl(a: Namespace) -> None:
    end = loaded_end(a)
    name = "recrawl_changed" if a.changed else "recrawl_unchanged"
    log(f"[{name}] re-crawling pages 0 … {end:,}")
    result = run_workers(a, name, end, changed=a.changed)
    save(Path(a.out), name, with_earlier(Path(a.out), name, result))


def phase_setup(a: Namespace) -> None:
    url = _scale_store.create_database(a.pg, DATABASE)
    cli = str(Path(sys.executable).parent / "changewatch")
    command = [cli, "--database-url", url, "db", "upgrade"]
    command += ["--partitions", str(a.partitions)]
    log(" ".join(command))
    subprocess.run(command, check=True)
    for path in Path(a.work).glob("*-w*.json"):
        path.unlink()
    save(Path(a.out), "setup", {"database": DATABASE, "partitions": a.partitions})


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "phase",
        choices=(
            "redis",
            "setup",
            "load",
            "recrawl",
            "peer",
            "sizes",
            "reconcile",
            "drop",
            "report",
        ),
    )
    parser.add_argument("--out", default="scale_results.json")
    parser.add_argument("--work", default="/tmp/cw-scale")
    parser.add_argument("--stop-at", help="HH:MM UTC: stop cleanly at the next batch past it")
    parser.add_argument("--pg", default=os.environ.get("CHANGEWATCH_BENCH_PG_URL") or DEFAULT_PG)
    parser.add_argument("--redis", default=DEFAULT_REDIS)
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--peer-urls", type=int, default=2_000_000)
    parser.add_argument("--pages", type=int, default=10_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--port", type=int, default=18717)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between progress")
    parser.add_argument("--changed", action="store_true", help="recrawl: 5%% edited")
    a = parser.parse_args()
    Path(a.work).mkdir(parents=True, exist_ok=True)
    out = Path(a.out)
    if a.phase == "redis":
        keep = lambda rows: save(out, "redis", rows)  # noqa: E731
        save(out, "redis", _scale_redis.run(a.redis, a.urls, a.peer_urls, a.hosts, a.port, keep))
    elif a.phase == "setup":
        phase_setup(a)
    elif a.phase == "load":
        phase_load(a)
    elif a.phase == "recrawl":
        phase_recrawl(a)
    elif a.phase == "peer":
        save(out, "peer", _scale_store.peer(_scale_store.db_url(a.pg, DATABASE), a.batch))
    elif a.phase == "sizes":
        pages_stored = loaded_end(a)
        save(out, "sizes", _scale_store.sizes(_scale_store.db_url(a.pg, DATABASE), pages_stored))
    elif a.phase == "reconcile":
        db = _scale_store.db_url(a.pg, DATABASE)
        save(out, "reconcile", _scale_store.reconcile(db, a.urls, a.hosts, a.port, Path(a.work)))
    elif a.phase == "report":
        import _scale_report

        print(_scale_report.report(json.loads(out.read_text())))
    elif a.phase == "drop":
        _scale_store.drop_database(a.pg, DATABASE)


if __name__ == "__main__":
    main()
