"""Diagnoses -> resolutions: the action that answers each diagnosis, its formula with the figures in
it, its predicted effect and cost; and, once applied and stabilized, whether it had that effect.

Pure (docs/health.md, "How it decides"). Parallelism comes from the capacity model the capacity
report uses (``packing/capacity.py``): ``ceil(demand × (1 + headroom) / capacity per instance)`` with
the headroom that sizes an instance for ``squall.health.target.utilization`` busy.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

from squall.health import diagnose as dx
from squall.health.diagnose import Diagnosis
from squall.health.model import Action, ComponentObservation, Decision, Observation
from squall.health.settings import HealthSettings
from squall.packing import capacity

CPU_STEP = 0.05  # cores: a right-sized request is a multiple of this
RAM_STEP_MB = 16
RESIZE_CHANGE = 0.2  # a request is right-sized only when it moves by this share or more (no churn)
CARRIED = 0.9  # a scale-up is effective when the component carries this share of the predicted input
APPLIED = ("applied", "effective", "ineffective")
HOT_KEY_SHARE = 0.5  # a sampled key of the hot task is named hot with this share of its hottest key's or more


def decision_id(diagnosis: str, component: Optional[str], time: float) -> str:
    return f"{int(round(time * 1000))}-{diagnosis}-{component or 'topology'}"


def resolve(d: Diagnosis, obs: Observation, recent: Sequence[Observation], settings: HealthSettings,
            history: Sequence[Decision]) -> Optional[Decision]:
    """The decision answering ``d``, or None when nothing would change."""
    comp = obs.components[d.component]
    if d.name == "under_provisioned":
        return _scale_up(d, comp, obs, settings)
    if d.name == "over_provisioned":
        return _scale_down(d, comp, obs, recent, settings)
    if d.name == "slow_instance":
        return _slow(d, comp, obs, settings, history)
    if d.name == "skew":
        return _skew(d, obs)
    if d.name == "chain_bottleneck":
        return _split(d, obs, settings)
    raise ValueError(f"no resolution for diagnosis {d.name!r}")


def _decision(d: Diagnosis, obs: Observation, summary: str, formula: str, action: Action,
              expected: dict, cost: Optional[dict] = None) -> Decision:
    return Decision(id=decision_id(d.name, d.component, obs.time), time=obs.time, diagnosis=d.name,
                    component=d.component, summary=summary, evidence=dict(d.evidence), formula=formula,
                    action=action, expected=expected, cost=cost or {})


def _scale_up(d: Diagnosis, comp: ComponentObservation, obs: Observation, settings: HealthSettings) -> Decision:
    per_instance, cap_formula = dx.instance_capacity(comp)
    wanted = float(d.evidence["demand"])  # type: ignore[arg-type]
    if not per_instance:
        return _decision(d, obs, f"{comp.name} is saturated but has no measured rate ({cap_formula}): look at it",
                         "", Action("none", comp.name), {})
    # saturated: one more at least, whatever the estimate of the input says
    parallelism = max(comp.parallelism + 1, capacity.recommended_parallelism(wanted, per_instance, settings.headroom))
    return _scaled(d, comp, obs, settings, parallelism, per_instance, cap_formula, wanted,
                   f"scale {comp.name} up {comp.parallelism} -> {parallelism}: busiest task "
                   f"{100 * float(d.evidence['busy']):.0f}% busy, it must carry {wanted:,.0f} tuples/s")


def _scaled(d: Diagnosis, comp: ComponentObservation, obs: Observation, settings: HealthSettings,
            parallelism: int, per_instance: float, cap_formula: str, wanted: float, summary: str,
            cpu: Optional[float] = None, ram_mb: Optional[float] = None, extra: str = "") -> Decision:
    formula = (f"capacity per instance {cap_formula}; ceil({wanted:,.1f} × {1 + settings.headroom:.3g} / "
               f"{per_instance:,.1f}) = {parallelism}" + extra)
    utilization = wanted / (parallelism * per_instance)
    more_cpu, more_ram_mb = added_requests(comp, parallelism, cpu, ram_mb)
    cost = {"cpu": round(more_cpu, 3), "ram_mb": round(more_ram_mb, 1),
            "containers": containers_after(obs, parallelism - comp.parallelism) - obs.containers}
    kind = "scale" if parallelism != comp.parallelism else "resize"
    return _decision(d, obs, summary, formula,
                     Action(kind, comp.name, parallelism=parallelism if kind == "scale" else None, cpu=cpu,
                            ram_mb=ram_mb),
                     {"input_rate": round(wanted, 1), "parallelism": parallelism,
                      "capacity_per_instance": round(per_instance, 1), "utilization": round(utilization, 3)}, cost)


def added_requests(comp: ComponentObservation, parallelism: int, cpu: Optional[float],
                   ram_mb: Optional[float]) -> tuple[float, float]:
    """``(cores, MiB)`` the instances of ``comp`` ask for more (negative: less) at ``parallelism``, each asking
    ``cpu`` / ``ram_mb`` (None: what it asks now)."""
    cpu_after = cpu if cpu is not None else comp.cpu_requested
    ram_after = ram_mb if ram_mb is not None else comp.ram_mb_requested
    return (parallelism * cpu_after - comp.parallelism * comp.cpu_requested,
            parallelism * ram_after - comp.parallelism * comp.ram_mb_requested)


def containers_after(obs: Observation, more_instances: int) -> int:
    """Containers the plan would need with ``more_instances`` (negative: fewer) at today's instances per
    container: an estimate for the safety bound; the update's packing decides the real count."""
    instances = sum(c.parallelism for c in obs.components.values())
    if instances == 0 or obs.containers == 0:
        return obs.containers
    per_container = instances / obs.containers
    return max(1, math.ceil((instances + more_instances) / per_container - 1e-9))


