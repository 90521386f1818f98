"""Symptoms -> diagnoses: what is wrong with which component, with the figures that say so.

Pure functions of the newest observation and the recent ones the policy keeps (docs/health.md,
"How it decides"). Every diagnosis is returned in this order (then the most saturated component
first), so that the policy can fall back to the next when a resolution is blacklisted:

1. ``slow_instance``: one task's service time far above its peers', its queue high or it saturated,
   its rate no higher than theirs, its peers fine (more tasks would not help: that one is sick);
2. ``skew``: under fields grouping, one task's rate far above its peers' and it saturated or its
   queue high (more tasks would not relieve a hot key);
3. ``chain_bottleneck``: a chain whose process (its members' busy fractions add up in one thread)
   is saturated, though no member alone may be: split it before adding tasks;
4. ``under_provisioned``: the busiest task at or above target + band;
5. ``over_provisioned``: every task below target - band for the whole scale-down grace, no growing
   source backlog and no backpressure at the spouts, unless every spout reports its source's backlog
   and it did not grow (``keeping_up``: then the backlog, not the backpressure, says whether demand is
   hidden); or the spouts held back or falling behind while no bolt is near saturation
   (``unexplained_shortfall``: it is not a bolt's, and the scale-down is sized for all it could hide).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from squall.health.model import ComponentObservation, Observation, TaskObservation
from squall.health.settings import HealthSettings
from squall.packing import capacity

SLOW_FACTOR = 3.0  # a task's service time this many times its peers' median: slow
DEMAND_SPREAD = 0.25  # a demand steady through a scale-down's grace: its most within 1.25 times its least
SKEW_FACTOR = 2.0  # a task's rate this many times its peers' median: hot
QUEUE_HIGH = 32  # tuples waiting in a task's queue that count as high (and 4 times its peers' median)
BACKPRESSURE_MIN = 0.05  # spouts throttled this share of the window, or more: backpressure
# the backpressure estimate of the offered rate, observed / (1 - backpressure), is at most this many times the
# observed rate: a spout that bursts when released (a paced one catching up, a Kafka one reading ahead) is held
# back most of the time whatever it is offered (recorded: held 94.5 % of the window, offered 3.4 times the rate
# carried); its estimate says "saturated", the cap bounds the step, and the next step follows if needed
GROWTH_MAX = 4.0


PRIORITY = ("slow_instance", "skew", "chain_bottleneck", "under_provisioned", "over_provisioned")


@dataclass(frozen=True)
class Diagnosis:
    name: str  # slow_instance | skew | chain_bottleneck | under_provisioned | over_provisioned
    component: str
    evidence: Mapping[str, object]
    task_id: Optional[int] = None


def diagnose(observation: Observation, recent: Sequence[Observation], settings: HealthSettings) -> list[Diagnosis]:
    """Every diagnosis of ``observation``'s components in ``PRIORITY`` order, the most saturated
    component first within one. ``recent``: earlier observations, oldest first."""
    found = []
    order = sorted(observation.components.values(), key=lambda c: -busy(busiest(c)))
    for comp in order:
        found.extend(_of_component(comp, observation, recent, settings))
    return sorted(found, key=lambda d: PRIORITY.index(d.name))


def _of_component(comp: ComponentObservation, obs: Observation, recent: Sequence[Observation],
                  settings: HealthSettings) -> list[Diagnosis]:
    if not comp.tasks:
        return []
    sick = slow_task(comp, settings)
    if sick is not None:
        return [Diagnosis("slow_instance", comp.name, sick[1], sick[0])]
    hot = hot_task(comp, settings, obs.hot_keys.get(comp.name))
    if hot is not None:
        return [Diagnosis("skew", comp.name, hot[1], hot[0])]
    out = []
    top = busiest(comp)
    chain = chain_load(comp, obs)
    chain_hot = chain is not None and chain["chain_busy"] >= settings.high
    if chain_hot and chain["split_at"] == comp.name:  # type: ignore[index]
        out.append(Diagnosis("chain_bottleneck", comp.name, chain))  # type: ignore[arg-type]
    if busy(top) >= settings.high:
        out.append(Diagnosis("under_provisioned", comp.name, {
            "busy": round(busy(top), 3), "busiest_task": top.task_id, "high": round(settings.high, 3),
            **demand(comp, obs, recent, settings)}))
    elif (not chain_hot and below_band_since(comp.name, obs, recent, settings)
          and (unexplained_shortfall(obs, recent, settings)
               or (spout_backpressure(obs) < BACKPRESSURE_MIN or keeping_up(obs, recent))
               and lag_growth(obs, recent) <= 0)):
        steady = steady_demand(comp.name, obs, recent, settings)
        if steady is not None:
            out.append(Diagnosis("over_provisioned", comp.name, {
                "busy": round(busy(top), 3), "busiest_task": top.task_id, "low": round(settings.low, 3),
                "grace_secs": settings.scale_down_grace_secs, **steady}))
    return out


# ---------------------------------------------------------------- figures of one component


def busy(task: Optional[TaskObservation]) -> float:
    return (task.busy or 0.0) if task is not None else 0.0


def busiest(comp: ComponentObservation) -> Optional[TaskObservation]:
    return max(comp.tasks.values(), key=busy, default=None)


def rate(comp: ComponentObservation, task: TaskObservation) -> float:
    """Tuples/s a task handles: what a bolt executes, what a spout emits."""
    return task.execute_rate if comp.kind == "bolt" else task.emit_rate


def input_rate(comp: ComponentObservation) -> float:
    return sum(rate(comp, t) for t in comp.tasks.values())


def service_ms(comp: ComponentObservation, task: TaskObservation) -> Optional[float]:
    """Ms in process() per tuple: the measured mean, else busy / rate."""
    if task.execute_latency_ms:
        return task.execute_latency_ms
    r = rate(comp, task)
    return 1000.0 * busy(task) / r if r > 0 and task.busy else None


def load(comp: ComponentObservation) -> capacity.Load:
    """The capacity model's view of the component, from its busiest task (the true processing rate:
    a busy average would let a hot task's peers hide it)."""
    top = busiest(comp)
    r = rate(comp, top) if top is not None else 0.0
    s = service_ms(comp, top) if top is not None else None
    cpu = top.cpu_percent / 100.0 if top is not None and top.cpu_percent is not None else None
    return capacity.Load(kind=comp.kind, service_secs=s / 1000.0 if s else None,
                         cpu_per_tuple=cpu / r if cpu and r > 0 else None, busy=busy(top), cpu_used=cpu,
                         busy_cpu=None, requested=comp.cpu_requested or None, held=None)


