"""What the REST API answers and the pages show: topologies, components, packing and logs, as data.

Everything comes from the state manager (through the scheduler's ``list``
and ``show`` data, so the UI and the CLI agree) and from each topology
master's metrics (``ui/metrics.py``). Each function returns plain JSON-able
data; an unknown topology raises ``manager.NotRunning``, an unknown
component or process ``NotFound``.
"""
from __future__ import annotations

import os
import time
from collections import Counter
from typing import Iterable, Mapping, Optional

from squall.chaining import chain_plan
from squall.conf import masked
from squall.errors import SquallError
from squall.idl import schema
from squall.logical import decode_config, grouping_name, kind_name, process_tasks, topology_config
from squall.packing import normalise, tmaster_container_resources
from squall.runtime.client import describe_checkpoints
from squall.scheduler import manager
from squall.scheduler.views import list_data, processes as process_rows, show_data
from squall.state import Kind, StateManager, member
from squall.state.status import process_state
from squall.ui.metrics import BadRequest, MetricsCache

LOG_LENGTH = 16 * 1024  # bytes of a log a request gets by default
LOG_LENGTH_MAX = 256 * 1024  # and at most


class NotFound(SquallError):
    """A component, container or process the topology does not have (answered 404)."""


def topologies(state: StateManager) -> list:
    """Every running topology: name, status and its reasons, uptime, containers, instances."""
    return list_data(state)


def logical_plan(topology: schema.Topology) -> list:
    return [{
        "name": c.name, "kind": kind_name(c.kind).lower(), "parallelism": c.parallelism,
        "outputs": [{"stream": s.name, "fields": list(s.fields), "direct": s.direct} for s in c.outputs],
        "inputs": [{"component": i.component, "stream": i.stream, "grouping": grouping_name(i.grouping).lower(),
                    "fields": list(i.fields)} for i in c.inputs],
        "config": dict(sorted(masked(decode_config(c.config)).items())),
    } for c in topology.components]


def visible_config(topology: schema.Topology) -> dict:
    """The topology's cluster layer, its own config over it, its command-line overrides over both; credentials
    masked."""
    config = {**decode_config(topology.cluster_config or {}), **decode_config(topology.config),
              **decode_config(topology.overrides)}
    return dict(sorted(masked(config).items()))


def topology(state: StateManager, metrics: MetricsCache, name: str, window: str) -> dict:
    """A topology: status, logical plan, config, per-component figures over ``window`` and their series."""
    data = show_data(state, name, errors=False, every_process=False)
    topo = state.get(Kind.TOPOLOGY, name)
    execution = state.get(Kind.EXECUTION_STATE, name)
    answer, unreachable = metrics.try_get(name, window, series=True, task_ids=())  # rows of tasks with errors
    per_component = (answer or {}).get("components", {})
    counts = Counter(i["component"] for ct in data["packing_plan"]["containers"] for i in ct["instances"])
    plan = logical_plan(topo)
    for c in plan:
        c["instances"] = counts[c["name"]]
        c["metrics"] = per_component.get(c["name"])
    return {
        "name": name, "status": data["status"], "reasons": data["reasons"],
        "desired_status": data["desired_status"], "confirmed_status": data["confirmed_status"],
        "cluster": data["cluster"], "run_dir": data["run_dir"], "scheduler": data["scheduler"],
        "uptime_secs": round(time.time() - execution.submit_time, 1), "run_id": execution.run_id,
        "window": window, "components": plan, "chains": data["chains"], "config": visible_config(topo),
        "containers": len(data["packing_plan"]["containers"]),
        "instances": sum(len(ct["instances"]) for ct in data["packing_plan"]["containers"]),
        "metrics_error": unreachable, "series": (answer or {}).get("series", {}),
        "errors": _errors(answer), "checkpoints": _checkpoints(answer), "sources": (answer or {}).get("sources", []),
        "debug": data["debug"],
    }


def _checkpoints(answer: Optional[dict]) -> Optional[dict]:
    """The topology master's checkpoint figures and their line (a topology that checkpoints), else None."""
    figures = (answer or {}).get("checkpoints")
    if figures is None:
        return None
    return {**figures, "line": describe_checkpoints(figures)}


def _errors(answer: Optional[dict]) -> list:
    """Every task's kept errors, oldest first."""
    if not answer:
        return []
    found = [{"component": t["component"], "task": task, **e} for task, t in answer["tasks"].items()
             for e in t["errors"]]
    return sorted(found, key=lambda e: e["time"])


