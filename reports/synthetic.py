"""Synthetic metrics in the exact schema of ``docs/metrics.md``.

Used by the tests (known answers) and by ``bench/reports.py`` (volume). The
model is deliberately simple so that the right recommendation can be worked
out by hand:

- a component is offered ``rate`` tuples/s in total, split across its tasks by
  ``weights`` (even by default; a larger weight plants a hot key);
- one instance processes at most ``capacity`` tuples/s, spending
  ``1 / capacity`` s in ``process()`` per tuple (its execute latency); of that
  time it computes ``cpu_share`` (1: CPU-bound; less: it waits, on I/O or for a
  CPU of an oversubscribed host), so its CPU use is
  ``100 * cpu_share * processed / capacity`` percent of one core;
- a saturated instance keeps a queue (``queue_depth``) and spends the share
  of the bucket it could not keep up in backpressure.
"""
from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

from squall.reports.schema import FIELD_NAMES, row_problem

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class SyntheticComponent:
    name: str
    kind: str  # "spout" or "bolt"
    parallelism: int
    rate: float  # tuples/s offered to the whole component
    capacity: float  # tuples/s one instance sustains when saturated
    cpu_requested: float = 0.5
    ram_requested_mb: int = 256
    rss_mb: float = 100.0
    fanout: float = 1.0  # tuples emitted per tuple executed (bolts)
    cpu_share: float = 1.0  # share of its time in process() an instance computes
    weights: Optional[tuple] = None  # share of the load per task; even when None

    def task_weights(self) -> list:
        weights = list(self.weights) if self.weights else [1.0] * self.parallelism
        if len(weights) != self.parallelism:
            raise ValueError(f"{self.name}: {len(weights)} weights for {self.parallelism} tasks")
        total = float(sum(weights))
        return [w / total for w in weights]


@dataclass(frozen=True)
class SyntheticRun:
    topology: str
    components: tuple
    buckets: int
    containers: int = 2
    interval_secs: float = 5.0
    run_id: str = "20260101-000000"
    noise: float = 0.0  # relative jitter of the offered rate per bucket
    wave: float = 0.0  # amplitude of a slow sine on the offered rate
    seed: int = 0


def task_layout(run: SyntheticRun) -> list:
    """(component, task_id, component_index, container) for every instance.

    Task ids the Storm way (components by name, from 1); containers dealt
    round-robin from 1 in task id order."""
    layout, next_id = [], 1
    for c in sorted(run.components, key=lambda c: c.name):
        for index in range(c.parallelism):
            container = 1 + (next_id - 1) % run.containers
            layout.append((c, next_id, index, container))
            next_id += 1
    return layout


def packing_plan(run: SyntheticRun) -> dict:
    """The run's packing plan in the shape of ``squall.packing.plan_to_json``."""
    containers = {i: [] for i in range(1, run.containers + 1)}
    for c, task_id, index, container in task_layout(run):
        containers[container].append(
            {
                "component": c.name,
                "task_id": task_id,
                "component_index": index,
                "resources": {"cpu": c.cpu_requested, "ram_mb": c.ram_requested_mb, "disk_mb": 256},
            }
        )
    out = []
    for cid, instances in containers.items():
        cpu = sum(i["resources"]["cpu"] for i in instances) + 0.35
        ram = sum(i["resources"]["ram_mb"] for i in instances) + 224
        disk = sum(i["resources"]["disk_mb"] for i in instances) + 320
        out.append({"id": cid, "resources": {"cpu": cpu, "ram_mb": ram, "disk_mb": disk}, "instances": instances})
    return {"topology": run.topology, "algorithm": "roundrobin", "granularity": "task", "containers": out}