def instance_capacity(comp: ComponentObservation) -> tuple[Optional[float], str]:
    """``(tuples/s one instance carries, formula)``, or ``(None, why)`` (packing/capacity.py)."""
    model = load(comp)
    alloc = capacity.allocation(model, None)
    at_allocation = model.cpu_used is not None and model.cpu_used >= 0.9 * alloc.cores
    value, basis, formula = capacity.capacity(model, alloc.cores, at_allocation, alloc.shared)
    return value, f"{formula} ({basis}, {alloc.why})" if value else basis


def spout_backpressure(obs: Observation) -> float:
    """Share of the window the most throttled spout task was held back by backpressure."""
    if obs.window_secs <= 0:
        return 0.0
    held = max((t.backpressure_ms for c in obs.components.values() if c.kind == "spout" for t in c.tasks.values()),
               default=0.0)
    return min(1.0, held / (1000.0 * obs.window_secs))


def spout_rate(obs: Observation) -> float:
    return sum(input_rate(c) for c in obs.components.values() if c.kind == "spout")


def source_lag(obs: Observation) -> int:
    return sum(c.source_lag or 0 for c in obs.components.values())


def lag_growth(obs: Observation, recent: Sequence[Observation]) -> float:
    """Records/s the sources' backlog grew since the oldest recent observation (0 without one)."""
    then = next((o for o in recent if o.time < obs.time), None)
    if then is None or not any(c.source_lag is not None for c in obs.components.values()):
        return 0.0
    return (source_lag(obs) - source_lag(then)) / (obs.time - then.time)


def keeping_up(obs: Observation, recent: Sequence[Observation]) -> bool:
    """Every spout reports its source's backlog (``squall.metrics.SourcePartitions``), and it did not
    grow: the spouts emit all that is offered, however long backpressure holds them (a held spout
    catches up when released). Backpressure then hides no demand, as Flink's autoscaler reads a
    source's pending records rather than its idle time. Without a backlog reported, it cannot be told."""
    spouts = [c for c in obs.components.values() if c.kind == "spout"]
    return (bool(spouts) and all(c.source_lag is not None for c in spouts)
            and any(o.time < obs.time for o in recent) and lag_growth(obs, recent) <= 0)


