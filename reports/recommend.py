"""Recommendations: the parallelism and per-instance resources each component needs for a target.

Pure functions of the aggregates and the components table. Each recommendation
is consistent with its own resources: recommended parallelism × capacity per
instance at the recommended cpu ≥ target × (1 + headroom), printed with its
numbers (docs/reports.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from squall.packing import capacity as model
from squall.packing.capacity import EPSILON, Host, Load, num, recommended_parallelism, round_up
from squall.reports.inputs import Targets
from squall.reports.metrics import Aggregates, Thresholds


@dataclass(frozen=True)
class Policy:
    """How recommendations are made."""

    headroom: float = 0.2  # spare throughput over the target, as a fraction
    margin: float = 0.2  # spare cpu/ram over what the load needs, as a fraction
    skew_threshold: float = 1.5  # hottest task / mean task rate that counts as skew
    cpu_step: float = 0.05  # cores
    ram_step_mb: int = 16


def recommendations(agg: Aggregates, components: list, targets: Targets, policy: Policy,
                    hosts: Mapping[str, Host], thresholds: Thresholds,
                    offered: Optional[Mapping[str, float]] = None, groupings: Optional[dict] = None) -> list:
    """Parallelism and per-instance cpu/ram for every spout and bolt, with their grounds.

    ``offered``: tuples/s into each component per tuple/s into the topology, from the
    topology's graph (``offered_ratios``); without it, each component's observed share."""
    stats = {c["component"]: c for c in agg.components}
    spout_mean = sum(stats[c["component"]].get("throughput_mean") or 0.0
                     for c in components if c["kind"] == "spout")
    out = []
    for row in components:
        if row["kind"] == "daemon":
            continue
        s = stats[row["component"]]
        target, target_basis = component_target(row["component"], s, targets, spout_mean, offered)
        out.append(_recommend(row, Load.of(row["kind"], s), hosts.get(s["host"]), target, target_basis, policy,
                              thresholds, offered is None and targets.topology_rate is not None, groupings or {}))
    return out


def _recommend(row: dict, load: Load, host: Optional[Host], target: float, target_basis: str, policy: Policy,
               thresholds: Thresholds, share_observed: bool, groupings: Mapping[str, str]) -> dict:
    name = row["component"]
    alloc = model.allocation(load, host)
    at_allocation = load.cpu_used is not None and load.cpu_used >= thresholds.cpu_allocation * alloc.cores
    capacity, basis, capacity_formula = model.capacity(load, alloc.cores, at_allocation, alloc.shared)
    needed = target * (1.0 + policy.headroom)
    cpu = capacity_at_cpu = predicted = None
    if capacity is None or not capacity > 0:
        parallelism = row["instances"]
        formula = "no load observed: parallelism kept"
    else:
        parallelism = recommended_parallelism(target, capacity, policy.headroom)
        cpu = model.cpu_for(load, needed / parallelism, alloc.cores, policy.margin, policy.cpu_step)
        capacity_at_cpu = model.capacity(load, cpu, at_allocation, alloc.shared)[0] if cpu else capacity
        predicted = parallelism * capacity_at_cpu
        if predicted < needed * (1 - EPSILON):
            raise AssertionError(f"component {name}: {parallelism} × {capacity_at_cpu} < {needed}: "
                                 "the recommendation does not carry its own target")
        formula = (f"ceil({num(target)} × {1 + policy.headroom:g} / {num(capacity)}) = {parallelism}; "
                   f"{parallelism} × {num(capacity_at_cpu)} = {num(predicted)} ≥ {num(needed)}")
    notes = []
    if share_observed and row["saturated"]:
        notes.append("saturated: its observed share of the input understates its load "
                     "(pass --topology-file to derive it from the graph)")
    if alloc.shared:
        notes.append(f"host {host.name} was oversubscribed: capacity is at the {alloc.cores:.2f} cores it got; "
                     "more instances on that host get less each")
    if row["skew"] is not None and row["skew"] >= policy.skew_threshold:
        grouping = groupings.get(name)
        notes.append(
            f"skew {row['skew']:.2f}: task {row['hot_task']} is hot"
            + (f" ({grouping}); more tasks may not relieve a hot key" if grouping else
               "; with fields grouping a hot key limits what more tasks can do")
        )
    ram = None
    if row["ram_p95_mb"] is not None:
        ram = int(max(policy.ram_step_mb, round_up(row["ram_p95_mb"] * (1 + policy.margin), policy.ram_step_mb)))
    return {
        "component": name,
        "kind": row["kind"],
        "parallelism": row["instances"],
        "symptoms": row["symptoms"],
        "target_rate": target,
        "target_basis": target_basis,
        "allocated_cpu_cores": alloc.cores,
        "allocation_basis": alloc.why,
        "capacity_at_allocation": capacity,
        "capacity_formula": capacity_formula,
        "capacity_per_instance": capacity_at_cpu if capacity_at_cpu is not None else capacity,
        "capacity_basis": basis,
        "headroom_pct": 100.0 * policy.headroom,
        "recommended_parallelism": parallelism,
        "parallelism_formula": formula,
        "predicted_throughput": predicted,
        "cpu_per_tuple_ms": row["cpu_per_tuple_ms"],
        "recommended_cpu_cores": cpu,
        "cpu_formula": (f"min({alloc.cores:.3g}, ceil({num(needed / parallelism)}/s × {row['cpu_per_tuple_ms']:.3g} "
                        f"ms × {1 + policy.margin:g} to {policy.cpu_step:g})) = {cpu:g}") if cpu is not None else "",
        "ram_p95_mb": row["ram_p95_mb"],
        "recommended_ram_mb": ram,
        "ram_formula": (f"ceil({row['ram_p95_mb']:.1f} × {1 + policy.margin:g} to {policy.ram_step_mb}) = {ram}"
                        if ram is not None else ""),
        "notes": "; ".join(notes),
    }


def offered_ratios(topology: Any, agg: Aggregates) -> dict:
    """Tuples/s into each component per tuple/s into the topology, along the graph.

    A spout gets its share of the spouts' emits; a bolt gets what its inputs emit,
    each input emitting (emitted / executed) tuples per tuple it executes, measured
    over the run (true under overload too, unlike the bolt's observed throughput).
    An emit counts once per consuming component (grouping ``ALL`` copies it to every
    task: not modelled)."""
    stats = {c["component"]: c for c in agg.components}
    spouts = [c.name for c in topology.components if c.kind == 1]
    emitted = {n: (stats[n].get("throughput_mean") or 0.0) if n in stats else 0.0 for n in spouts}
    total = sum(emitted.values())
    inputs = {c.name: [i.component for i in c.inputs] for c in topology.components}
    ratios: dict = {}

    def fanout(name: str) -> float:
        if name in emitted:
            return 1.0
        s = stats.get(name)
        return s["emitted"] / s["tuples"] if s and s["tuples"] else 0.0

    def ratio(name: str) -> float:
        if name not in ratios:
            if name in emitted:
                ratios[name] = emitted[name] / total if total else 1.0 / len(spouts)
            else:
                ratios[name] = sum(ratio(src) * fanout(src) for src in inputs[name])
        return ratios[name]

    return {c.name: ratio(c.name) for c in topology.components}


def component_target(name: str, stats: dict, targets: Targets, spout_mean: float,
                     offered: Optional[Mapping[str, float]] = None) -> tuple:
    """The throughput (tuples/s) the component must sustain, and why."""
    explicit = targets.for_component(name)
    if explicit is not None:
        return explicit, "--target-rate for the component"
    if targets.topology_rate is not None and offered is not None:
        return targets.topology_rate * offered[name], (
            f"--target-rate {num(targets.topology_rate)} × {offered[name]:.3g} tuples per input tuple (graph)")
    mean = stats.get("throughput_mean") or 0.0
    if targets.topology_rate is not None and spout_mean > 0:
        ratio = mean / spout_mean
        return targets.topology_rate * ratio, (
            f"--target-rate {num(targets.topology_rate)} × observed ratio {ratio:.3g} to the spouts' rate")
    return stats.get("throughput_max") or 0.0, "observed peak throughput"


def note_chains(recs: list, chain_list: Sequence) -> None:
    """Say in each chained component's notes which chain it runs in (its figures are its own), and
    where the recommended parallelisms differ within a chain, that applying them splits it: its
    processes restart unchained (docs/runtime.md, "Chaining")."""
    par = {r["component"]: r["recommended_parallelism"] for r in recs}
    for chain in chain_list:
        note = "chained: " + " -> ".join(chain)
        if len({par.get(c) for c in chain}) > 1:
            note += " (the recommendation splits the chain: its processes restart unchained)"
        for r in recs:
            if r["component"] in chain:
                r["notes"] = "; ".join(n for n in (r["notes"], note) if n)
