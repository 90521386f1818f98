"""``squall report capacity``: metrics files in, a capacity-planning Report out."""
from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from squall.errors import SquallError
from squall.chaining import chains
from squall.reports import capacity, charts, checkpoints, metrics, plans, recommend, sources
from squall.packing.capacity import Host
from squall.reports.recommend import Policy
from squall.reports.inputs import (
    ClusterView,
    Targets,
    find_metrics,
    load_cluster_view,
    load_packing_plan,
    read_text,
)
from squall.reports.metrics import Thresholds
from squall.reports.output import Report, Table
from squall.reports.progress import SparkProgress

if TYPE_CHECKING:  # pyspark is an extra (squall[reports]): imported where a session starts
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class CapacityOptions:
    metrics: str
    topology: Optional[str] = None
    run_id: Optional[str] = None
    targets: Targets = field(default_factory=Targets)
    policy: Policy = field(default_factory=Policy)
    thresholds: Thresholds = field(default_factory=Thresholds)
    topology_file: Optional[str] = None
    packing_plan: Optional[str] = None
    cluster_view: Optional[str] = None
    config_path: Optional[str] = None
    skip_malformed: bool = False
    charts: bool = True
    host_cores: Optional[float] = None  # cores of every host of the run; default: this machine's, if it ran there


def capacity_report(options: CapacityOptions, spark: "SparkSession", progress: Optional[SparkProgress] = None) -> Report:
    """Run the capacity job on ``spark`` and build the report (nothing is written)."""
    from squall.conf import base_config

    progress = progress or SparkProgress(spark, enabled=False)
    base = base_config(options.config_path)
    view = load_cluster_view(options.cluster_view) if options.cluster_view else None
    logical = _load_topology(options.topology_file)
    source = find_metrics(options.metrics)

    progress.step("reading and validating metrics")
    flat = metrics.read_metrics(spark, source)
    try:
        validation = metrics.validate(flat)
        _check_malformed(validation, options)
        run = metrics.choose_run(validation, options.topology or (logical.name if logical else None),
                                 options.run_id, options.metrics)
        spouts = [c.name for c in logical.components if c.kind == 1] if logical else None
        progress.step(f"aggregating {run['rows']:,} rows of {run['topology']}")
        agg = metrics.aggregate(flat, run, options.thresholds, spouts)
        checkpointed = metrics.aggregate_checkpoints(flat, run)
        partitions = sources.partition_table(metrics.aggregate_sources(flat, run))
    finally:
        flat.unpersist()

    groupings = _groupings(logical) if logical else {}
    hosts = _hosts(agg, options.host_cores)
    components = capacity.component_table(agg, hosts, options.thresholds)
    instances = capacity.instance_table(agg)
    offered = recommend.offered_ratios(logical.plan, agg) if logical else None
    recs = recommend.recommendations(agg, components, options.targets, options.policy, hosts, options.thresholds,
                                     offered, groupings)
    if logical:
        recommend.note_chains(recs, chains(logical.plan))

    progress.step("packing the recommendation under every policy")
    plan = _observed_plan(spark, options, source, run)
    yarn = plans.Yarn.from_config(base)
    current = plans.plan_cost(plan, yarn) if plan else None
    policy_rows, headroom = [], []
    if plan is not None or logical is not None:
        topology = logical.plan if logical else plans.topology_from_plan(plan, agg.kinds)
        policy_rows = _evaluate(topology, recs, base, view, run["topology"])
        best = next((p for p in policy_rows if p.get("cheapest")), None)
        if view is not None and best is not None:
            headroom = [plans.queue_headroom(view, current, best)]
    tables = [
        Table("components", "Components", components, note=_COMPONENT_NOTE),
        Table("recommendations", "Recommendations", recs, note=_recommendation_note(options.policy)),
        Table("plans", "Recommended plan under every packing algorithm × granularity",
              [{k: v for k, v in p.items() if k != "shapes"} for p in policy_rows],
              note="Cheapest: feasible (and fitting the cluster view, when given), then least YARN memory, "
                   "vcores, containers. YARN memory is each container's memory rounded up to "
                   f"squall.yarn.min.allocation.mb ({yarn.min_allocation_mb} MiB); vcores are whole cores."),
        Table("hosts", "Hosts", capacity.host_table(hosts), note=_HOST_NOTE),
        Table("instances", "Instances", instances),
        Table("malformed", "Malformed metrics rows", validation.reasons,
              note=f"{validation.malformed:,} of {validation.lines:,} rows read were malformed and left out."),
    ]
    if current is not None:
        tables.insert(3, Table("current_plan", "Observed packing plan",
                               [{k: v for k, v in current.items() if k != "shapes"}]))
    checkpoint_lines = []
    if checkpointed is not None:
        row, rows, checkpoint_lines = checkpoints.report_part(checkpointed, agg.kinds)
        at = [t.name for t in tables].index("hosts")
        tables[at:at] = [Table("checkpoints", "Checkpoints", [row], note=checkpoints.TOPOLOGY_NOTE),
                         Table("checkpoint_components", "Checkpoints per component", rows,
                               note=checkpoints.COMPONENT_NOTE)]
    source_lines = []
    if partitions:
        source_notes = sources.notes(partitions)
        source_lines = sources.summary_lines(partitions, source_notes)
        at = [t.name for t in tables].index("hosts")
        tables.insert(at, Table("sources", "Source partitions", partitions,
                                note=sources.NOTE + (" Notes: " + " ".join(source_notes) if source_notes else "")))
    if headroom:
        tables.insert(3, Table("cluster", f"Queue headroom ({view.queue_name})", headroom,
                               note="free = queue capacity - used; after = free - (cheapest recommended plan "
                                    "- observed plan), in YARN shapes."))
    facts = [
        ("topology", agg.topology), ("run", agg.run_id), ("metrics", options.metrics),
        ("rows (valid, this run)", agg.rows), ("malformed rows", validation.malformed),
        ("bucket", f"{agg.interval_secs:g} s"),
        ("span", f"{agg.last_ts - agg.first_ts + agg.interval_secs:,.0f} s"),
        ("headroom", f"{100 * options.policy.headroom:g} %"), ("margin", f"{100 * options.policy.margin:g} %"),
        ("target", _target_text(options.targets)),
    ]
    report = Report(
        kind="capacity",
        title=f"Capacity report: {agg.topology} ({agg.run_id})",
        facts=facts,
        tables=tables,
        charts=[],
        summary=capacity.summary_lines(agg, recs, policy_rows, hosts) + checkpoint_lines + source_lines,
        data={"parameters": {"headroom": options.policy.headroom, "margin": options.policy.margin,
                             "skew_threshold": options.policy.skew_threshold,
                             "saturation_busy": options.thresholds.busy,
                             "saturation_cpu_allocation": options.thresholds.cpu_allocation},
              "series": agg.series},
    )
    if validation.malformed:
        report.summary.append(f"  {validation.malformed:,} malformed rows left out (see the malformed table)")
    if options.charts:
        progress.step("drawing charts")
        report.charts = _charts(agg, components, instances, policy_rows, recs)
    return report


