"""Safety: which of the resolutions is decided now, and what became of those applied.

``HealthPolicy`` is a pure state machine (observations in, decisions out; time is the observation's).
Rules (docs/health.md, "How it decides"):

- one action in flight: while an applied decision waits out ``stabilization_secs``, nothing new is
  decided but reports (skew); then its effect is measured against its ``expected`` and it becomes
  ``effective`` or ``ineffective`` (Flink's effectiveness check), by a window the topology was settled
  through (running, all up, nothing else changing it since before the window began): a large move
  restarts many tasks, and spouts held back while they come up say nothing of the action; if it never
  settles, it is judged ``JUDGE_WAIT`` stabilization times after it was applied, as it is;
- an ineffective resolution (diagnosis, component, action kind) is not decided again for
  ``blacklist_secs`` (Dhalion's blacklist): the next diagnosis of the component is tried instead;
- no action while the topology is not running (degraded, paused) or something else changes it
  (``busy_elsewhere``): the decision is ``blocked`` with the reason;
- parallelism within ``[min, max]`` of the component, containers within ``max_containers``, and what a
  scale-up adds within what the cluster can still grant (on YARN, the queue's headroom in the
  ResourceManager's view): a decision held at a bound is ``blocked`` and the next diagnosis is tried;
- at most one actionable decision per observation; a decision the same as the last of its kind is not
  repeated (the history shows it once); a skew report is again once its sampled hot keys are in.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional, Sequence

from squall.health import resolve, tuner
from squall.health.diagnose import Diagnosis, diagnose
from squall.health.model import Decision, Observation
from squall.health.settings import HealthSettings

__all__ = ["HealthPolicy", "HealthSettings"]

MIN_HORIZON_SECS = 300.0  # observations kept at least this long (lag growth, p95 of use)
OPEN = ("recommended", "blocked")
JUDGE_WAIT = 4.0  # stabilization times after which an applied decision is judged, settled or not


class HealthPolicy:
    def __init__(self, settings: HealthSettings, history: Sequence[Decision] = ()) -> None:
        self._settings = settings
        self._history = list(history)
        self._recent: list[Observation] = []  # observations before the newest, oldest first
        self._unsettled_at: Optional[float] = None  # the newest observation not running, or changing
        self.diagnosed: list[Diagnosis] = []  # what the last observation showed, decided on or not

    @property
    def history(self) -> list[Decision]:
        return list(self._history)

    def decide(self, observation: Observation) -> list[Decision]:
        """Decisions judged by ``observation`` (applied ones whose stabilization has passed) and the new
        ones it leads to, in that order; all are in ``history`` too."""
        if observation.status != "running" or observation.busy_elsewhere:
            self._unsettled_at = observation.time
        judged = self._judge(observation)
        new = self._new(observation)
        self._remember(observation)
        return judged + new

    def applied(self, decision: Decision, now: float) -> Decision:
        """The body applied ``decision`` at ``now``: its effect is measured stabilization later."""
        done = replace(decision, status="applied", applied_time=now, reason="")
        self._replace(done)
        return done

    # ------------------------------------------------------------------------------ inside

    def _replace(self, decision: Decision) -> None:
        for i, d in enumerate(self._history):
            if d.id == decision.id:
                self._history[i] = decision
                return
        self._history.append(decision)

    def _in_flight(self) -> Optional[Decision]:
        return next((d for d in self._history if d.status == "applied"), None)

    def _judge(self, obs: Observation) -> list[Decision]:
        out = []
        stabilization = self._settings.stabilization_secs
        for d in self._history:
            since = d.applied_time or d.time
            if d.status != "applied" or obs.time < since + stabilization:
                continue
            if not self._settled(obs) and obs.time < since + JUDGE_WAIT * stabilization:
                continue
            if d.action.kind == "set_pending":
                ok, measured = tuner.measure(d, obs)
            else:
                ok, measured = resolve.measure(d, obs, self._recent, self._settings)
            out.append(replace(d, status="effective" if ok else "ineffective", reason=measured))
        for d in out:
            self._replace(d)
        return out

    def _settled(self, obs: Observation) -> bool:
        """``obs``'s window began after the topology was last seen not running or changing."""
        return self._unsettled_at is None or self._unsettled_at <= obs.time - obs.window_secs

    def _candidates(self, obs: Observation) -> list[Decision]:
        out = []
        self.diagnosed = diagnose(obs, self._recent, self._settings)
        for found in self.diagnosed:
            decision = resolve.resolve(found, obs, self._recent, self._settings, self._history)
            if decision is not None:
                out.append(decision)
        pending = tuner.tune_pending(obs, self._settings, self._history, self._recent)
        return out + ([pending] if pending is not None else [])

    def _new(self, obs: Observation) -> list[Decision]:
        candidates = self._candidates(obs)
        chosen = []
        if self._in_flight() is None:
            for candidate in candidates:
                if candidate.action.kind == "none" or self._blacklisted(candidate, obs.time):
                    continue
                bounded = self._bounded(candidate, obs)
                chosen.append(self._held(bounded, obs))
                if bounded.status == "recommended":
                    break  # one actionable decision; one held at a bound lets the next be tried
        reports = [c for c in candidates if c.action.kind == "none"]
        out = [d for d in reports + chosen if not self._repeats(d)]
        self._history.extend(out)
        return out

    def _blacklisted(self, decision: Decision, now: float) -> bool:
        key = (decision.diagnosis, decision.component, decision.action.kind)
        return any(d.status == "ineffective" and (d.diagnosis, d.component, d.action.kind) == key
                   and (d.applied_time or d.time) >= now - self._settings.blacklist_secs for d in self._history)

    def _bounded(self, decision: Decision, obs: Observation) -> Decision:
        """Parallelism within the component's bounds, containers within the topology's."""
        action = decision.action
        if action.kind != "scale" or action.component is None or action.parallelism is None:
            return decision
        lo, hi = self._settings.bounds(action.component)
        current = obs.components[action.component].parallelism
        bounded = min(hi, max(lo, action.parallelism))
        if bounded != action.parallelism:
            decision = replace(decision, formula=f"{decision.formula}; within [{lo}, {hi}]: {bounded}",
                               summary=f"{decision.summary} (held to {bounded}: squall.health."
                                       f"{'max' if bounded < action.parallelism else 'min'}.parallelism)",
                               action=replace(action, parallelism=bounded))
        if bounded == current:
            if action.cpu is not None or action.ram_mb is not None:
                return replace(decision, action=replace(decision.action, kind="resize", parallelism=None))
            return replace(decision, status="blocked",
                           reason=f"{action.component} is at its bound squall.health."
                                  f"{'max' if action.parallelism > current else 'min'}.parallelism = {current}")
        limit = self._settings.max_containers
        after = resolve.containers_after(obs, bounded - current)
        if limit is not None and bounded > current and after > limit:
            return replace(decision, status="blocked",
                           reason=f"{after} containers (estimated) > squall.health.max.containers = {limit}")
        return self._within_headroom(decision, obs, bounded)

    @staticmethod
    def _within_headroom(decision: Decision, obs: Observation, parallelism: int) -> Decision:
        """Blocked when what the scale adds (the instances' requests, in MiB and whole vcores; no container's
        own daemons) is more than the cluster can grant now."""
        if obs.headroom is None:
            return decision
        action = decision.action
        cpu, ram_mb = resolve.added_requests(obs.components[action.component or ""], parallelism, action.cpu,
                                             action.ram_mb)
        free_mb, free_vcores = obs.headroom
        if ram_mb <= free_mb and math.ceil(cpu - 1e-9) <= free_vcores:
            return decision
        return replace(decision, status="blocked",
                       reason=f"it adds {ram_mb:,.0f} MiB and {cpu:g} cores, and the cluster can grant {free_mb:,} "
                              f"MiB and {free_vcores} vcores now (the queue's headroom)")

    def _held(self, decision: Decision, obs: Observation) -> Decision:
        if decision.status != "recommended":
            return decision
        if obs.status != "running":
            return replace(decision, status="blocked", reason=f"the topology is {obs.status}: no action now")
        if obs.busy_elsewhere:
            return replace(decision, status="blocked",
                           reason="a restore, a checkpointed rescale or an update is in flight: no action now")
        return decision

    def _repeats(self, decision: Decision) -> bool:
        """The newest open decision of the same diagnosis and component says the same."""
        last = next((d for d in reversed(self._history)
                     if (d.diagnosis, d.component) == (decision.diagnosis, decision.component)), None)
        return (last is not None and last.status in OPEN and last.status == decision.status
                and last.action == decision.action and last.reason == decision.reason
                and last.evidence.get("hot_keys") == decision.evidence.get("hot_keys"))

    def _remember(self, obs: Observation) -> None:
        horizon = max(MIN_HORIZON_SECS, self._settings.scale_down_grace_secs, self._settings.stabilization_secs)
        self._recent = [o for o in self._recent if o.time >= obs.time - horizon] + [obs]
