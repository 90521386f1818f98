"""The pending tuner: ``topology.max.spout.pending`` of an at-least-once topology, steered toward a p99
complete-latency target, or, without one, Heron's hill-climber on throughput.

With a target ``T`` and the spouts' p99 ``L`` outside ``T ± HOLD``: ``pending × clamp(T / L, 1/2, 2)``.
Once pending binds, the tuples in flight queue in front of the slowest bolt, so their complete latency
grows with pending (Little's law: in flight = throughput × latency): the ratio moves it to the target
in a step or two, and follows the service time when it changes.
Without a target: double pending while each doubling raised throughput by ``CLIMB_GAIN`` or more;
step back to the last value once it did not, and hold there for the blacklist time. It climbs only while
every bolt's busiest task is below the target utilization: when one is near its capacity (a bolt short of
tasks, or draining a backlog after a scale-up), more tuples in flight only queue in front of it; and only
while pending binds: a spout task's open trees (the ``__pending`` it reports each bucket) reach ``BOUND`` of
pending, or, where none is reported, its rate times its p99 complete latency (Little's law: the trees it
holds in flight, at most) reaches ``BINDS`` of pending. A paced spout that emits all it is given never waits
for pending, and a throughput that rises then is the load's doing, not pending's. And only in a steady
state: the spouts' rate over the last ``STEADY_OBSERVATIONS`` within ``STEADY_BAND`` of their median. A
spout catching up on the backlog it kept while held back (after a scale-up, a restart) emits more
whatever pending is, and a probe then would be credited with the catching up or judged against it.
Both are capped by ``squall.health.pending.memory.mb`` over the spout tasks at ``PENDING_KIB`` a tuple.
"""
from __future__ import annotations

import statistics
from typing import Optional, Sequence

from squall.health import diagnose as dx
from squall.health.model import Action, Decision, Observation
from squall.health.resolve import APPLIED, decision_id
from squall.health.settings import HealthSettings

PENDING_KIB = 1.0  # memory one pending tuple tree is assumed to hold (tuple sizes are not measured)
HOLD = 0.1  # p99 within this share of the target: leave pending alone
STEP = 2.0  # pending changes by at most this factor in one step
CLIMB_GAIN = 0.05  # a doubling that raised throughput by less than this is the top of the hill
TUNED = ("pending", "pending_revert")
BINDS = 0.5  # trees in flight per spout task, as a share of pending, from which pending may be what holds it
BOUND = 0.9  # trees a spout task holds open, as a share of pending, from which pending holds it (measured)
STEADY_OBSERVATIONS = 3  # the climber probes only when the spouts' rate was flat over this many observations
STEADY_BAND = 0.1  # flat: each within this share of their median


def pending_cap(obs: Observation, settings: HealthSettings) -> int:
    """Pending per spout task the memory cap allows."""
    tasks = sum(len(c.tasks) for c in obs.components.values() if c.kind == "spout") or 1
    return max(1, int(settings.pending_memory_mb * 1024 / PENDING_KIB / tasks))


def tune_pending(obs: Observation, settings: HealthSettings, history: Sequence[Decision],
                 recent: Sequence[Observation]) -> Optional[Decision]:
    """The next ``set_pending`` decision, or None (not at least once, unlimited pending, or nothing to do).
    ``recent``: the observations before ``obs``, oldest first."""
    if obs.reliability != "ATLEAST_ONCE" or obs.max_spout_pending is None:
        return None
    if settings.latency_target_ms is not None:
        return _toward_target(obs, settings)
    return _climb(obs, settings, history, recent)


def p99_ms(obs: Observation) -> Optional[float]:
    """The spouts' worst p99 complete latency."""
    return max((c.complete_latency_p99_ms for c in obs.components.values()
                if c.kind == "spout" and c.complete_latency_p99_ms), default=None)


def _set(obs: Observation, diagnosis: str, new: int, summary: str, evidence: dict, formula: str,
         expected: dict) -> Decision:
    return Decision(id=decision_id(diagnosis, None, obs.time), time=obs.time, diagnosis=diagnosis, component=None,
                    summary=summary, evidence=evidence, formula=formula, action=Action("set_pending", pending=new),
                    expected=expected)


