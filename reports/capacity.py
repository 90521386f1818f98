"""Capacity analysis: the components and instances tables and the terminal summary.

Pure functions of the aggregates (no Spark); ``recommend`` makes the
recommendations and ``packing/capacity.py`` holds the per-instance model.
"""
from __future__ import annotations

from typing import Mapping, Optional

from squall.packing import capacity as model
from squall.packing.capacity import Host, Load
from squall.reports.metrics import Aggregates, Thresholds
from squall.reports.model import symptoms


def provisioning_pct(requested: Optional[float], used: Optional[float]) -> Optional[float]:
    """``100 * (requested - used) / requested``: > 0 over-provisioned, < 0 under."""
    if requested is None or used is None or requested <= 0:
        return None
    return 100.0 * (requested - used) / requested


def component_table(agg: Aggregates, hosts: Mapping[str, Host], thresholds: Thresholds) -> list:
    """One row per component: throughput, latency, cpu and memory versus requested, the
    model's figures (busy, service time, cpu per tuple), Dhalion's symptoms, skew."""
    by_component: dict = {}
    for inst in agg.instances:
        by_component.setdefault(inst["component"], []).append(inst)
    spout_bp = spout_backpressure_pct(agg)
    out = []
    for c in sorted(agg.components, key=lambda c: (agg.kinds.get(c["component"]) == "daemon", c["component"])):
        name = c["component"]
        kind = agg.kinds.get(name, "bolt")
        insts = by_component.get(name, [])
        cpu_req = c["cpu_requested"]
        ram_req = c["ram_requested_mb"]
        cpu_p95 = _cores(c["cpu_p95"])
        rss_p95 = c["rss_p95"]
        skew, hot = skew_of(insts)
        load = Load.of(kind, c) if kind != "daemon" else None
        found = []
        if load is not None:
            cores = model.allocation(load, hosts.get(c["host"])).cores
            found = symptoms(load, cores, spout_bp, thresholds)
        out.append(
            {
                "component": name,
                "kind": kind,
                "instances": len(insts),
                "throughput_p50": c.get("throughput_p50"),
                "throughput_p95": c.get("throughput_p95"),
                "throughput_max": c.get("throughput_max"),
                "instance_rate_p50": c["rate_p50"],
                "instance_rate_p95": c["rate_p95"],
                "instance_rate_max": c["rate_max"],
                "latency_mean_ms": c["latency_mean_ms"],
                "latency_p95_ms": c["latency_p95_ms"],
                "busy_pct": _pct(load.busy if load else None),
                "service_ms": _ms(load.service_secs if load else None),
                "cpu_per_tuple_ms": _ms(load.cpu_per_tuple if load else None),
                "tuples_held": load.held if load else None,
                "queue_depth_max": c["queue_depth_max"],
                "symptoms": "; ".join(found),
                "saturated": bool(found),
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
                "busy_pct": _pct(i["busy_p50"]),
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


def host_table(hosts: Mapping[str, Host]) -> list:
    """Every host of the run: its cores and what the run's own processes used of them."""
    return [
        {"host": h.name, "cores": h.cores, "cores_used_mean": h.cores_used_mean,
         "used_pct": _pct(h.cores_used_mean / h.cores) if h.cores else None, "oversubscribed": h.oversubscribed}
        for h in sorted(hosts.values(), key=lambda h: h.name)
    ]


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


def spout_backpressure_pct(agg: Aggregates) -> float:
    """Share of the time the spouts were held back (blocked sending), over all spout tasks."""
    spouts = [c for c in agg.components if agg.kinds.get(c["component"]) == "spout"]
    seconds = sum(c["seconds"] or 0.0 for c in spouts)
    return 100.0 * sum(c["backpressure_ms"] or 0.0 for c in spouts) / (seconds * 1000.0) if seconds else 0.0


def _cores(percent: Optional[float]) -> Optional[float]:
    return None if percent is None else percent / 100.0


def _pct(fraction: Optional[float]) -> Optional[float]:
    return None if fraction is None else 100.0 * fraction


def _ms(seconds: Optional[float]) -> Optional[float]:
    return None if seconds is None else 1000.0 * seconds


def _backpressure_pct(stats: dict) -> float:
    return 100.0 * stats["backpressure_ms"] / (stats["seconds"] * 1000.0) if stats["seconds"] else 0.0


def summary_lines(agg: Aggregates, recs: list, plans: list, hosts: Mapping[str, Host]) -> list:
    """A few lines for the terminal."""
    span = agg.last_ts - agg.first_ts + agg.interval_secs
    lines = [f"topology {agg.topology} run {agg.run_id}: {agg.rows:,} rows over {span:,.0f} s"]
    for h in sorted(hosts.values(), key=lambda h: h.name):
        if h.oversubscribed:
            lines.append(f"  host {h.name} was oversubscribed: the run's processes used {h.cores_used_mean:.2f} "
                         f"of its {h.cores:g} cores")
    for r in recs:
        change = "" if r["recommended_parallelism"] == r["parallelism"] else " <-"
        lines.append(
            f"  {r['component']:<16} par {r['parallelism']:>3} -> {r['recommended_parallelism']:<3}{change:<3}"
            f" cpu {_fmt(r['recommended_cpu_cores'])} cores  ram {_fmt(r['recommended_ram_mb'])} MiB"
            f"  ({r['capacity_basis']})" + (f"  [{r['symptoms']}]" if r["symptoms"] else "")
            + (f"  [{r['notes']}]" if r["notes"] else "")
        )
        if r["parallelism_formula"]:
            lines.append(f"  {'':<16} {r['parallelism_formula']}")
    cheapest = [p for p in plans if p.get("cheapest")]
    if cheapest:
        p = cheapest[0]
        lines.append(f"  cheapest plan: {p['algorithm']}/{p['granularity']}: {p['containers']} containers, "
                     f"{p['yarn_vcores']} vcores, {p['yarn_memory_mb']:,} MiB")
    return lines


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if isinstance(value, float) else str(value)
