"""Observations for the health manager's pure tests: built by hand, or by a small model of a paced spout in
front of a bolt of fixed service time (what a real run's metrics window shows of it)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping, Optional, Sequence

from squall.health.model import Action, ComponentObservation, Observation, TaskObservation
from squall.health.settings import HealthSettings

WINDOW = 10.0


def task(task_id: int, rate: float, busy: float, container: int = 1, queue: int = 0, backpressure_ms: float = 0.0,
         service_ms: Optional[float] = None, cpu_percent: Optional[float] = None, rss_mb: Optional[float] = 40.0,
         spout: bool = False, open_trees: Optional[int] = None) -> TaskObservation:
    return TaskObservation(task_id=task_id, container=container, execute_rate=0.0 if spout else rate,
                           emit_rate=rate, busy=busy, queue_depth=queue, queue_depth_max=queue,
                           backpressure_ms=backpressure_ms, execute_latency_ms=service_ms, cpu_percent=cpu_percent,
                           rss_mb=rss_mb, pending=open_trees)


def component(name: str, tasks: Sequence[TaskObservation], kind: str = "bolt", cpu: float = 0.5,
              ram_mb: float = 256.0, grouping: Optional[str] = "SHUFFLE", chain: Optional[tuple] = None,
              **more: object) -> ComponentObservation:
    return ComponentObservation(name=name, kind=kind, parallelism=len(tasks), cpu_requested=cpu,
                                ram_mb_requested=ram_mb, chain=chain, tasks={t.task_id: t for t in tasks},
                                grouping=None if kind == "spout" else grouping, **more)  # type: ignore[arg-type]


def observation(time: float, components: Sequence[ComponentObservation], containers: int = 1,
                status: str = "running", reliability: str = "ATMOST_ONCE", pending: Optional[int] = None,
                busy_elsewhere: bool = False) -> Observation:
    return Observation(time=time, window_secs=WINDOW, topology="t", status=status, busy_elsewhere=busy_elsewhere,
                       reliability=reliability, max_spout_pending=pending, containers=containers,
                       components={c.name: c for c in components})


def settings(**changes: object) -> HealthSettings:
    return replace(HealthSettings(), **changes)  # type: ignore[arg-type]


@dataclass
class Pipeline:
    """A spout offering ``offered`` tuples/s to a bolt of ``parallelism`` tasks each taking ``service_ms`` a
    tuple (I/O-bound: little cpu), shuffle grouped; the bolt carries what it can, backpressure holds the spout
    for the rest of the window. ``per_container`` instances share a container."""

    offered: float
    service_ms: float = 2.0
    parallelism: int = 1
    bolt_cpu: float = 0.5
    bolt_ram_mb: float = 256.0
    per_container: int = 4
    slow: Mapping[int, float] = field(default_factory=dict)  # bolt task index -> its own service ms
    cpu_ms_per_tuple: float = 0.05
    spout_cpu: float = 0.5
    spout_ram_mb: float = 256.0
    restart_heals: bool = True  # a restarted slow task comes back at the common service time
    bursty: bool = False  # the spout bursts when released: held back 95 % of the time once saturated (recorded)

    def apply(self, action: Action) -> None:
        """What the scheduler's update would do to the topology (scale, resize, restart a task)."""
        if action.kind == "restart_task" and self.restart_heals:
            self.slow = {i: s for i, s in self.slow.items() if 10 + i != action.task_id}
        if action.component == "bolt":
            self.parallelism = action.parallelism or self.parallelism
            self.bolt_cpu = action.cpu or self.bolt_cpu
            self.bolt_ram_mb = action.ram_mb or self.bolt_ram_mb
        elif action.component == "spout":
            self.spout_cpu = action.cpu or self.spout_cpu
            self.spout_ram_mb = action.ram_mb or self.spout_ram_mb

    def observe(self, time: float, **more: object) -> Observation:
        service = [self.slow.get(i, self.service_ms) for i in range(self.parallelism)]
        share = self.offered / self.parallelism
        # shuffle: each task gets the same share, the slowest one holds the spout back for all
        carried_each = min(share, min(1000.0 / s for s in service))
        carried = carried_each * self.parallelism
        held = 0.0 if carried >= self.offered else 0.95 if self.bursty else 1.0 - carried / self.offered
        bolts = []
        for i, s in enumerate(service):
            b = min(1.0, carried_each * s / 1000.0)
            queue = 500 if b >= 0.999 else 1
            bolts.append(task(10 + i, carried_each, b, container=1 + (i + 1) // self.per_container, queue=queue,
                              service_ms=s, cpu_percent=100 * carried_each * self.cpu_ms_per_tuple / 1000 + 1.0))
        spout = task(1, carried, 0.05, container=1, backpressure_ms=held * WINDOW * 1000, spout=True,
                     cpu_percent=5.0)
        containers = math.ceil((1 + self.parallelism) / self.per_container)
        return observation(time, [component("spout", [spout], kind="spout", cpu=self.spout_cpu,
                                            ram_mb=self.spout_ram_mb),
                                  component("bolt", bolts, cpu=self.bolt_cpu, ram_mb=self.bolt_ram_mb)],
                           containers=containers, **more)  # type: ignore[arg-type]

    def carried(self) -> float:
        service = [self.slow.get(i, self.service_ms) for i in range(self.parallelism)]
        return min(self.offered, self.parallelism * min(1000.0 / s for s in service))