_COMPONENT_NOTE = (
    "throughput_*: the component's tuples/s summed over its tasks per bucket (bolts: executed, spouts: "
    "emitted); instance_rate_*: one task's tuples/s per bucket. busy = rate × time in process() per tuple "
    "(service_ms; Little's law), median over loaded buckets; cpu_per_tuple = cpu seconds / tuples; "
    "tuples_held = rate × process latency (tuples inside an instance); queue_depth is written as 0 by "
    "today's runtime and not used. symptoms (Dhalion): busy >= 90 %, holds its upstream in backpressure, "
    "runs at its CPU allocation. cpu in cores (100 % of one core = 1), ram is resident memory. "
    "provisioning % = 100 × (requested − p95 used) / requested: positive is over-provisioned. "
    "skew = hottest task's mean rate / mean task rate."
)

_HOST_NOTE = (
    "cores_used_mean: cpu of every process of this run on the host, averaged over the run. Oversubscribed: "
    ">= 90 % of the host's cores; an instance's allocation is then what it got while busy. Other work on "
    "the host (other topologies, other users) is not in the metrics: the host may have been busier."
)


def _recommendation_note(policy: Policy) -> str:
    return (
        "capacity per instance at a cpu allocation a = min(1 / time in process() per tuple, a / cpu per tuple); "
        "a = the instance's request (one core without one), or its share of an oversubscribed host. "
        f"parallelism = ceil(target × (1 + headroom {policy.headroom:g}) / capacity at the allocation); "
        f"cpu = min(allocation, rate per instance × cpu per tuple × (1 + margin {policy.margin:g}) rounded up "
        f"to {policy.cpu_step:g}); parallelism × capacity at that cpu ≥ target × (1 + headroom), always. "
        f"ram = p95 × (1 + margin) rounded up to {policy.ram_step_mb} MiB."
    )


