"""Totals of a plan: what it requests, what its instances need, padding, YARN
rounding waste and utilisation (for ``squall pack`` and the reports)."""
from __future__ import annotations

from typing import Mapping

from squall.idl import schema

from squall.packing.errors import PackingError
from squall.resources import Res
from squall.packing.yarn import yarn_shapes


def _json(r: Res) -> dict:
    return {"cpu": r.cpu / 1000, "ram_mb": r.ram, "disk_mb": r.disk}


def plan_summary(plan: schema.PackingPlan, config: Mapping[str, object]) -> dict:
    """``{"containers", "requested", "needed", "padding", "utilisation":
    {"cpu", "ram_mb"} (percent needed of requested), "yarn": {...} or
    {"error": ...}}``."""
    requested = needed = padding = Res()
    for c in plan.containers:
        requested = requested + Res.from_thrift(c.resources)
        padding = padding + Res.from_thrift(c.padding)
        for i in c.instances:
            needed = needed + Res.from_thrift(i.resources)
    try:
        shapes = yarn_shapes(plan, config)
        yarn = {
            "shapes": len(shapes.shapes),
            "waste_mb": shapes.rounding_waste_mb + shapes.merge_waste_mb,
            "waste_vcores": round(shapes.rounding_waste_vcores + shapes.merge_waste_vcores, 3),
        }
    except PackingError as e:
        yarn = {"error": str(e)}
    return {
        "containers": len(plan.containers),
        "requested": _json(requested),
        "needed": _json(needed),
        "padding": _json(padding),
        "utilisation": {
            "cpu": round(100 * needed.cpu / requested.cpu, 1) if requested.cpu else 0.0,
            "ram_mb": round(100 * needed.ram / requested.ram, 1) if requested.ram else 0.0,
        },
        "yarn": yarn,
    }
