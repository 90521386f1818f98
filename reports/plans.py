"""Packing policies evaluated on one topology: cost on YARN, waste, fit on a cluster.

``evaluate_policy`` is what one Spark task of the packing report runs (and
what the capacity report runs for its recommended plan): a logical plan in
Thrift bytes in, one plain-dict row out. Everything here is deterministic.
"""
from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from squall.idl import schema
from squall.packing import normalise
from squall.packing.request import ALGORITHMS, GRANULARITIES
from squall.reports.inputs import ClusterView

POLICIES = tuple((a, g) for a in ALGORITHMS for g in GRANULARITIES)
EPSILON = 1e-9


@dataclass(frozen=True)
class Yarn:
    """YARN's allocation rules (``squall.yarn.*``)."""

    min_allocation_mb: int = 1024
    max_allocation_mb: int = 8192
    max_allocation_vcores: int = 4

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> "Yarn":
        return cls(
            int(config["squall.yarn.min.allocation.mb"]),
            int(config["squall.yarn.max.allocation.mb"]),
            int(config["squall.yarn.max.allocation.vcores"]),
        )

    def shape(self, cpu: float, ram_mb: float) -> tuple:
        """``(vcores, memory_mb)`` YARN grants for a request (packing's ``normalise`` rule)."""
        request = schema.Resources(cpu=float(cpu), ram_mb=int(math.ceil(ram_mb - EPSILON)), disk_mb=0)
        memory, vcores = normalise(request, {"squall.yarn.min.allocation.mb": self.min_allocation_mb})
        return vcores, memory


def yarn_caps(config: Mapping[str, object]) -> dict:
    """Config changes that make task-granularity containers fit YARN: the container
    caps ``squall.container.max.cpu|ram.mb`` lowered to YARN's maximum allocation."""
    return {
        "squall.container.max.cpu": float(min(config["squall.container.max.cpu"],
                                              config["squall.yarn.max.allocation.vcores"])),
        "squall.container.max.ram.mb": int(min(config["squall.container.max.ram.mb"],
                                               config["squall.yarn.max.allocation.mb"])),
    }


def report_layer(config: Mapping[str, object]) -> dict:
    """The config layer shipped to every Spark task: Squall's keys, with ``yarn_caps`` applied."""
    layer = {k: config[k] for k in config if k.startswith(("squall.", "topology."))}
    layer.update(yarn_caps(config))
    return layer


def plan_cost(plan: Mapping[str, object], yarn: Yarn) -> dict:
    """Totals of a plan (``plan_to_json`` shape): requested, needed, padding, YARN shape and waste."""
    containers = plan["containers"]
    cpu = sum(c["resources"]["cpu"] for c in containers)
    ram = sum(c["resources"]["ram_mb"] for c in containers)
    needed_cpu = sum(i["resources"]["cpu"] for c in containers for i in c["instances"])
    needed_ram = sum(i["resources"]["ram_mb"] for c in containers for i in c["instances"])
    shapes = [yarn.shape(c["resources"]["cpu"], c["resources"]["ram_mb"]) for c in containers]
    vcores = sum(s[0] for s in shapes)
    memory = sum(s[1] for s in shapes)
    too_big = [c["id"] for c, s in zip(containers, shapes)
               if s[0] > yarn.max_allocation_vcores or s[1] > yarn.max_allocation_mb]
    padding_cpu = sum(c.get("padding", {}).get("cpu", 0.0) for c in containers)
    padding_ram = sum(c.get("padding", {}).get("ram_mb", 0) for c in containers)
    return {
        "containers": len(containers),
        "instances": sum(len(c["instances"]) for c in containers),
        "cpu_requested": round(cpu, 6),
        "ram_requested_mb": int(ram),
        "cpu_needed": round(needed_cpu, 6),
        "ram_needed_mb": int(needed_ram),
        "padding_cpu": round(padding_cpu, 6),
        "padding_ram_mb": int(padding_ram),
        "yarn_vcores": vcores,
        "yarn_memory_mb": memory,
        "yarn_waste_vcores": round(vcores - cpu, 6),
        "yarn_waste_memory_mb": int(memory - ram),
        "cpu_utilisation_pct": 100.0 * needed_cpu / vcores if vcores else 0.0,
        "ram_utilisation_pct": 100.0 * needed_ram / memory if memory else 0.0,
        "oversized_containers": too_big,
        "shapes": sorted(shapes, reverse=True),
    }


def place_on_cluster(shapes: Sequence[tuple], view: ClusterView) -> dict:
    """First-fit decreasing of YARN container shapes onto the nodes' free resources.

    ``fragmentation_pct`` = 100 × (1 − largest free memory on one node / total
    free memory) after placement: 0 when what is left is in one piece."""
    free = [[n.free.vcores, n.free.memory_mb] for n in view.nodes]
    placed = unplaced = 0
    for vcores, memory in sorted(shapes, key=lambda s: (s[1], s[0]), reverse=True):
        for node in free:
            if node[0] + EPSILON >= vcores and node[1] + EPSILON >= memory:
                node[0] -= vcores
                node[1] -= memory
                placed += 1
                break
        else:
            unplaced += 1
    total = sum(max(0.0, n[1]) for n in free)
    largest = max((n[1] for n in free), default=0.0)
    return {
        "placed": placed,
        "unplaced": unplaced,
        "fits_cluster": unplaced == 0,
        "free_memory_after_mb": total,
        "fragmentation_pct": 100.0 * (1.0 - largest / total) if total > 0 else 0.0,
    }