def _hosts(agg: metrics.Aggregates, host_cores: Optional[float]) -> dict:
    """The run's hosts; their cores are ``host_cores``, else this machine's when the run was on it."""
    here = socket.gethostname()
    out = {}
    for h in agg.hosts:
        cores = host_cores if host_cores is not None else (float(os.cpu_count() or 1) if h["host"] == here else None)
        out[h["host"]] = Host(h["host"], cores, h["cores_used_mean"])
    return out


def _target_text(targets: Targets) -> str:
    parts = []
    if targets.topology_rate is not None:
        parts.append(f"{targets.topology_rate:,.0f} tuples/s into the topology")
    parts += [f"{c}: {r:,.0f} tuples/s" for c, r in targets.components]
    return "; ".join(parts) or "observed peak"


def _check_malformed(validation: metrics.Validation, options: CapacityOptions) -> None:
    if not validation.malformed or options.skip_malformed:
        return
    first = validation.reasons[0]
    where = os.path.basename(first["example_file"] or "?")
    raise SquallError(
        f"{validation.malformed:,} of {validation.lines:,} metrics rows are malformed "
        f"(first reason: {first['reason']}, {first['rows']:,} rows, e.g. in {where}); "
        "pass --skip-malformed to report without them"
    )


def _load_topology(path: Optional[str]) -> Any:
    if not path:
        return None
    from squall.loader import load_topology_file

    return load_topology_file(path)


def _groupings(topology: Any) -> dict:
    from squall.logical import grouping_name

    out = {}
    for c in topology.plan.components:
        fields = [f"{grouping_name(i.grouping).lower()}({','.join(i.fields)})" for i in c.inputs
                  if grouping_name(i.grouping) in ("FIELDS", "PARTIAL_KEY")]
        if fields:
            out[c.name] = "grouping " + ", ".join(fields)
    return out


def _observed_plan(spark: "SparkSession", options: CapacityOptions, source: Any, run: dict) -> Optional[dict]:
    if options.packing_plan:
        text = read_text(spark, options.packing_plan)
        if text is None:
            raise SquallError(f"packing plan {options.packing_plan} does not exist")
        return load_packing_plan(text, options.packing_plan)
    candidates = [c for c in source.plan_candidates if f"/{run['run_id']}/" in c.replace(os.sep, "/")]
    candidates = candidates or (list(source.plan_candidates) if len(source.plan_candidates) == 1 else [])
    for candidate in candidates:
        text = read_text(spark, candidate)
        if text is not None:
            return load_packing_plan(text, candidate)
    return None


def _evaluate(topology: Any, recs: list, base: Any, view: Optional[ClusterView], name: str) -> list:
    from squall.idl import encode

    recommended = plans.with_recommendation(topology, recs)
    data = encode(recommended)
    layer = plans.report_layer(base)
    view_json = json.dumps(_view_dict(view)) if view is not None else None
    rows = [plans.evaluate_policy((name, data, a, g, layer, view_json)) for a, g in plans.POLICIES]
    return plans.rank(rows)


def _view_dict(view: ClusterView) -> dict:
    def cap(c: Any) -> dict:
        return {"vcores": c.vcores, "memory_mb": c.memory_mb}

    return {
        "queue": {"name": view.queue_name, "capacity": cap(view.queue_capacity), "used": cap(view.queue_used)},
        "nodes": [{"host": n.host, "capacity": cap(n.capacity), "used": cap(n.used)} for n in view.nodes],
    }


def _charts(agg: metrics.Aggregates, components: list, instances: list, policy_rows: list, recs: list) -> list:
    out = [
        charts.what_if(recs, components),
        charts.over_time(agg.series, agg.kinds, "rate", "Throughput over time per component",
                         "throughput (tuples/s)"),
        charts.over_time(agg.series, agg.kinds, "cpu_cores", "CPU over time per component (all tasks)",
                         "cpu (cores)"),
        charts.requested_vs_used(components),
        charts.task_rates(instances),
    ]
    feasible = [p for p in policy_rows if "yarn_memory_mb" in p]
    if feasible:
        rows = sorted(feasible, key=lambda p: (plans.ALGORITHMS.index(p["algorithm"]), p["granularity"]))
        for r in rows:
            r["yarn_memory_gib"] = r["yarn_memory_mb"] / 1024.0
        out.append(charts.policy_bars(
            rows, "Recommended plan by packing policy",
            [("containers", "Containers", "containers"), ("yarn_vcores", "YARN vcores", "vcores"),
             ("yarn_memory_gib", "YARN memory", "memory (GiB)")],
        ))
    return out