def unexplained_shortfall(obs: Observation, recent: Sequence[Observation], settings: HealthSettings) -> bool:
    """Spouts held back, or falling behind their source, while every bolt, and every chain's process, is
    below the band: none is near saturation, so none is why. A host short of cpu does that
    (bench/health_hundred.py: 100 processes on 2 cores; run 4, the spouts held 23 s of every 30 while
    each bolt was 1-4 % busy; run 8, their reported backlog growing while they were scarcely held), and
    fewer processes is what relieves it; a scale-down is then sized for all the backpressure could hide
    and the backlog's growth and drain (``steady_demand``)."""
    if spout_backpressure(obs) < BACKPRESSURE_MIN and lag_growth(obs, recent) <= 0:
        return False
    for comp in obs.components.values():
        chain = chain_load(comp, obs) if comp.kind == "bolt" else None
        if comp.kind == "bolt" and (busy(busiest(comp)) >= settings.low
                                    or (chain is not None and float(chain["chain_busy"]) >= settings.low)):
            return False
    return True


def demand(comp: ComponentObservation, obs: Observation, recent: Sequence[Observation],
           settings: HealthSettings, cap: float = GROWTH_MAX) -> dict:
    """Tuples/s the component must carry, and how it was estimated.

    Backpressure hides the offered rate: spouts held back a share ``b`` of the window offered
    ``observed / (1 - b)`` (Dhalion's scale-up factor), at most ``GROWTH_MAX`` times the observed
    rate (``cap``; a scale-down is sized without it), unless their backlog is reported and did not
    grow (``keeping_up``: they were offered what they emitted); a growing source backlog says the same,
    measured (``observed + growth``): the larger of the two, plus the backlog drained within
    ``catch_up_secs``, each scaled by the component's share of the spouts' rate."""
    observed = input_rate(comp)
    held = spout_backpressure(obs) if comp.kind == "bolt" else 0.0
    hidden = held >= BACKPRESSURE_MIN and not keeping_up(obs, recent)
    spouts = spout_rate(obs)
    share = observed / spouts if comp.kind == "bolt" and spouts > 0 else 1.0
    growth = max(0.0, lag_growth(obs, recent))
    lag = source_lag(obs)
    factor = min(cap, 1.0 / max(1e-9, 1.0 - held)) if hidden else 1.0
    offered = max(observed * factor, observed + share * growth)
    needed = offered + share * lag / settings.catch_up_secs
    if not hidden:
        held_term = f"1 (backpressure {held:.2f}: the backlog did not grow)" if held >= BACKPRESSURE_MIN else "1"
    else:
        held_term = f"min({cap:g}, 1 / (1 - {held:.2f}))" if math.isfinite(cap) else f"1 / (1 - {held:.2f})"
    return {
        "observed_rate": round(observed, 1), "backpressure": round(held, 3), "lag": lag,
        "lag_growth_per_sec": round(growth, 1), "share_of_spouts": round(share, 4),
        "demand": round(needed, 1),
        "demand_formula": (f"max({observed:.1f} × {held_term}, {observed:.1f} + {share:.3g} × {growth:.1f})"
                           f" + {share:.3g} × {lag} / {settings.catch_up_secs:g} s = {needed:.1f}"),
    }


def steady_demand(name: str, obs: Observation, recent: Sequence[Observation], settings: HealthSettings
                  ) -> Optional[dict]:
    """``demand`` at the observation of the last grace seconds where it was highest, when it was steady
    through them (the most within ``1 + DEMAND_SPREAD`` times the least), else None: a load that fell
    during the grace is sized once it has been low for a whole grace, in one step, not from a window that
    straddles the fall and then again. Sized for all that backpressure could hide (no cap on its factor);
    under ``unexplained_shortfall`` that estimate swings with the share the spouts were held, and the
    most is taken without asking it to be steady."""
    covering = [o for o in in_grace(obs, recent, settings) if name in o.components]
    found = [demand(o.components[name], o, [r for r in recent if r.time < o.time], settings, math.inf)
             for o in covering]
    rates = [float(f["demand"]) for f in found]  # type: ignore[arg-type]
    unexplained = unexplained_shortfall(obs, recent, settings)
    if not unexplained and max(rates) > (1.0 + DEMAND_SPREAD) * min(rates):
        return None
    return {**max(found, key=lambda f: float(f["demand"])),  # type: ignore[arg-type]
            "demand_range": [round(min(rates), 1), round(max(rates), 1)]}


def below_band_since(name: str, obs: Observation, recent: Sequence[Observation], settings: HealthSettings) -> bool:
    """Every task of ``name`` below target - band in every observation of the last grace seconds, and
    the observations reach back that far."""
    start = obs.time - settings.scale_down_grace_secs
    reaches = any(o.time <= start for o in recent) or settings.scale_down_grace_secs == 0
    return reaches and all(name in o.components and busy(busiest(o.components[name])) < settings.low
                           for o in in_grace(obs, recent, settings))


