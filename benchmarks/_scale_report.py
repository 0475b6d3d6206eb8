"""``benchmarks/scale_run.py report``: the results JSON as the markdown tables of docs/scale.md."""

from __future__ import annotations

from typing import Any


def _rate_table(name: str, r: dict[str, Any]) -> list[str]:
    lines = [
        f"**{name}**: {r['pages_done']:,} of {r['target_pages']:,} pages "
        f"({'finished' if r['finished'] else 'stopped'}), {r['workers']} workers, batches of "
        f"{r['batch']:,}; {r['pages_per_s_this_run']:,} pages/s over {r['wall_s_this_run']:,} s; "
        f"peak RSS per worker {r['peak_rss_mib']} MiB; decisions {r['kinds']}",
        "",
        "| minutes | pages done | pages/s (last interval) | RSS MiB (workers) |",
        "|---:|---:|---:|---:|",
    ]
    timeline = r["timeline"]
    step = max(1, len(timeline) // 12)
    for p in timeline[::step] + ([timeline[-1]] if timeline and len(timeline) % step else []):
        lines.append(f"| {p['t_s'] / 60:.1f} | {p['done']:,} | {p['rate']:,.0f} | {p['rss_mib']} |")
    return [*lines, ""]


def _windows(r: dict[str, Any], size: int = 100_000) -> list[str]:
    """Pages/s per ``size`` pages of table growth (from the timeline)."""
    out, mark, t0, d0 = [], size, 0.0, 0
    for p in r["timeline"]:
        if p["done"] >= mark:
            out.append(f"{mark // 1000:,}k: {(p['done'] - d0) / max(1e-9, p['t_s'] - t0):,.0f}")
            t0, d0, mark = p["t_s"], p["done"], mark + size
    return [f"pages/s per {size:,} pages stored: " + "; ".join(out), ""]


def report(data: dict[str, Any]) -> str:
    lines: list[str] = []
    if "redis" in data:
        lines += [
            "| row | URLs | adds/s | bytes/URL | used_memory Δ/URL | FP rate "
            "| client µs/URL | server µs/URL |"
        ]
        lines += ["|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in data["redis"]["rows"]:
            fp = r.get("false_positive_rate")
            lines.append(
                f"| {r['row']} | {r.get('urls', 0):,} | {r['adds_per_s']:,.0f} | "
                f"{r.get('bytes_per_url', '—')} | {r.get('used_memory_delta_per_url', '—')} | "
                f"{'—' if fp is None else f'{fp:.5f}'} | {r.get('client_cpu_us_per_url', '—')} | "
                f"{r.get('server_cpu_us_per_url', '—')} |"
            )
        lines.append("")
    for key in ("load", "recrawl_unchanged", "recrawl_changed"):
        if key in data:
            lines += _rate_table(key, data[key])
            if key == "load":
                lines += _windows(data[key])
    if "peer" in data:
        lines += [f"peer: {data['peer']}", ""]
    if "sizes" in data:
        s = data["sizes"]
        lines += [f"sizes at {s['pages']:,} pages, rows {s['rows']}", ""]
        lines += ["| table | relation | kind | bytes | bytes/page |", "|---|---|---|---:|---:|"]
        for r in s["relations"]:
            if r["bytes"] > 65536:
                lines.append(
                    f"| {r['table']} | {r['relation']} | {r['kind']} | {r['bytes']:,} | "
                    f"{r['bytes_per_page']} |"
                )
        lines += [f"database {s['database_bytes']:,} bytes", ""]
    if "reconcile" in data:
        r = dict(data["reconcile"])
        r.pop("raw_stdout_head", None)
        lines += [f"reconcile: {r}", ""]
    return "\n".join(lines)