def _scale_down(d: Diagnosis, comp: ComponentObservation, obs: Observation, recent: Sequence[Observation],
                settings: HealthSettings) -> Optional[Decision]:
    per_instance, cap_formula = dx.instance_capacity(comp)
    wanted = float(d.evidence["demand"])  # type: ignore[arg-type]
    parallelism = comp.parallelism
    if per_instance:  # within its bounds before the right-size, which sizes each of the tasks it keeps
        parallelism = min(comp.parallelism, max(settings.bounds(comp.name)[0],
                                                capacity.recommended_parallelism(wanted, per_instance,
                                                                                 settings.headroom)))
    cpu, ram_mb, sizing = right_size(comp, obs, recent, settings, parallelism, wanted)
    if parallelism == comp.parallelism:  # over-provisioned: a request only shrinks (fewer tasks may need more each)
        cpu = cpu if cpu is not None and cpu < comp.cpu_requested else None
        ram_mb = ram_mb if ram_mb is not None and ram_mb < comp.ram_mb_requested else None
    if parallelism == comp.parallelism and cpu is None and ram_mb is None:
        return None
    what = [f"scale {comp.name} down {comp.parallelism} -> {parallelism}"] if parallelism < comp.parallelism else []
    if cpu is not None or ram_mb is not None:
        what.append(f"right-size {'it' if what else comp.name} to {cpu if cpu is not None else comp.cpu_requested:g} cores and "
                    f"{ram_mb if ram_mb is not None else comp.ram_mb_requested:g} MiB per instance")
    summary = (" and ".join(what) + f": busiest task {100 * float(d.evidence['busy']):.0f}% busy for "
               f"{settings.scale_down_grace_secs:g} s, it carries {wanted:,.0f} tuples/s")
    if not per_instance:
        return _decision(d, obs, summary, sizing, Action("resize", comp.name, cpu=cpu, ram_mb=ram_mb), {})
    return _scaled(d, comp, obs, settings, parallelism, per_instance, cap_formula, wanted, summary, cpu, ram_mb,
                   f"; {sizing}" if sizing else "")