def in_grace(obs: Observation, recent: Sequence[Observation], settings: HealthSettings) -> list[Observation]:
    """The observations of the last ``scale_down_grace_secs``, ``obs`` the last."""
    start = obs.time - settings.scale_down_grace_secs
    return [o for o in recent if o.time >= start] + [obs]


# ------------------------------------------------------------------ one task among its peers


def _peers(comp: ComponentObservation, task: TaskObservation) -> list[TaskObservation]:
    return [t for t in comp.tasks.values() if t.task_id != task.task_id]


def _queue_high(task: TaskObservation, peers: Sequence[TaskObservation]) -> bool:
    return task.queue_depth >= max(QUEUE_HIGH, 4 * statistics.median(p.queue_depth for p in peers))


def slow_task(comp: ComponentObservation, settings: HealthSettings) -> Optional[tuple[int, dict]]:
    """``(task id, evidence)`` of a slow instance: its service time ``SLOW_FACTOR`` times its peers'
    median or more, its queue high or it saturated, its rate no higher than theirs, its peers below
    the high mark."""
    if comp.kind != "bolt" or len(comp.tasks) < 2:
        return None
    task = max(comp.tasks.values(), key=lambda t: service_ms(comp, t) or 0.0)
    peers = _peers(comp, task)
    mine = service_ms(comp, task)
    theirs = [s for s in (service_ms(comp, p) for p in peers) if s]
    if mine is None or not theirs:
        return None
    peer_service = statistics.median(theirs)
    peer_rate = statistics.median(rate(comp, p) for p in peers)
    peer_busy = statistics.median(busy(p) for p in peers)
    if (mine < SLOW_FACTOR * peer_service or not (_queue_high(task, peers) or busy(task) >= settings.high)
            or rate(comp, task) > 1.2 * peer_rate + 1e-9 or peer_busy >= settings.high):
        return None
    return task.task_id, {
        "task": task.task_id, "container": task.container, "service_ms": round(mine, 3),
        "peers_service_ms": round(peer_service, 3), "queue_depth": task.queue_depth,
        "peers_queue_depth": statistics.median(p.queue_depth for p in peers),
        "rate": round(rate(comp, task), 1), "peers_rate": round(peer_rate, 1),
        "busy": round(busy(task), 3), "peers_busy": round(peer_busy, 3)}


def hot_task(comp: ComponentObservation, settings: HealthSettings,
             keys: Optional[list] = None) -> Optional[tuple[int, dict]]:
    """``(task id, evidence)`` of a hot key under fields grouping: the task's rate ``SKEW_FACTOR``
    times its peers' median or more, and it saturated or its queue high. ``keys``: the component's sampled
    hot keys (``health/hot_keys.py``), None before a sample was taken."""
    if comp.kind != "bolt" or comp.grouping != "FIELDS" or len(comp.tasks) < 2:
        return None
    task = max(comp.tasks.values(), key=lambda t: rate(comp, t))
    peers = _peers(comp, task)
    peer_rate = statistics.median(rate(comp, p) for p in peers)
    if rate(comp, task) < SKEW_FACTOR * max(peer_rate, 1e-9) or not (
            busy(task) >= settings.high or _queue_high(task, peers)):
        return None
    total = input_rate(comp)
    return task.task_id, {
        "hot_task": task.task_id, "rate": round(rate(comp, task), 1), "peers_rate": round(peer_rate, 1),
        "share_of_input": round(rate(comp, task) / total, 3) if total else None,
        "skew": round(rate(comp, task) / max(peer_rate, 1e-9), 2) if peer_rate else None,
        "busy": round(busy(task), 3), "queue_depth": task.queue_depth, "grouping": comp.grouping,
        "hot_keys": keys,
        **({} if keys is not None else {"missing": "the keys are being sampled from the emits into it"}),
    }


def chain_load(comp: ComponentObservation, obs: Observation) -> Optional[dict]:
    """The busiest process of ``comp``'s chain: its members' busy fractions summed per chain instance
    (their tasks in task order), and where to split it: before the busiest member, or after the head
    when the head is the busiest."""
    if not comp.chain or len(comp.chain) < 2 or any(m not in obs.components for m in comp.chain):
        return None
    members = [obs.components[m] for m in comp.chain]
    rows = list(zip(*[[busy(t) for _, t in sorted(m.tasks.items())] for m in members]))
    if not rows:
        return None
    worst = max(rows, key=sum)
    hottest = max(range(len(members)), key=lambda i: worst[i])
    split = members[hottest].name if hottest > 0 else members[1].name
    return {"chain": list(comp.chain), "chain_busy": round(sum(worst), 3),
            "members_busy": {m.name: round(b, 3) for m, b in zip(members, worst)}, "split_at": split}