def grouped_errors(errors: list) -> list:
    """Kept errors grouped by component and error line (as Heron's UI does): how many of each are kept,
    on which tasks, first and last time, the newest traceback; the most recent group first."""
    groups: dict = {}
    for e in errors:
        g = groups.setdefault((e["component"], e["error"]), {
            "component": e["component"], "error": e["error"], "count": 0, "tasks": set(), "first": e["time"]})
        g["count"] += 1
        g["tasks"].add(e["task"])
        g.update(last=e["time"], where=e["where"], traceback=e["traceback"])
    return sorted(({**g, "tasks": sorted(g["tasks"])} for g in groups.values()), key=lambda g: -g["last"])


def _where(state: StateManager, name: str) -> dict:
    """task id -> where its process runs: container, host, process name, pid, restarts, state."""
    return _where_in(state.container_records(name), state.get(Kind.PHYSICAL_PLAN, name))


def _records(state: StateManager, name: str, containers: Iterable[int]) -> list:
    """The records of these containers (those that have one)."""
    found = (state.get(Kind.CONTAINER, member(name, c)) for c in sorted(containers))
    return [r for r in found if r is not None]


def _where_in(records: Iterable[schema.ContainerStatus], physical: Optional[schema.PhysicalPlan]) -> dict:
    """``_where`` of the tasks of these container records."""
    pids = {i.id.task_id: i.pid for i in physical.instances} if physical is not None else {}
    out: dict = {}
    for record in records:
        for p in record.processes:
            for task, _ in process_tasks(p.name):
                out[task] = {"container": record.container, "host": record.host, "process": p.name,
                             "pid": p.pid or pids.get(task) or None, "restarts": p.restarts, "crashes": p.crashes,
                             "state": process_state(p),
                             "yarn_container": record.yarn_container or None}
    return out


def component(state: StateManager, metrics: MetricsCache, name: str, component_name: str, window: str) -> dict:
    """One component: its figures over ``window`` and every instance's, where it runs, its errors."""
    manager.running(state, name)
    topo = state.get(Kind.TOPOLOGY, name)
    spec = next((c for c in topo.components if c.name == component_name), None)
    if spec is None:
        raise NotFound(f"topology {name!r} has no component {component_name!r} "
                       f"(components: {', '.join(c.name for c in topo.components)})")
    plan = state.get(Kind.PACKING_PLAN, name)
    answer, unreachable = metrics.try_get(name, window, component=component_name)
    tasks = (answer or {}).get("tasks", {})
    where = _where(state, name)
    instances = []
    for c in plan.containers:
        for i in sorted(c.instances, key=lambda i: i.id.task_id):
            if i.id.component != component_name:
                continue
            instances.append({
                "task_id": i.id.task_id, "component_index": i.id.component_index, "container": c.id,
                **{k: v for k, v in where.get(i.id.task_id, {}).items() if k != "container"},
                "requested": {"cpu": i.resources.cpu, "ram_mb": i.resources.ram_mb},
                "metrics": tasks.get(i.id.task_id),
            })
    instances.sort(key=lambda x: x["task_id"])
    return {
        "topology": name, "component": component_name, "kind": kind_name(spec.kind).lower(),
        "parallelism": spec.parallelism, "window": window, "metrics_error": unreachable,
        "summary": (answer or {}).get("components", {}).get(component_name), "instances": instances,
        "errors": _errors(answer),
    }


PACKING_PAGE = 50  # containers a packing page shows (container 0 comes first, on the first page)