def right_size(comp: ComponentObservation, obs: Observation, recent: Sequence[Observation], settings: HealthSettings,
               parallelism: int, wanted: float) -> tuple[Optional[float], Optional[float], str]:
    """``(cpu or None, ram_mb or None, formula)`` per instance from measured use over the grace window:
    cpu = max(p95 cores × parallelism now / after × (1 + margin), demand × (1 + headroom) / after × cpu per
    tuple) (the second: enough cpu for the rate the parallelism was computed at), ram = p95 rss × (1 + margin),
    each rounded up to its step; None where it moves less than
    ``RESIZE_CHANGE`` of the request (JStorm's pools following measured load)."""
    window = [o.components[comp.name] for o in dx.in_grace(obs, recent, settings) if comp.name in o.components]
    cores = [t.cpu_percent / 100.0 for c in window for t in c.tasks.values() if t.cpu_percent is not None]
    rss = [t.rss_mb for c in window for t in c.tasks.values() if t.rss_mb is not None]
    margin = 1.0 + settings.resize_margin
    parts = []
    cpu = ram_mb = None
    if cores:
        p95 = percentile(cores, 95)
        per_tuple = dx.load(comp).cpu_per_tuple or 0.0
        per_rate = wanted * (1.0 + settings.headroom) / parallelism * per_tuple
        need = max(CPU_STEP, capacity.round_up(max(p95 * comp.parallelism / parallelism * margin, per_rate), CPU_STEP))
        parts.append(f"cpu = ceil(max({p95:.3g} × {comp.parallelism}/{parallelism} × {margin:g}, {per_rate:.3g}) "
                     f"to {CPU_STEP:g}) = {need:g}")
        cpu = round(need, 4) if _moves(need, comp.cpu_requested) else None
    if rss:
        p95 = percentile(rss, 95)
        need = max(RAM_STEP_MB, capacity.round_up(p95 * margin, RAM_STEP_MB))
        parts.append(f"ram = ceil({p95:.1f} MiB × {margin:g} to {RAM_STEP_MB}) = {need:g} MiB")
        ram_mb = float(need) if _moves(need, comp.ram_mb_requested) else None
    return cpu, ram_mb, ("p95 of measured use: " + "; ".join(parts)) if parts else ""


def _moves(new: float, old: float) -> bool:
    return old <= 0 or abs(new - old) >= RESIZE_CHANGE * old


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100.0 * len(ordered)) - 1)]


def _slow(d: Diagnosis, comp: ComponentObservation, obs: Observation, settings: HealthSettings,
          history: Sequence[Decision]) -> Decision:
    task, container = d.task_id, d.evidence["container"]
    tried = {h.action.kind for h in history if h.diagnosis == "slow_instance" and h.component == comp.name
             and h.action.task_id == task and h.status in APPLIED and h.time >= obs.time - settings.blacklist_secs}
    why = (f"task {task} takes {d.evidence['service_ms']} ms a tuple against its peers' "
           f"{d.evidence['peers_service_ms']} ms, queue {d.evidence['queue_depth']}")
    expected = {"service_ms_at_most": round(dx.SLOW_FACTOR * float(d.evidence["peers_service_ms"]), 3)}
    if "restart_task" not in tried:
        return _decision(d, obs, f"restart task {task} of {comp.name}: {why}", "a slow instance, not load: restart it",
                         Action("restart_task", comp.name, task_id=task), expected)
    if "move_container" not in tried:
        return _decision(d, obs, f"move container {container} (task {task} of {comp.name}): still slow after a "
                         f"restart: {why}", "restarted and still slow: its host, move its container",
                         Action("move_container", comp.name, task_id=task, container=container), expected)
    return _decision(d, obs, f"task {task} of {comp.name} is still slow after a restart and a move: {why}; "
                     "look at its code and its input", "", Action("none", comp.name, task_id=task), {})


