"""Capacity analysis: provisioning, skew and recommendations from aggregated metrics.

Pure functions of the aggregates (no Spark). Every recommendation carries the
figures it rests on and the formula as text; docs/reports.md states them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from squall.reports.inputs import Targets
from squall.reports.metrics import Aggregates

EPSILON = 1e-9


@dataclass(frozen=True)
class Policy:
    """How recommendations are made."""

    headroom: float = 0.2  # spare throughput over the target, as a fraction
    margin: float = 0.2  # spare cpu/ram over the observed p95, as a fraction
    skew_threshold: float = 1.5  # hottest task / mean task rate that counts as skew
    cpu_step: float = 0.05  # cores
    ram_step_mb: int = 16


def provisioning_pct(requested: Optional[float], used: Optional[float]) -> Optional[float]:
    """``100 * (requested - used) / requested``: > 0 over-provisioned, < 0 under."""
    if requested is None or used is None or requested <= 0:
        return None
    return 100.0 * (requested - used) / requested


def recommended_parallelism(target: float, capacity: float, headroom: float) -> int:
    """``ceil(target * (1 + headroom) / capacity)``, at least 1."""
    return max(1, math.ceil(target * (1.0 + headroom) / capacity - EPSILON))


def round_up(value: float, step: float) -> float:
    return math.ceil(value / step - EPSILON) * step


def component_table(agg: Aggregates) -> list:
    """One row per component: throughput, latency, cpu and memory versus requested, skew."""
    by_component: dict = {}
    for inst in agg.instances:
        by_component.setdefault(inst["component"], []).append(inst)
    out = []
    for c in sorted(agg.components, key=lambda c: (agg.kinds.get(c["component"]) == "daemon", c["component"])):
        name = c["component"]
        insts = by_component.get(name, [])
        cpu_req = c["cpu_requested"]
        ram_req = c["ram_requested_mb"]
        cpu_p95 = _cores(c["cpu_p95"])
        rss_p95 = c["rss_p95"]
        skew, hot = skew_of(insts)
        out.append(
            {
                "component": name,
                "kind": agg.kinds.get(name, "bolt"),
                "instances": len(insts),
                "throughput_p50": c.get("throughput_p50"),
                "throughput_p95": c.get("throughput_p95"),
                "throughput_max": c.get("throughput_max"),
                "instance_rate_p50": c["rate_p50"],
                "instance_rate_p95": c["rate_p95"],
                "instance_rate_max": c["rate_max"],
                "latency_mean_ms": c["latency_mean_ms"],
                "latency_p95_ms": c["latency_p95_ms"],
                "cpu_p50_cores": _cores(c["cpu_p50"]),
                "cpu_p95_cores": cpu_p95,
                "cpu_max_cores": _cores(c["cpu_max"]),
                "cpu_requested_cores": cpu_req,
                "cpu_provisioning_pct": provisioning_pct(cpu_req, cpu_p95),
                "ram_p50_mb": c["rss_p50"],
                "ram_p95_mb": rss_p95,
                "ram_max_mb": c["rss_max"],
                "ram_requested_mb": ram_req,
                "ram_provisioning_pct": provisioning_pct(ram_req, rss_p95),
                "backpressure_pct": _backpressure_pct(c),
                "saturated_pct": 100.0 * c["saturated_rows"] / c["rows"] if c["rows"] else 0.0,
                "skew": skew,
                "hot_task": hot,
            }
        )
    return out


def instance_table(agg: Aggregates) -> list:
    out = []
    for i in sorted(agg.instances, key=lambda i: (i["process"] != "instance", i["component"], i["task_id"] or 0,
                                                   i["container"])):
        cpu_p95 = _cores(i["cpu_p95"])
        out.append(
            {
                "component": i["component"],
                "process": i["process"],
                "task_id": i["task_id"],
                "container": i["container"],
                "host": i["host"],
                "rate_p50": i["rate_p50"],
                "rate_p95": i["rate_p95"],
                "rate_max": i["rate_max"],
                "rate_mean": i["rate_mean"],
                "latency_mean_ms": i["latency_mean_ms"],
                "cpu_p50_cores": _cores(i["cpu_p50"]),
                "cpu_p95_cores": cpu_p95,
                "cpu_max_cores": _cores(i["cpu_max"]),
                "cpu_requested_cores": i["cpu_requested"],
                "cpu_provisioning_pct": provisioning_pct(i["cpu_requested"], cpu_p95),
                "ram_p95_mb": i["rss_p95"],
                "ram_requested_mb": i["ram_requested_mb"],
                "ram_provisioning_pct": provisioning_pct(i["ram_requested_mb"], i["rss_p95"]),
                "backpressure_pct": _backpressure_pct(i),
                "saturated_pct": 100.0 * i["saturated_rows"] / i["rows"] if i["rows"] else 0.0,
                "fails": i["fails"],
            }
        )
    return out


def skew_of(instances: list) -> tuple:
    """(hottest task's mean rate / the component's mean task rate, hottest task id).

    None for fewer than two tasks or no load."""
    tasks = [i for i in instances if i["process"] == "instance"]
    if len(tasks) < 2:
        return None, None
    rates = [i["rate_mean"] for i in tasks]
    mean = sum(rates) / len(rates)
    if mean <= 0:
        return None, None
    hot = max(tasks, key=lambda i: (i["rate_mean"], -i["task_id"]))
    return hot["rate_mean"] / mean, hot["task_id"]


def recommendations(agg: Aggregates, components: list, targets: Targets, policy: Policy,
                    groupings: Optional[dict] = None) -> list:
    """Parallelism and per-instance cpu/ram for every spout and bolt, with their grounds."""
    stats = {c["component"]: c for c in agg.components}
    spout_mean = sum(stats[c["component"]].get("throughput_mean") or 0.0
                     for c in components if c["kind"] == "spout")
    out = []
    for row in components:
        if row["kind"] == "daemon":
            continue
        name = row["component"]
        s = stats[name]
        capacity, basis = instance_capacity(s)
        target, target_basis = component_target(name, s, targets, spout_mean)
        notes = []
        if capacity is None or not capacity > 0:
            parallelism = row["instances"]
            formula = "no load observed: parallelism kept"
        else:
            parallelism = recommended_parallelism(target, capacity, policy.headroom)
            formula = (f"ceil({_num(target)} × {1 + policy.headroom:g} / {_num(capacity)}) = {parallelism}")
        if row["skew"] is not None and row["skew"] >= policy.skew_threshold:
            grouping = (groupings or {}).get(name)
            notes.append(
                f"skew {row['skew']:.2f}: task {row['hot_task']} is hot"
                + (f" ({grouping}); more tasks may not relieve a hot key" if grouping else
                   "; with fields grouping a hot key limits what more tasks can do")
            )
        cpu_cap = max(1.0, row["cpu_max_cores"] or 0.0)
        cpu = None
        if row["cpu_p95_cores"] is not None:
            cpu = min(cpu_cap, max(policy.cpu_step, round_up(row["cpu_p95_cores"] * (1 + policy.margin),
                                                             policy.cpu_step)))
            cpu = round(cpu, 4)
        ram = None
        if row["ram_p95_mb"] is not None:
            ram = int(max(policy.ram_step_mb, round_up(row["ram_p95_mb"] * (1 + policy.margin), policy.ram_step_mb)))
        out.append(
            {
                "component": name,
                "kind": row["kind"],
                "parallelism": row["instances"],
                "target_rate": target,
                "target_basis": target_basis,
                "capacity_per_instance": capacity,
                "capacity_basis": basis,
                "headroom_pct": 100.0 * policy.headroom,
                "recommended_parallelism": parallelism,
                "parallelism_formula": formula,
                "cpu_p95_cores": row["cpu_p95_cores"],
                "recommended_cpu_cores": cpu,
                "cpu_formula": (f"min({cpu_cap:g}, ceil({row['cpu_p95_cores']:.3f} × {1 + policy.margin:g} "
                                f"to {policy.cpu_step:g})) = {cpu:g}") if cpu is not None else "",
                "ram_p95_mb": row["ram_p95_mb"],
                "recommended_ram_mb": ram,
                "ram_formula": (f"ceil({row['ram_p95_mb']:.1f} × {1 + policy.margin:g} to {policy.ram_step_mb}) = {ram}"
                                if ram is not None else ""),
                "notes": "; ".join(notes),
            }
        )
    return out


def instance_capacity(stats: dict) -> tuple:
    """Tuples/s one instance sustains, and how that was found.

    1. the median rate of saturated buckets (cpu or queue at the threshold);
    2. else the median of ``rate * 100 / cpu_percent`` (linear in CPU, one core);
    3. else unknown."""
    if stats["saturated_rows"] and stats["sat_rate_p50"]:
        return stats["sat_rate_p50"], f"saturated: median of {stats['saturated_rows']} saturated buckets"
    if stats["cpu_rate_p50"]:
        return stats["cpu_rate_p50"], "not saturated: rate extrapolated to one core (rate × 100 / cpu%)"
    return None, "no load observed"


def component_target(name: str, stats: dict, targets: Targets, spout_mean: float) -> tuple:
    """The throughput (tuples/s) the component must sustain, and why."""
    explicit = targets.for_component(name)
    if explicit is not None:
        return explicit, "--target-rate for the component"
    mean = stats.get("throughput_mean") or 0.0
    if targets.topology_rate is not None and spout_mean > 0:
        ratio = mean / spout_mean
        return targets.topology_rate * ratio, (
            f"--target-rate {_num(targets.topology_rate)} × observed ratio {ratio:.3g} to the spouts' rate")
    return stats.get("throughput_max") or 0.0, "observed peak throughput"


def _cores(percent: Optional[float]) -> Optional[float]:
    return None if percent is None else percent / 100.0


def _backpressure_pct(stats: dict) -> float:
    return 100.0 * stats["backpressure_ms"] / (stats["seconds"] * 1000.0) if stats["seconds"] else 0.0


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def summary_lines(agg: Aggregates, components: list, recs: list, plans: list) -> list:
    """A few lines for the terminal."""
    span = agg.last_ts - agg.first_ts + agg.interval_secs
    lines = [f"topology {agg.topology} run {agg.run_id}: {agg.rows:,} rows over {span:,.0f} s"]
    for r in recs:
        change = "" if r["recommended_parallelism"] == r["parallelism"] else " <-"
        lines.append(
            f"  {r['component']:<16} par {r['parallelism']:>3} -> {r['recommended_parallelism']:<3}{change:<3}"
            f" cpu {_fmt(r['recommended_cpu_cores'])} cores  ram {_fmt(r['recommended_ram_mb'])} MiB"
            + (f"  [{r['notes']}]" if r["notes"] else "")
        )
    cheapest = [p for p in plans if p.get("cheapest")]
    if cheapest:
        p = cheapest[0]
        lines.append(f"  cheapest plan: {p['algorithm']}/{p['granularity']}: {p['containers']} containers, "
                     f"{p['yarn_vcores']} vcores, {p['yarn_memory_mb']:,} MiB")
    return lines


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if isinstance(value, float) else str(value)