def _toward_target(obs: Observation, settings: HealthSettings) -> Optional[Decision]:
    latency, target, pending = p99_ms(obs), float(settings.latency_target_ms or 0.0), obs.max_spout_pending or 0
    if latency is None or abs(latency - target) <= HOLD * target:
        return None
    cap = pending_cap(obs, settings)
    ratio = min(STEP, max(1.0 / STEP, target / latency))
    new = max(1, min(cap, round(pending * ratio)))
    if new == pending:
        return None
    return _set(obs, "pending", new,
                f"set topology.max.spout.pending {pending} -> {new}: p99 complete latency {latency:.0f} ms, "
                f"target {target:.0f} ms",
                {"complete_latency_p99_ms": latency, "target_ms": target, "pending": pending, "cap": cap,
                 "throughput": round(dx.spout_rate(obs), 1)},
                f"min({cap}, round({pending} × clamp({target:g} / {latency:.1f}, {1 / STEP:g}, {STEP:g}))) = {new}",
                {"complete_latency_p99_ms": target})


def _climb(obs: Observation, settings: HealthSettings, history: Sequence[Decision],
           recent: Sequence[Observation]) -> Optional[Decision]:
    pending, throughput = obs.max_spout_pending or 0, dx.spout_rate(obs)
    last = next((d for d in reversed(history) if d.diagnosis in TUNED and d.status in APPLIED), None)
    evidence = {"pending": pending, "throughput": round(throughput, 1), "cap": pending_cap(obs, settings)}
    if last is not None and last.status == "applied":
        return None
    if last is not None and last.diagnosis == "pending_revert" and obs.time - last.time < settings.blacklist_secs:
        return None
    if last is not None and last.status == "ineffective" and last.diagnosis == "pending":
        back = int(last.evidence["pending"])  # type: ignore[arg-type]
        return _set(obs, "pending_revert", back,
                    f"set topology.max.spout.pending {pending} -> {back}: the last doubling did not raise throughput",
                    evidence, f"back to {back}, held {settings.blacklist_secs:g} s", {"throughput": throughput})
    new = min(evidence["cap"], 2 * pending)
    if new == pending or _near_capacity(obs, settings) or not _binds(obs, pending) or not steady(obs, recent):
        return None
    return _set(obs, "pending", new,
                f"set topology.max.spout.pending {pending} -> {new}: climbing while throughput rises",
                evidence, f"min({evidence['cap']}, 2 × {pending}) = {new}",
                {"throughput": round((1 + CLIMB_GAIN) * throughput, 1)})


def _binds(obs: Observation, pending: int) -> bool:
    """A spout task holds ``BOUND`` of ``pending`` trees open (its measured count), or, where none is
    reported, may hold ``BINDS`` of them (rate × p99 complete latency)."""
    measured = [t.pending for c in obs.components.values() if c.kind == "spout" for t in c.tasks.values()
                if t.pending is not None]
    if measured:
        return max(measured) >= BOUND * pending
    for c in obs.components.values():
        if c.kind == "spout" and c.tasks and c.complete_latency_p99_ms:
            per_task = dx.input_rate(c) / len(c.tasks)
            if per_task * c.complete_latency_p99_ms / 1000.0 >= BINDS * pending:
                return True
    return False


def steady(obs: Observation, recent: Sequence[Observation]) -> bool:
    """The spouts' rate was flat over the last ``STEADY_OBSERVATIONS`` observations, ``obs`` included."""
    rates = [dx.spout_rate(o) for o in [*recent[-(STEADY_OBSERVATIONS - 1):], obs]]
    if len(rates) < STEADY_OBSERVATIONS:
        return False
    middle = statistics.median(rates)
    return all(abs(r - middle) <= STEADY_BAND * middle for r in rates)


def _near_capacity(obs: Observation, settings: HealthSettings) -> bool:
    """A bolt's busiest task at or above the target utilization."""
    return any(dx.busy(dx.busiest(c)) >= settings.target_utilization for c in obs.components.values()
               if c.kind == "bolt")


def measure(decision: Decision, obs: Observation) -> tuple[bool, str]:
    """``(effective, what was measured)`` of an applied ``set_pending``."""
    if decision.diagnosis == "pending_revert":
        return True, "stepped back to the top of the hill"
    if "complete_latency_p99_ms" in decision.expected:
        target = float(decision.expected["complete_latency_p99_ms"])  # type: ignore[arg-type]
        before = float(decision.evidence["complete_latency_p99_ms"])  # type: ignore[arg-type]
        now = p99_ms(obs)
        ok = now is not None and (abs(now - target) <= 2 * HOLD * target or abs(now - target) < abs(before - target))
        return ok, f"p99 complete latency {now} ms (was {before:.1f}, target {target:g})"
    wanted = float(decision.expected["throughput"])  # type: ignore[arg-type]
    now_rate = dx.spout_rate(obs)
    return now_rate >= wanted, f"spouts emit {now_rate:,.1f} tuples/s (wanted {wanted:,.1f})"
