"""The health manager's process: ``python -m squall.health.manager --topology T --container 0 --state FILE
--role health`` (container 0's executor starts it, ``squall/processargs.py``).

``HealthManager`` is the pure part: control (the mode, an apply request) and an observation in, the
decision to carry out now out; the policy (``health/policy.py``) decides, this keeps the record and
the mode's rules. ``serve`` is the thin loop: one copy of a topology acts at a time (an ephemeral
``healthmgrs/<topology>`` record; a second copy waits for it), every ``squall.health.interval.secs``
it observes, decides, carries out and writes its report to the state manager (``health/store.py``),
so that a new copy, or a topology master failover, starts from the same history and mode.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import replace
from typing import Mapping, Optional, Protocol, Sequence

from squall.conf import Config, base_config
from squall.debugging import sampling_percent
from squall.errors import SquallError
from squall.health import actuate
from squall.health.diagnose import Diagnosis
from squall.health.hot_keys import KeySampler, hot_keys, keyed_inputs, sample_percent
from squall.health.model import Decision, Observation
from squall.health.observe import observe
from squall.health.policy import HealthPolicy, HealthSettings
from squall.health.store import Control, HealthStore, Report
from squall.idl import schema
from squall.logical import component_config, topology_config
from squall.metrics_schema import HEALTH_ACTIONS, HEALTH_COMPONENT
from squall.processargs import ProcessArgs
from squall.runtime.client import MetricsReporter, TMasterUnreachable, query_metrics
from squall.scheduler.debugging import set_sampling
from squall.scheduler.events import read_events
from squall.scheduler.launcher import make_scheduler
from squall.state import AlreadyExists, Kind, StateAddress, StateError, StateManager
from squall.state.status import topology_health
from squall.supervision import die_with_parent

log = logging.getLogger(__name__)

# Decisions kept in the record, newest last (a day at a decision a minute is less).
HISTORY_KEPT = 500
# Changes of parallelism kept in the record, newest last.
PARALLELISM_KEPT = 200


class Policy(Protocol):
    """What the manager needs of ``health.policy.HealthPolicy``."""

    def decide(self, observation: Observation) -> list[Decision]: ...

    def applied(self, decision: Decision, now: float) -> Decision: ...

    @property
    def diagnosed(self) -> Sequence[Diagnosis]: ...


def symptoms(observation: Observation) -> dict:
    """Per component, the figures an operator reads first: parallelism, input carried, the busiest
    task, queues and backpressure now."""
    out = {}
    for name, c in observation.components.items():
        tasks = list(c.tasks.values())
        busy = [t.busy for t in tasks if t.busy is not None]
        out[name] = {
            "kind": c.kind,
            "parallelism": c.parallelism,
            "execute_rate": round(sum(t.execute_rate for t in tasks), 1),
            "emit_rate": round(sum(t.emit_rate for t in tasks), 1),
            "busy_max": round(max(busy), 3) if busy else None,
            "queue_depth_max": max((t.queue_depth_max for t in tasks), default=0),
            "backpressure_ms": round(sum(t.backpressure_ms for t in tasks), 1),
            "complete_latency_p99_ms": c.complete_latency_p99_ms,
            "source_lag": c.source_lag,
        }
    return out


def _actionable(decision: Decision) -> bool:
    """A recommendation not yet carried out that changes something."""
    return decision.status == "recommended" and decision.action.kind != "none"


class HealthManager:
    """The mode's rules over the policy's decisions, and the record of every decision."""

    def __init__(self, policy: Policy, configured_mode: str, history: Sequence[Decision] = (),
                 parallelism: Sequence[tuple[float, Mapping[str, int]]] = ()):
        self.policy = policy
        self.configured_mode = configured_mode
        self.mode = configured_mode
        self.decisions: dict[str, Decision] = {d.id: d for d in history}
        self.parallelism = list(parallelism)
        self.symptoms: dict = {}
        self.skewed: list[str] = []  # components the last step found skewed
        self.reached: Counter = Counter()  # "<action kind>/<status>" -> decisions that reached it (metrics)

    def step(self, control: Control, observation: Optional[Observation]) -> Optional[Decision]:
        """Record what the policy decides about ``observation``; the decision to carry out now: in
        ``auto`` the first new recommendation that changes something (or, with none, the newest decision when
        it is a recommendation recommend mode left: the policy repeats no decision), in ``recommend`` the one an
        operator asked to apply (once), in ``off`` nothing (the policy is not asked)."""
        self.mode = control.effective_mode(self.configured_mode)
        if self.mode == "off" or observation is None:
            return None
        self.symptoms = symptoms(observation)
        now = {name: c.parallelism for name, c in observation.components.items()}
        if not self.parallelism or self.parallelism[-1][1] != now:
            self.parallelism = (self.parallelism + [(observation.time, now)])[-PARALLELISM_KEPT:]
        fresh = self.policy.decide(observation)
        self.skewed = sorted({d.component for d in self.policy.diagnosed if d.name == "skew"})
        for d in fresh:
            self.record(d)
        if self.mode == "auto":  # a new recommendation, else one made before the switch and still the newest
            newest = next(reversed(self.decisions.values()), None)
            return next((d for d in fresh if _actionable(d)), newest if newest and _actionable(newest) else None)
        asked = self.decisions.get(control.apply) if control.apply else None
        return asked if asked is not None and _actionable(asked) else None

    def carried_out(self, decision: Decision, now: float) -> Decision:
        return self.record(self.policy.applied(decision, now))

    def refused(self, decision: Decision, message: str) -> Decision:
        return self.record(replace(decision, status="failed", reason=message))

    def record(self, decision: Decision) -> Decision:
        before = self.decisions.pop(decision.id, None)  # an update goes last: the history in the order of change
        if before is None or before.status != decision.status:
            self.reached[f"{decision.action.kind}/{decision.status}"] += 1
        self.decisions[decision.id] = decision
        while len(self.decisions) > HISTORY_KEPT:
            del self.decisions[next(iter(self.decisions))]
        return decision

    def report(self, now: float) -> Report:
        return Report(now, self.mode, self.symptoms, tuple(self.decisions.values()), tuple(self.parallelism))

    def metrics_row(self, now: float, interval: float, container: int) -> schema.MetricsRow:
        """The round's row for the metrics manager (docs/metrics.md): the decisions that reached each
        status since the last row, by action kind; counted from zero again."""
        counts, self.reached = dict(self.reached), Counter()
        return schema.MetricsRow(ts=now, interval_secs=interval, process="health", component=HEALTH_COMPONENT,
                                 task_id=None, emit_count=0, execute_count=0, ack_count=0, fail_count=0,
                                 queue_depth=0, backpressure_ms=0.0, user=json.dumps({HEALTH_ACTIONS: counts}),
                                 pid=os.getpid(), container=container)


class Leadership:
    """The one health manager of a topology that acts: an ephemeral ``healthmgrs/<topology>`` record
    (gone with its process or its ZooKeeper session); the others wait for it."""

    def __init__(self, state: StateManager, topology: str):
        self.state, self.topology = state, topology
        self.me = f"{socket.gethostname()} pid {os.getpid()} {uuid.uuid4().hex[:8]}".encode()

    def holds(self) -> bool:
        if self.state.get(Kind.HEALTH_MANAGER, self.topology) == self.me:
            return True
        try:
            self.state.create(Kind.HEALTH_MANAGER, self.topology, self.me)
        except AlreadyExists:
            return False
        return True

    def release(self) -> None:
        if self.state.get(Kind.HEALTH_MANAGER, self.topology) == self.me:
            self.state.delete(Kind.HEALTH_MANAGER, self.topology)


class HealthLoop:
    """The I/O around ``HealthManager``: sensors, the store, the scheduler, the metrics manager."""

    def __init__(self, state: StateManager, topology: str, base: Config, container: int,
                 metrics: Optional[MetricsReporter] = None):
        self.state, self.topology, self.base, self.container = state, topology, base, container
        self.store = HealthStore(state, topology)
        self.metrics = metrics
        self.health: Optional[HealthManager] = None
        self.keys = KeySampler()
        self.last_round = time.time()

    def config(self) -> tuple[schema.Topology, Config]:
        """The topology and its config, with ``topology.max.spout.pending`` as it is now (set while running)."""
        topology = self.state.get(Kind.TOPOLOGY, self.topology)
        execution = self.state.get(Kind.EXECUTION_STATE, self.topology)
        if topology is None or execution is None:
            raise SquallError(f"topology {self.topology!r} has no record in the state manager (killed?)")
        config = topology_config(topology, self.base)
        if execution.max_spout_pending is not None:
            config = config.with_layer({"topology.max.spout.pending": execution.max_spout_pending}, "squall health")
        return topology, config

    def start(self) -> HealthManager:
        topology, config = self.config()
        report = self.store.report()
        policy = HealthPolicy(HealthSettings.from_config(config, topology), history=report.history)
        return HealthManager(policy, str(config["squall.health.mode"]), report.history, report.parallelism)

    def observe(self, config: Config, topology: schema.Topology) -> Optional[Observation]:
        window = float(config["squall.health.interval.secs"])
        try:
            metrics = query_metrics(self.state, self.topology, window_secs=window)
        except TMasterUnreachable as e:
            log.info("no observation this time: %s", e)
            return None
        execution = self.state.get(Kind.EXECUTION_STATE, self.topology)
        now = time.time()
        observed = observe(metrics, topology, self.state.get(Kind.PACKING_PLAN, self.topology), execution, config,
                           now, busy_elsewhere=self.busy_elsewhere(), headroom=self.headroom(execution))
        return replace(observed, hot_keys=self.keys.keys(now))

    def headroom(self, execution: schema.ExecutionState) -> Optional[tuple]:
        """What the cluster can still grant the topology (on YARN, its queue's headroom), None when unknown."""
        try:
            return make_scheduler(execution.cluster, self.state).headroom(execution)
        except SquallError as e:
            log.info("the cluster's headroom is unknown this time: %s", e)
            return None

    def sample_keys(self, topology: schema.Topology, config: Config, observation: Optional[Observation]) -> None:
        """Count the keys of the samples whose time is over; start one for each newly skewed component
        (``health/hot_keys.py``): its fields-grouped inputs' emits sampled for ``squall.health.key.sample.secs``,
        at a percent from their rate, unless a percent is in force already."""
        now = time.time()
        for sample in self.keys.due(now):
            try:
                events = [e for upstream in sorted({i.upstream for i in sample.inputs})
                          for e in read_events(self.state, self.topology, upstream, since=sample.since)]
            except SquallError as e:
                log.info("the sampled keys of %s were not read: %s", sample.component, e)
                continue
            plan = self.state.get(Kind.PACKING_PLAN, self.topology)
            tasks = sorted(i.id.task_id for c in plan.containers for i in c.instances
                           if i.id.component == sample.component)
            stateful = any(c.stateful for c in topology.components if c.name == sample.component)
            groups = int(component_config(topology, sample.component, config)["squall.state.key.groups"]) \
                if stateful else None
            found = hot_keys(events, sample.inputs, tasks, groups)
            if found:  # none sampled (the record reached no task in time): sampled again while it is skewed
                self.keys.keep(sample.component, found, now)
        if observation is None or self.health is None:
            return
        secs = float(config["squall.health.key.sample.secs"])
        for component in self.keys.wanted(self.health.skewed, now):
            inputs = keyed_inputs(topology, component)
            debug = self.state.get(Kind.DEBUG, self.topology)
            for upstream in sorted({i.upstream for i in inputs}):
                if sampling_percent(debug, upstream, now) > 0:
                    continue  # an operator's percent: read as it is
                rate = sum(t.emit_rate for t in observation.components[upstream].tasks.values()) \
                    if upstream in observation.components else 0.0
                try:
                    set_sampling(self.state, self.topology, sample_percent(rate, secs), upstream, seconds=secs)
                except SquallError as e:  # stopped meanwhile, say: tried again at its next skew
                    log.info("the emits of %s are not sampled: %s", upstream, e)
                    continue
                log.info("sampling %s's emits for %g s: the hot keys of %s", upstream, secs, component)
            self.keys.start(component, inputs, now, secs)

    def busy_elsewhere(self) -> bool:
        """Another command is changing the topology (it holds its lock), or it is not all up (degraded,
        restoring, an update still starting): no action now."""
        return self.state.get(Kind.LOCK, self.topology) is not None or not topology_health(self.state,
                                                                                         self.topology).up

    def tick(self) -> None:
        """One interval: observe, decide, carry out at most one action, write the report."""
        if self.health is None:
            self.health = self.start()
        topology, config = self.config()
        control = self.store.control()
        observation = None
        if control.effective_mode(self.health.configured_mode) != "off":
            observation = self.observe(config, topology)
        chosen = self.health.step(control, observation)
        if chosen is not None:
            self.store.save(self.health.report(time.time()))  # the decision is on record before it acts
            log.info("carrying out %s: %s", chosen.id, chosen.summary)
            try:
                actuate.carry_out(self.state, self.topology, chosen.action, self.base)
            except SquallError as e:
                log.warning("%s refused: %s", chosen.id, e)
                self.health.refused(chosen, str(e))
            else:
                self.health.carried_out(chosen, time.time())
        self.sample_keys(topology, config, observation)
        now = time.time()
        if self.state.get(Kind.EXECUTION_STATE, self.topology) is None:
            raise SquallError(f"topology {self.topology!r} was killed")  # its records are gone: write none again
        self.store.save(self.health.report(now))
        if self.metrics is not None:
            self.metrics.send([self.health.metrics_row(now, now - self.last_round, self.container)])
        self.last_round = now

    def serve(self, stop: threading.Event) -> None:
        """Wait to lead, then tick every interval until ``stop``."""
        leadership = Leadership(self.state, self.topology)
        try:
            while not stop.is_set():
                _, config = self.config()
                interval = float(config["squall.health.interval.secs"])
                if leadership.holds():
                    self.tick()
                else:
                    self.health = None  # another copy acts: start again from its record when it is gone
                stop.wait(interval)
        finally:
            leadership.release()


def metrics_reporter(args: ProcessArgs, state: StateManager) -> Optional[MetricsReporter]:
    """The reporter to this container's metrics manager (its port is in the executor's launch file)."""
    if not args.launch:
        return None
    with open(args.launch) as f:
        port = json.load(f).get("metricsmgr_port")
    execution = state.get(Kind.EXECUTION_STATE, args.topology)
    if not port or execution is None:
        return None
    topology = state.get(Kind.TOPOLOGY, args.topology)
    host = topology_config(topology)["squall.runtime.bind.host"] if topology is not None else ""
    return MetricsReporter("127.0.0.1" if host in ("", "0.0.0.0") else host, int(port), execution.secret,
                           args.container)


def main(argv: Optional[list] = None) -> int:
    args = ProcessArgs.parse(argv, "python -m squall.health.manager")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s %(levelname)s [c{args.container} health %(process)d] %(name)s: "
                               "%(message)s")
    die_with_parent()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        state = StateAddress.read(args.state).open()
        state.start()
    except StateError as e:
        log.error("topology %r: %s", args.topology, e)
        return 2
    try:
        HealthLoop(state, args.topology, base_config(), args.container, metrics_reporter(args, state)).serve(stop)
    except SquallError as e:
        log.error("%s", e)
        return 1
    finally:
        state.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