def packing(state: StateManager, metrics: MetricsCache, name: str, page: int = 1) -> dict:
    """The packing plan a page of ``PACKING_PAGE`` containers at a time (a 1,000-container topology has
    20,000 instances): each container's requested and used resources and YARN shape, its processes and
    its part of the physical plan, each edge's chaining; ``page`` says which page and how many there are."""
    manager.running(state, name)
    topo = state.get(Kind.TOPOLOGY, name)
    config = topology_config(topo)
    plan = state.get(Kind.PACKING_PLAN, name)
    physical = state.get(Kind.PHYSICAL_PLAN, name)
    ordered = [_container_zero(config)] + sorted(plan.containers, key=lambda c: c.id)
    pages = max(1, -(-len(ordered) // PACKING_PAGE))
    if not 1 <= page <= pages:
        raise BadRequest(f"page {page}: topology {name!r} has {pages} pages of {PACKING_PAGE} containers (1-{pages})")
    shown = ordered[(page - 1) * PACKING_PAGE:page * PACKING_PAGE]
    ids = {c.id for c in shown}
    tasks = sorted(i.id.task_id for c in shown for i in c.instances)
    answer, unreachable = metrics.try_get(name, "60s", task_ids=tuple(tasks))
    used = (answer or {}).get("tasks", {})
    records = {r.container: r for r in _records(state, name, ids)}
    where = _where_in(records.values(), physical)
    containers = []
    for c in shown:
        memory, vcores = normalise(c.resources, config)
        instances = [{
            "task_id": i.id.task_id, "component": i.id.component, "component_index": i.id.component_index,
            "requested": _res(i.resources), "pid": where.get(i.id.task_id, {}).get("pid"),
            "used": _used(used.get(i.id.task_id)),
        } for i in sorted(c.instances, key=lambda i: i.id.task_id)]
        measured = [x["used"] for x in instances if x["used"] is not None]
        record = records.get(c.id)
        containers.append({
            "id": c.id, "requested": _res(c.resources), "padding": _res(c.padding),
            "used": {"cpu": round(sum(u["cpu"] for u in measured), 3),
                     "ram_mb": round(sum(u["ram_mb"] for u in measured), 1)} if measured else None,
            "yarn_shape": {"memory_mb": memory, "vcores": vcores},
            "host": record.host if record else None, "executor_pid": record.executor_pid if record else None,
            "yarn_container": (record.yarn_container or None) if record else None,
            "processes": [{"name": p.name, "pid": p.pid or None, "restarts": p.restarts} for p in record.processes]
            if record else [],
            "instances": instances,
        })
    processes = process_rows(state, name, ids)
    return {
        "topology": name, "algorithm": plan.algorithm, "granularity": plan.granularity, "packing_plan_id": plan.id,
        "page": {"page": page, "pages": pages, "per_page": PACKING_PAGE, "containers": len(ordered),
                 "instances": sum(len(c.instances) for c in plan.containers)},
        "containers": containers, "metrics_error": unreachable, "processes": processes,
        "edges": [edge.to_json() for edge in chain_plan(topo).edges],
        "physical_plan": None if physical is None else {
            "packing_plan_id": physical.packing_plan_id,
            "tmaster": {"host": physical.tmaster.host, "port": physical.tmaster.control_port,
                        "pid": physical.tmaster.pid},
            "stmgrs": [{"container": s.container, "host": s.host, "port": s.data_port, "pid": s.pid}
                       for s in physical.stmgrs if s.container in ids],
            "instances": [{"task_id": i.id.task_id, "component": i.id.component, "container": i.container,
                           "pid": i.pid} for i in physical.instances if i.container in ids],
        },
    }


def _container_zero(config: Mapping[str, object]) -> schema.ContainerPlan:
    resources = tmaster_container_resources(config)
    return schema.ContainerPlan(id=0, instances=[], resources=resources,
                                padding=schema.Resources(cpu=0.0, ram_mb=0, disk_mb=0))


def _res(r: schema.Resources) -> dict:
    return {"cpu": r.cpu, "ram_mb": r.ram_mb, "disk_mb": r.disk_mb}


def _used(m: Optional[dict]) -> Optional[dict]:
    """An instance's measured use over the last minute: cores (cpu % / 100) and MiB."""
    if m is None or m.get("cpu_percent") is None:
        return None
    return {"cpu": round(m["cpu_percent"] / 100, 3), "ram_mb": round(m["rss_mb"] or 0.0, 1)}


def log_window(state: StateManager, name: str, container: int, process: str, offset: Optional[int],
               length: Optional[int]) -> dict:
    """Bytes ``[offset, offset + length)`` of a process's log (default: its last ``LOG_LENGTH`` bytes).

    The file is the one the container's record names: nothing in the request becomes a path."""
    manager.running(state, name)
    record = state.get(Kind.CONTAINER, member(name, container))
    if record is None:
        raise NotFound(f"topology {name!r} has no running container {container}")
    proc = next((p for p in record.processes if p.name == process), None)
    if proc is None:
        raise NotFound(f"container {container} of topology {name!r} has no process {process!r} "
                       f"(processes: {', '.join(p.name for p in record.processes)})")
    length = LOG_LENGTH if length is None else length
    if length < 0 or length > LOG_LENGTH_MAX or (offset is not None and offset < 0):
        raise BadRequest(f"offset {offset}, length {length}: offset >= 0 and 0 <= length <= {LOG_LENGTH_MAX}")
    try:
        size = os.path.getsize(proc.log_file)
        start = max(0, size - length) if offset is None else min(offset, size)
        with open(proc.log_file, "rb") as f:
            f.seek(start)
            data = f.read(length)
    except OSError as e:
        raise NotFound(f"the log of {process} in container {container} ({proc.log_file}) cannot be read here: "
                       f"{e.strerror} (container {container} runs on {record.host})") from None
    return {"topology": name, "container": container, "process": process, "host": record.host,
            "path": proc.log_file, "size": size, "offset": start, "length": len(data),
            "next_offset": start + len(data), "text": data.decode("utf-8", errors="replace")}


def log_index(state: StateManager, name: str) -> list:
    """Every process of the topology whose log the UI can show: container, process, host."""
    manager.running(state, name)
    out = []
    for record in state.container_records(name):
        out += [{"container": record.container, "process": p.name, "host": record.host}
                for p in record.processes]
    return sorted(out, key=lambda x: (x["container"], x["process"]))
