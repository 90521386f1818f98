"""``squall report packing``: every packing policy over many topologies, as one Spark job.

Topology files are imported on the driver only; each Spark task receives one
topology's logical plan as Thrift bytes plus one (algorithm, granularity) and
runs ``plans.evaluate_policy``.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from squall.errors import SquallError
from squall.reports import charts, plans
from squall.reports.inputs import load_cluster_view
from squall.reports.output import Report, Table
from squall.reports.progress import SparkProgress

if TYPE_CHECKING:  # pyspark is an extra (squall[reports]): imported where a session starts
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class PackingOptions:
    topologies: tuple  # files, folders or globs
    cluster_view: Optional[str] = None
    config_path: Optional[str] = None
    charts: bool = True


def find_topology_files(specs: tuple) -> list:
    """``.py`` files named directly, found in folders (recursively) or by glob."""
    files: list = []
    for spec in specs:
        path = os.path.expanduser(spec)
        if glob.has_magic(path):
            found = sorted(glob.glob(path, recursive=True))
        elif os.path.isdir(path):
            found = sorted(glob.glob(os.path.join(path, "**", "*.py"), recursive=True))
            found = [f for f in found if not os.path.basename(f).startswith("_")]
        elif os.path.isfile(path):
            found = [path]
        else:
            raise SquallError(f"topologies: {spec} does not exist")
        files += [os.path.abspath(f) for f in found if f.endswith(".py") and os.path.isfile(f)]
    if not files:
        raise SquallError(f"no topology files (*.py) in {', '.join(specs)}")
    return list(dict.fromkeys(files))


def load_plans(files: list) -> list:
    """(topology name, logical plan) for each file; a name used twice is an error."""
    from squall.loader import load_topology_file

    seen: dict = {}
    out = []
    for path in files:
        topology = load_topology_file(path)
        name = topology.plan.name
        if name in seen:
            raise SquallError(f"topology name {name!r} is defined by both {seen[name]} and {path}")
        seen[name] = path
        out.append((name, topology.plan))
    return out


def evaluate_all(spark: "SparkSession", topologies: list, base: Any, view_json: Optional[str]) -> list:
    """One Spark task per topology × policy; rows in a deterministic order."""
    from squall.idl import encode

    layer = plans.report_layer(base)
    tasks = [(name, encode(plan), a, g, layer, view_json) for name, plan in topologies for a, g in plans.POLICIES]
    rdd = spark.sparkContext.parallelize(tasks, max(1, len(tasks)))
    rows = rdd.map(plans.evaluate_policy).collect()
    order = {name: i for i, (name, _) in enumerate(topologies)}
    return sorted(rows, key=lambda r: (order[r["topology"]], plans.POLICIES.index((r["algorithm"], r["granularity"]))))


def rank_per_topology(rows: list) -> list:
    by_topology: dict = {}
    for r in rows:
        by_topology.setdefault(r["topology"], []).append(r)
    out = []
    for name in by_topology:
        out += plans.rank(by_topology[name])
    return out


def overall(rows: list) -> list:
    """Per policy: feasibility, totals (over topologies every policy can pack), mean rank, wins."""
    topologies = sorted({r["topology"] for r in rows})
    everywhere = {t for t in topologies if all(r.get("feasible") for r in rows if r["topology"] == t)}
    out = []
    for a, g in plans.POLICIES:
        mine = [r for r in rows if r["algorithm"] == a and r["granularity"] == g]
        comparable = [r for r in mine if r["topology"] in everywhere]
        feasible = [r for r in mine if r.get("feasible")]
        row = {
            "algorithm": a,
            "granularity": g,
            "topologies": len(mine),
            "feasible": len(feasible),
            "infeasible": len(mine) - len(feasible),
            "wins": sum(1 for r in mine if r.get("cheapest")),
            "mean_rank": sum(r["rank"] for r in mine) / len(mine) if mine else None,
            "comparable_topologies": len(comparable),
            "containers": sum(r["containers"] for r in comparable),
            "yarn_vcores": sum(r["yarn_vcores"] for r in comparable),
            "yarn_memory_mb": sum(r["yarn_memory_mb"] for r in comparable),
            "padding_ram_mb": sum(r["padding_ram_mb"] for r in comparable),
            "yarn_waste_memory_mb": sum(r["yarn_waste_memory_mb"] for r in comparable),
            "ram_utilisation_pct": _mean([r["ram_utilisation_pct"] for r in comparable]),
            "cpu_utilisation_pct": _mean([r["cpu_utilisation_pct"] for r in comparable]),
        }
        if any("fits_cluster" in r for r in mine):
            row["fit_cluster"] = sum(1 for r in mine if r.get("fits_cluster"))
            row["fragmentation_pct"] = _mean([r["fragmentation_pct"] for r in comparable if "fragmentation_pct" in r])
        out.append(row)
    out.sort(key=lambda r: (r["infeasible"], r["mean_rank"] if r["mean_rank"] is not None else 1e9,
                            r["yarn_memory_mb"]))
    for i, r in enumerate(out, 1):
        r["overall_rank"] = i
    return out


def _mean(values: list) -> Optional[float]:
    return sum(values) / len(values) if values else None


_ROW_COLUMNS = [
    "topology", "rank", "algorithm", "granularity", "feasible", "cheapest", "tasks", "containers",
    "cpu_needed", "cpu_requested", "padding_cpu", "yarn_vcores", "yarn_waste_vcores", "ram_needed_mb",
    "ram_requested_mb", "padding_ram_mb", "yarn_memory_mb", "yarn_waste_memory_mb", "cpu_utilisation_pct",
    "ram_utilisation_pct", "fits_cluster", "unplaced", "fragmentation_pct", "error",
]


def packing_report(options: PackingOptions, spark: "SparkSession", progress: Optional[SparkProgress] = None) -> Report:
    from squall.conf import base_config

    progress = progress or SparkProgress(spark, enabled=False)
    base = base_config(options.config_path)
    view = load_cluster_view(options.cluster_view) if options.cluster_view else None
    view_json = None
    if view is not None:
        with open(os.path.expanduser(options.cluster_view)) as f:
            view_json = json.dumps(json.load(f))
    files = find_topology_files(options.topologies)
    progress.step(f"loading {len(files)} topologies")
    topologies = load_plans(files)
    progress.step(f"packing {len(topologies)} topologies × {len(plans.POLICIES)} policies")
    rows = rank_per_topology(evaluate_all(spark, topologies, base, view_json))
    summary_rows = overall(rows)
    columns = [c for c in _ROW_COLUMNS if any(c in r for r in rows)]
    tables = [
        Table("policies", "Policies overall", summary_rows,
              note="Totals are over the topologies every policy can pack (comparable_topologies). Ranked by "
                   "infeasible count, then mean per-topology rank, then total YARN memory."),
        Table("per_topology", "Every topology × policy", [{c: r.get(c) for c in columns} for r in rows],
              note="Per topology, rank 1 is the cheapest feasible plan: least YARN memory, then vcores, then "
                   "containers. Waste is YARN's rounding: granted minus requested."),
    ]
    best = summary_rows[0]
    summary = [
        f"{len(topologies)} topologies × {len(plans.POLICIES)} policies = {len(rows)} packings",
        f"  best overall: {best['algorithm']}/{best['granularity']} (mean rank {best['mean_rank']:.2f}, "
        f"{best['wins']} wins, {best['infeasible']} infeasible)",
    ]
    for r in summary_rows:
        summary.append(
            f"  {r['overall_rank']}. {r['algorithm'] + '/' + r['granularity']:<18} feasible {r['feasible']:>3}/"
            f"{r['topologies']:<3} mean rank {r['mean_rank']:.2f}  containers {r['containers']:>4}  "
            f"vcores {r['yarn_vcores']:>4}  memory {r['yarn_memory_mb']:>8,} MiB"
        )
    facts = [("topologies", len(topologies)), ("policies", len(plans.POLICIES)),
             ("Spark tasks", len(rows)), ("cluster view", options.cluster_view or "none")]
    report = Report("packing", "Packing policy report", facts, tables, [], summary)
    if options.charts:
        progress.step("drawing charts")
        panels = [("yarn_memory_gib", "YARN memory (comparable)", "memory (GiB)"),
                  ("yarn_vcores", "YARN vcores (comparable)", "vcores"),
                  ("mean_rank", "Mean rank per topology", "rank (1 = cheapest)"),
                  ("infeasible", "Infeasible topologies", "topologies")]
        chart_rows = sorted([dict(r, yarn_memory_gib=r["yarn_memory_mb"] / 1024.0) for r in summary_rows],
                            key=lambda r: plans.POLICIES.index((r["algorithm"], r["granularity"])))
        report.charts.append(charts.policy_bars(chart_rows, "Packing policies over all topologies", panels))
    return report