def rows(run: SyntheticRun, container: int) -> Iterator[dict]:
    """Every metrics row one container's metrics manager would write, in time order."""
    rng = random.Random(f"{run.seed}-{container}")
    layout = [entry for entry in task_layout(run) if entry[3] == container]
    weights = {c.name: c.task_weights() for c in run.components}
    host = f"node{container % 3}"
    for k in range(run.buckets):
        ts = T0 + (k + 1) * run.interval_secs
        factor = 1.0 + run.wave * math.sin(2 * math.pi * k / max(run.buckets, 1))
        base = dict(ts=ts, interval_secs=run.interval_secs, topology=run.topology, run_id=run.run_id,
                    container=container, host=host)
        for c, task_id, index, _ in layout:
            offered = c.rate * weights[c.name][index] * factor * (1.0 + run.noise * rng.uniform(-1, 1))
            yield _instance_row(base, c, task_id, offered, k)
        for process, cpu, rss in (("stmgr", 3.0, 60.0), ("metricsmgr", 1.0, 45.0)):
            yield _daemon_row(base, process, cpu, rss)
        if container == 1:
            yield _daemon_row(base, "tmaster", 0.5, 50.0)


def _instance_row(base: dict, c: SyntheticComponent, task_id: int, offered: float, k: int) -> dict:
    interval = base["interval_secs"]
    processed = min(offered, c.capacity)
    saturated = offered >= c.capacity
    executed = int(round(processed * interval))
    emitted = executed if c.kind == "spout" else int(round(executed * c.fanout))
    latency = 1000.0 / c.capacity
    return {
        **base,
        "process": "instance",
        "component": c.name,
        "task_id": task_id,
        "emit_count": emitted,
        "execute_count": executed,
        "ack_count": executed,
        "fail_count": 0,
        "execute_latency_ms": latency,
        "process_latency_ms": None if c.kind == "spout" else latency * 1.5,
        "complete_latency_ms": latency * 20 if c.kind == "spout" else None,
        "queue_depth": 200 + 10 * k if saturated and c.kind == "bolt" else 0,
        "backpressure_ms": (1.0 - processed / offered) * interval * 1000.0 if offered > 0 else 0.0,
        "cpu_percent": 100.0 * c.cpu_share * processed / c.capacity,
        "rss_mb": c.rss_mb,
        "threads": 3,
        "cpu_requested": c.cpu_requested,
        "ram_requested_mb": c.ram_requested_mb,
        "user": {},
    }


def _daemon_row(base: dict, process: str, cpu: float, rss: float) -> dict:
    return {
        **base,
        "process": process,
        "component": f"__{process}",
        "task_id": None,
        "emit_count": 0,
        "execute_count": 0,
        "ack_count": 0,
        "fail_count": 0,
        "execute_latency_ms": None,
        "process_latency_ms": None,
        "complete_latency_ms": None,
        "queue_depth": 0,
        "backpressure_ms": 0.0,
        "cpu_percent": cpu,
        "rss_mb": rss,
        "threads": 4,
        "cpu_requested": None,
        "ram_requested_mb": None,
        "user": {},
    }


def write_run(root: str, run: SyntheticRun, check: bool = False) -> str:
    """Write ``<root>/<topology>/<run_id>/{packing_plan.json,metrics/container-<id>.jsonl}``.

    Returns the run directory. ``check`` validates every row against the
    schema first (slow; for tests)."""
    run_dir = os.path.join(root, run.topology, run.run_id)
    os.makedirs(os.path.join(run_dir, "metrics"), exist_ok=True)
    with open(os.path.join(run_dir, "packing_plan.json"), "w") as f:
        json.dump(packing_plan(run), f, indent=2)
    for container in range(1, run.containers + 1):
        path = os.path.join(run_dir, "metrics", f"container-{container}.jsonl")
        with open(path, "w") as f:
            for row in rows(run, container):
                if check:
                    problem = row_problem(row)
                    if problem or tuple(row) != FIELD_NAMES:
                        raise AssertionError(f"synthetic row is malformed ({problem}): {row}")
                f.write(json.dumps(row))
                f.write("\n")
    return run_dir


