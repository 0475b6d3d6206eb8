"""docs/grafana-dashboard.json is valid JSON with a panel for every exported metric."""

from __future__ import annotations

import json
from pathlib import Path

from changewatch.metrics import METRIC_NAMES

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"


def test_dashboard_has_a_panel_for_every_metric() -> None:
    """Every metric name appears in some panel's query; panels have unique ids and queries."""
    data = json.loads(DASHBOARD.read_text())
    panels = data["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    exprs = " ".join(t["expr"] for p in panels for t in p["targets"])
    assert all(p["targets"] for p in panels)
    for name in METRIC_NAMES:
        assert name.removesuffix("_total") in exprs, name
