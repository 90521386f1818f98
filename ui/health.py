"""The health page's data: the health manager's view (``health/view.py``, as ``squall health --json``)
with the rates and parallelism over the window and the decisions to mark on them."""
from __future__ import annotations

import time

from squall.health.view import health_view
from squall.state import StateManager
from squall.ui import views
from squall.ui.metrics import WINDOWS, MetricsCache


def health_page(state: StateManager, metrics: MetricsCache, name: str, window: str) -> dict:
    """``health_view`` plus ``rates`` and ``parallelism`` (component -> [(time, value)]) from ``start`` to
    ``end`` (``parallelism`` replaced by its steps), and ``marks``: (time, label) of every decision in that
    span."""
    shown = health_view(state, name)
    topology = views.topology(state, metrics, name, window)
    end = time.time()
    start = end - (WINDOWS[window] or 3600.0)
    kinds = {c["name"]: c["kind"] for c in topology["components"]}
    rates = {c: [(p["ts"], (p["emitted"] if kinds.get(c) == "spout" else p["executed"]) / p["secs"])
                 for p in points] for c, points in topology["series"].items()}
    return {**shown, "window": window, "start": start, "end": end, "rates": rates,
            "parallelism": parallelism_steps(shown["parallelism"], start, end),
            "marks": [(d["time"], f"{d['id']} {d['status']}: {d['summary']}") for d in shown["history"]
                      if start <= d["time"] <= end],
            "metrics_error": topology["metrics_error"]}


def parallelism_steps(changes: list, start: float, end: float) -> dict:
    """component -> its parallelism over [start, end] as steps, from the health manager's record of each
    change it observed (``changes``: [time, component -> parallelism], oldest first)."""
    out: dict = {}
    for t, parallelism in changes:
        for name, n in parallelism.items():
            points = out.setdefault(name, [])
            if points:
                points.append((max(t, start), points[-1][1]))
            points.append((max(t, start), n))
    for points in out.values():
        points.append((end, points[-1][1]))
    return out