def rows_per_bucket(run: SyntheticRun) -> int:
    """Rows the whole run writes per bucket: instances plus daemons."""
    return sum(c.parallelism for c in run.components) + 2 * run.containers + 1


def benchmark_run(rows_wanted: int, seed: int = 0) -> SyntheticRun:
    """A word-count-like run of about ``rows_wanted`` rows, with a hot key and a wave."""
    components = (
        SyntheticComponent("spout", "spout", 4, rate=8000.0, capacity=5000.0, cpu_requested=1.0),
        SyntheticComponent("split", "bolt", 8, rate=8000.0, capacity=1500.0, fanout=6.0, cpu_requested=1.0,
                           ram_requested_mb=512, rss_mb=180.0),
        SyntheticComponent("count", "bolt", 8, rate=48000.0, capacity=9000.0, cpu_requested=0.5,
                           rss_mb=300.0, weights=(3, 1, 1, 1, 1, 1, 1, 1)),
        SyntheticComponent("sink", "bolt", 2, rate=48000.0, capacity=40000.0, cpu_requested=0.5),
    )
    run = SyntheticRun("bench_wc", components, buckets=1, containers=4, noise=0.1, wave=0.3, seed=seed)
    buckets = max(1, rows_wanted // rows_per_bucket(run))
    return SyntheticRun("bench_wc", components, buckets=buckets, containers=4, noise=0.1, wave=0.3, seed=seed)


TOPOLOGY_TEMPLATE = '''"""Generated topology {name} for the packing report."""
from squall import Bolt, Grouping, Spout, TopologyBuilder


class Source(Spout):
    outputs = ["key", "value"]

    def next_tuple(self):
        self.emit(["k", 1])


class Work(Bolt):
    outputs = ["key", "value"]

    def process(self, tup):
        self.emit([tup["key"], tup["value"]], anchors=[tup])
        self.ack(tup)


builder = TopologyBuilder("{name}")
{body}
builder.set_config({{"topology.workers": {workers}}})
topology = builder.build()
'''


def topology_source(name: str, seed: int) -> str:
    """The text of a topology file: a spout and a chain of 1-4 bolts of varied sizes."""
    rng = random.Random(seed)
    lines = []
    spout_par = rng.randint(1, 4)
    lines.append(
        f'c0 = builder.add_spout("source", Source, par={spout_par}, '
        f'config={{"squall.component.cpu": {rng.choice([0.25, 0.5, 1.0])}, '
        f'"squall.component.ram.mb": {rng.choice([128, 256, 512])}}})'
    )
    for i in range(1, rng.randint(2, 5)):
        grouping = 'Grouping.fields("key")' if rng.random() < 0.5 else "Grouping.SHUFFLE"
        lines.append(
            f'c{i} = builder.add_bolt("bolt{i}", Work, par={rng.randint(1, 8)}, inputs={{c{i - 1}: {grouping}}}, '
            f'config={{"squall.component.cpu": {rng.choice([0.25, 0.5, 1.0, 1.5])}, '
            f'"squall.component.ram.mb": {rng.choice([128, 256, 512, 1024, 2048])}}})'
        )
    return TOPOLOGY_TEMPLATE.format(name=name, body="\n".join(lines), workers=rng.randint(1, 4))


def write_topologies(directory: str, count: int, seed: int = 0, prefix: str = "gen") -> list:
    """Write ``count`` topology files ``<prefix>_<i>.py``; returns their paths."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i in range(count):
        name = f"{prefix}_{seed}_{i}"
        path = os.path.join(directory, f"{name}.py")
        with open(path, "w") as f:
            f.write(topology_source(name, seed * 100_003 + i))
        paths.append(path)
    return paths


def validate_lines(lines: Sequence[str]) -> list:
    """Decode and check JSON lines; returns the problem of each (None when valid)."""
    problems = []
    for line in lines:
        try:
            problems.append(row_problem(json.loads(line)))
        except ValueError:
            problems.append("not a JSON object")
    return problems
