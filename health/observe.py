"""The sensors: a running topology's metrics window, its plans and config as one ``Observation``.

Pure: the loop queries ``runtime.client.query_metrics(state, name, window_secs=...)`` and hands the
result here with the plans it runs; nothing is read from anywhere else. The same function reads a
recorded ``squall metrics NAME --json`` (task ids as JSON strings), which is what the tests use.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from squall import chaining
from squall.conf import Config
from squall.health.model import ComponentObservation, Observation, TaskObservation
from squall.idl import schema

KINDS = {schema.ComponentKind.SPOUT: "spout", schema.ComponentKind.BOLT: "bolt"}


def observe(metrics: Mapping[str, object], topology: schema.Topology, packing_plan: schema.PackingPlan,
            execution: schema.ExecutionState, config: Config, now: float,
            busy_elsewhere: bool = False, headroom: Optional[tuple] = None) -> Observation:
    """The topology as ``metrics`` (a ``query_metrics`` result over a window) show it at ``now``.

    ``config`` is the topology's resolved config; ``busy_elsewhere``: the loop knows a restore, a
    checkpointed rescale or an update is in flight (no action is taken then); ``headroom``: ``(memory MB,
    vcores)`` the scheduler says the cluster can still grant (None: no bound known)."""
    tasks_metrics = {int(task_id): figures for task_id, figures in dict(metrics.get("tasks") or {}).items()}
    components_metrics = dict(metrics.get("components") or {})
    placed = {i.id.task_id: (c.id, i) for c in packing_plan.containers for i in c.instances}
    chain_of = {name: chain for chain in chaining.chains(topology, config) for name in chain}
    lag = _source_lag(metrics.get("sources") or [])  # type: ignore[arg-type]
    window = _window_secs(components_metrics, tasks_metrics)
    components = {}
    for component in topology.components:
        if component.kind not in KINDS:
            continue
        mine = sorted(t for t, (_, i) in placed.items() if i.id.component == component.name)
        resources = placed[mine[0]][1].resources if mine else None
        tasks = {t: _task(t, placed[t][0], tasks_metrics.get(t, {})) for t in mine}
        figures = components_metrics.get(component.name) or {}
        components[component.name] = ComponentObservation(
            name=component.name,
            kind=KINDS[component.kind],
            parallelism=len(mine) or component.parallelism,
            cpu_requested=resources.cpu if resources else 0.0,
            ram_mb_requested=float(resources.ram_mb) if resources else 0.0,
            chain=chain_of.get(component.name),
            tasks=tasks,
            complete_latency_p99_ms=figures.get("complete_latency_p99_ms"),
            source_lag=lag.get(component.name),
            grouping=_grouping(component),
            stateful=bool(component.stateful),
        )
    pending = config["topology.max.spout.pending"]
    return Observation(
        time=now,
        window_secs=window,
        topology=topology.name,
        status=schema.TopologyStatus._VALUES_TO_NAMES[execution.status].lower(),
        busy_elsewhere=busy_elsewhere,
        reliability=config["topology.reliability.mode"],
        max_spout_pending=int(pending) if pending is not None else None,
        containers=len(packing_plan.containers),
        components=components,
        headroom=headroom,
    )


def _task(task_id: int, container: int, m: Mapping[str, object]) -> TaskObservation:
    return TaskObservation(
        task_id=task_id,
        container=container,
        execute_rate=float(m.get("execute_rate") or 0.0),
        emit_rate=float(m.get("emit_rate") or 0.0),
        busy=_optional(m.get("capacity")),
        queue_depth=int(m.get("queue_depth") or 0),
        queue_depth_max=int(m.get("queue_depth_max") or 0),
        backpressure_ms=float(m.get("backpressure_ms") or 0.0),
        execute_latency_ms=_optional(m.get("execute_latency_ms")),
        cpu_percent=_optional(m.get("cpu_percent")),
        rss_mb=_optional(m.get("rss_mb")),
        pending=None if m.get("pending") is None else int(m["pending"]),  # type: ignore[call-overload]
    )


def _optional(value: object) -> Optional[float]:
    return None if value is None else float(value)  # type: ignore[arg-type]


def _window_secs(components: Mapping[str, Mapping], tasks: Mapping[int, Mapping]) -> float:
    """The window the figures cover: the longest any component or task reports (one bucket at least)."""
    secs = [float(m["window_secs"]) for m in (*components.values(), *tasks.values()) if m.get("window_secs")]
    return max(secs, default=0.0)


def _source_lag(sources: Sequence[Mapping[str, object]]) -> dict[str, int]:
    """Records behind per source spout, summed over its partitions (each task's last report)."""
    out: dict = {}
    for p in sources:
        if p.get("lag") is not None:
            name = str(p["component"])
            out[name] = out.get(name, 0) + int(p["lag"])  # type: ignore[call-overload]
    return out


def _grouping(component: schema.Component) -> Optional[str]:
    kinds = {schema.GroupingKind._VALUES_TO_NAMES[i.grouping] for i in component.inputs}
    if not kinds:
        return None
    return kinds.pop() if len(kinds) == 1 else "mixed"
