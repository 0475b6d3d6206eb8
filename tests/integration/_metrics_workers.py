"""Worker for test_metrics_multiprocess, run in spawned processes (free of pytest imports)."""

from __future__ import annotations

import traceback
from collections import Counter
from typing import Any

from changewatch import ChangeWatch
from changewatch.metrics import PrometheusObserver


def metrics_worker(workdir: str, seed: int, results: Any) -> None:
    """Mark and decide pages with a multiprocess observer; report what it was told."""
    try:
        observer = PrometheusObserver(multiprocess=True)
        told: Counter[str] = Counter()
        with ChangeWatch(f"sqlite:///{workdir}/w{seed}.db", "memory:", observer=observer) as watch:
            urls = [f"https://example.com/{i % (7 + seed)}" for i in range(40 + seed)]
            answers = watch.mark_seen_many(urls)
            told["discoveries"] = len(answers)
            told["hits"] = answers.count(False)
            for round_ in range(3):
                pages = [(u, f"<p>page {u} round {round_ // 2}</p>") for u in sorted(set(urls))]
                for d in watch.should_parse_many(pages):
                    told[d.kind] += 1
        results.put(("ok", dict(told)))
    except BaseException:
        results.put(("error", traceback.format_exc()))