def _skew(d: Diagnosis, obs: Observation) -> Decision:
    e = d.evidence
    mine = [k for k in e.get("hot_keys") or () if k["task"] == e["hot_task"]]  # type: ignore[attr-defined]
    keys = [k for k in mine if k["share"] >= HOT_KEY_SHARE * mine[0]["share"]]  # not the cold ones beside it
    stateful = obs.components[d.component or ""].stateful
    listed = ", ".join(f"{k['key']!r} ({100 * k['share']:.0f}% of the sample)" for k in keys)
    named = (f"; hot keys {listed}" + ("; their key groups are the hot state" if stateful else "")) if keys else ""
    return _decision(d, obs, f"{d.component}: a hot key: task {e['hot_task']} handles {e['rate']} tuples/s "
                     f"against its peers' {e['peers_rate']} under fields grouping{named}; more tasks would not "
                     "relieve it: use partial-key grouping", f"skew = {e['rate']} / {e['peers_rate']} = {e['skew']}",
                     Action("none", d.component, task_id=d.task_id), {})


def _split(d: Diagnosis, obs: Observation, settings: HealthSettings) -> Decision:
    e = d.evidence
    chain = " -> ".join(e["chain"])  # type: ignore[arg-type]
    return _decision(d, obs, f"split chain {chain} at {e['split_at']}: its process is "
                     f"{100 * float(e['chain_busy']):.0f}% busy (one thread for the chain) before adding tasks",
                     " + ".join(f"{b} ({n})" for n, b in e["members_busy"].items())  # type: ignore[union-attr]
                     + f" = {e['chain_busy']} >= {settings.high:.2f}",
                     Action("split_chain", str(e["split_at"])), {"chain_busy_at_most": round(settings.high, 3)})


def measure(decision: Decision, obs: Observation, recent: Sequence[Observation], settings: HealthSettings
            ) -> tuple[bool, str]:
    """``(effective, what was measured)`` of an applied decision, against its ``expected``. Spouts held back
    count against it unless they keep up with their reported backlog (``diagnose.keeping_up``) or no bolt
    is near saturation (``diagnose.unexplained_shortfall``: the action did not saturate one)."""
    comp = obs.components.get(decision.component or "")
    held = dx.spout_backpressure(obs)
    if comp is None:
        return False, f"component {decision.component} is not in the topology"
    top = dx.busy(dx.busiest(comp))
    carried = dx.input_rate(comp)
    if decision.diagnosis == "slow_instance":
        still = dx.slow_task(comp, settings)
        slow = still is not None and still[0] == decision.action.task_id
        return not slow, f"task {decision.action.task_id} " + ("still slow" if slow else "no longer slow")
    if decision.diagnosis == "chain_bottleneck":
        chain = dx.chain_load(comp, obs)
        if chain is None:
            return True, f"{comp.name} runs in a process of its own"
        return float(chain["chain_busy"]) < settings.high, f"chain {' -> '.join(chain['chain'])} " \
            f"{100 * float(chain['chain_busy']):.0f}% busy"
    predicted = float(decision.expected.get("input_rate") or 0.0)
    keeping_up = dx.keeping_up(obs, recent)
    unexplained = dx.unexplained_shortfall(obs, recent, settings)
    ok = (held < dx.BACKPRESSURE_MIN or keeping_up or unexplained) and top < settings.high
    if decision.diagnosis == "under_provisioned":
        ok = ok or carried >= CARRIED * predicted
    return ok, (f"carries {carried:,.1f} tuples/s (predicted {predicted:,.1f}), busiest task {100 * top:.0f}% busy, "
                f"spouts held back {100 * held:.0f}% of the window"
                + (", their backlog not growing" if keeping_up and held >= dx.BACKPRESSURE_MIN
                   else ", no bolt near saturation" if unexplained else ""))