def queue_headroom(view: ClusterView, before: Optional[dict], after: dict) -> dict:
    """Queue room left for other jobs now and with ``after`` replacing ``before`` (YARN shapes)."""
    free = view.queue_free
    delta_v = after["yarn_vcores"] - (before["yarn_vcores"] if before else 0)
    delta_m = after["yarn_memory_mb"] - (before["yarn_memory_mb"] if before else 0)
    return {
        "queue": view.queue_name,
        "queue_vcores": view.queue_capacity.vcores,
        "queue_memory_mb": view.queue_capacity.memory_mb,
        "free_vcores_before": free.vcores,
        "free_memory_mb_before": free.memory_mb,
        "free_vcores_after": free.vcores - delta_v,
        "free_memory_mb_after": free.memory_mb - delta_m,
        "free_vcores_after_pct": _pct(free.vcores - delta_v, view.queue_capacity.vcores),
        "free_memory_after_pct": _pct(free.memory_mb - delta_m, view.queue_capacity.memory_mb),
    }


def _pct(part: float, whole: float) -> Optional[float]:
    return 100.0 * part / whole if whole else None


def evaluate_policy(task: tuple) -> dict:
    """One Spark task: ``(name, topology_bytes, algorithm, granularity, config_layer, view_json)``.

    Packs the decoded topology with squall.packing and returns the plan's cost,
    or the reason it is infeasible (a PackingError, or a container larger than
    YARN allows)."""
    name, data, algorithm, granularity, layer, view_json = task
    from squall.conf import base_config
    from squall.idl import decode
    from squall.packing import PackingError, pack, plan_to_json
    from squall.reports.inputs import parse_cluster_view

    base = base_config().with_layer(layer, "--config-path")
    topology = decode(schema.Topology, data)
    row = {"topology": name, "algorithm": algorithm, "granularity": granularity,
           "tasks": sum(c.parallelism for c in topology.components)}
    try:
        plan = plan_to_json(name, pack(topology, base=base, algorithm=algorithm, granularity=granularity))
    except PackingError as e:
        return {**row, "feasible": False, "error": str(e)}
    yarn = Yarn.from_config(base)
    cost = plan_cost(plan, yarn)
    error = ""
    if cost["oversized_containers"]:
        error = (f"containers {cost['oversized_containers']} exceed YARN's maximum allocation "
                 f"({yarn.max_allocation_vcores} vcores, {yarn.max_allocation_mb} MiB)")
    row.update(cost, feasible=not error, error=error)
    if view_json is not None:
        row.update(place_on_cluster(cost["shapes"], parse_cluster_view(json.loads(view_json))))
    return row


def rank(rows: list) -> list:
    """Cheapest first: feasible (and fitting the cluster, when known), then YARN
    memory, vcores, containers; ``rank`` 1..n and ``cheapest`` on the first."""
    def key(r: dict) -> tuple:
        ok = r.get("feasible") and r.get("fits_cluster", True)
        return (not ok, r.get("yarn_memory_mb", 0), r.get("yarn_vcores", 0), r.get("containers", 0),
                ALGORITHMS.index(r["algorithm"]), GRANULARITIES.index(r["granularity"]))
    ordered = sorted(rows, key=key)
    for i, r in enumerate(ordered, 1):
        r["rank"] = i
        r["cheapest"] = i == 1 and bool(r.get("feasible")) and r.get("fits_cluster", True)
    return ordered


# ------------------------------------------------------------ topology structs


def topology_from_plan(plan: Mapping[str, object], kinds: Mapping[str, str]) -> schema.Topology:
    """A logical plan good enough to repack: components, parallelism and per-instance
    resources from an observed packing plan (used when no topology file is given)."""
    comps: dict = {}
    for c in plan["containers"]:
        for i in c["instances"]:
            comps.setdefault(i["component"], []).append(i["resources"])
    components = []
    for name in sorted(comps):
        res = comps[name][0]
        config = {"squall.component.cpu": float(res["cpu"]), "squall.component.ram.mb": int(res["ram_mb"])}
        if res.get("disk_mb") is not None:
            config["squall.component.disk.mb"] = int(res["disk_mb"])
        kind = schema.ComponentKind.SPOUT if kinds.get(name) == "spout" else schema.ComponentKind.BOLT
        components.append(schema.Component(
            name=name, kind=kind, class_name="unknown:Unknown", parallelism=len(comps[name]),
            outputs=[schema.StreamSchema(name="default", fields=["value"], direct=False)], inputs=[],
            config={k: json.dumps(v) for k, v in config.items()},
        ))
    workers = max(1, len(plan["containers"]))
    return schema.Topology(name=str(plan.get("topology", "topology")), components=components,
                           config={"topology.workers": json.dumps(workers)}, overrides={})


def with_recommendation(topology: Any, recs: Sequence[Mapping[str, object]]) -> Any:
    """A copy of ``topology`` with each component's recommended parallelism, cpu and ram.

    ``topology.workers``, when set, grows in proportion to the task count, so
    round-robin keeps its containers about as full as they were."""
    new = copy.deepcopy(topology)
    by_name = {r["component"]: r for r in recs}
    before = sum(c.parallelism for c in new.components)
    for component in new.components:
        r = by_name.get(component.name)
        if r is None:
            continue
        component.parallelism = int(r["recommended_parallelism"])
        config = dict(component.config)
        if r.get("recommended_cpu_cores") is not None:
            config["squall.component.cpu"] = json.dumps(float(r["recommended_cpu_cores"]))
        if r.get("recommended_ram_mb") is not None:
            config["squall.component.ram.mb"] = json.dumps(int(r["recommended_ram_mb"]))
        component.config = config
    after = sum(c.parallelism for c in new.components)
    config = dict(new.config)
    from squall.logical import topology_config

    workers = topology_config(topology)["topology.workers"]
    if before and workers is not None:
        config["topology.workers"] = json.dumps(max(1, min(after, math.ceil(workers * after / before))))
    new.config = config
    return new
