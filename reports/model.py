"""The report's symptoms of one component (Dhalion's); the capacity model itself is
``packing/capacity.py``, shared with the health manager."""
from __future__ import annotations

from squall.packing.capacity import Load
from squall.reports.metrics import Thresholds

BACKPRESSURE_PCT = 5.0  # spouts held back this share of the time, or more: someone holds them


def symptoms(load: Load, cores: float, spout_backpressure_pct: float, thresholds: Thresholds) -> list:
    """Dhalion's symptoms that apply to the component, each with its figure."""
    found = []
    if load.busy is not None and load.busy >= thresholds.busy:
        found.append(f"busy {100 * load.busy:.0f}% of the time")
    if (load.kind == "bolt" and spout_backpressure_pct >= BACKPRESSURE_PCT and load.busy is not None
            and load.busy >= thresholds.busy):
        found.append(f"holds its upstream in backpressure (spouts {spout_backpressure_pct:.0f}% of the time)")
    if load.cpu_used is not None and load.cpu_used >= thresholds.cpu_allocation * cores:
        found.append(f"runs at its CPU allocation ({load.cpu_used:.2f} of {cores:.3g} cores)")
    return found
