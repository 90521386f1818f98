"""What ``squall list`` and ``squall show`` show, as data and as text; the UI reads the same data.

``list_data`` and ``show_data`` read the state manager (and, for the errors
raised in user code, the topology master through the runtime's client); the
``*_text`` functions render that data with ``squall.commandline.format_table``,
so the CLI commands stay thin and the UI and the CLI agree.
"""
from __future__ import annotations

import time
from typing import Collection, Optional, TypedDict

from squall.chaining import chains
from squall.commandline import format_table
from squall.idl import schema
from squall.logical import process_tasks
from squall.packing import plan_to_json
from squall.runtime.client import TMasterUnreachable, query_metrics
from squall.scheduler import launcher, manager, shipped_files
from squall.scheduler.debugging import debug_lines, debug_view
from squall.state import Kind, StateManager, member
from squall.state.status import process_state, topology_health

STATUS_NAMES = {schema.TopologyStatus.RUNNING: "RUNNING", schema.TopologyStatus.PAUSED: "PAUSED"}
SHOWN_ERRORS = 10  # the errors in user code ``squall show`` prints (the newest)


class TopologyRow(TypedDict):
    """One running topology, a row of ``squall list``."""

    name: str
    status: str
    cluster: str
    containers: int
    instances: int
    run_id: str
    uptime_secs: float
    reason: str  # the first line of the first reason ("" when it is healthy)
    reasons: list[str]


class ProcessRow(TypedDict):
    """One process of a running topology, a row of ``squall show``'s process table."""

    container: Optional[int]  # None: the topology's supervisor
    process: str
    host: str
    port: Optional[int]
    pid: Optional[int]
    state: str  # up, restarting or failed
    restarts: int


class UserError(TypedDict):
    """An error raised in user code, as the topology master keeps it."""

    component: str
    task: int
    time: float
    where: str
    error: str
    traceback: str


class TopologyView(TypedDict):
    """A running topology as ``squall show`` (and the UI) shows it."""

    name: str
    status: str
    reasons: list[str]
    desired_status: str
    confirmed_status: Optional[str]  # None until the topology master has built a physical plan
    run_dir: str
    cluster: str
    scheduler: dict[str, str]  # the scheduler's own details (label -> value)
    packing_plan: dict  # packing.plan_to_json's
    chains: list[list[str]]
    files: list[dict]  # the shipped files' versions in force: alias, version, name, size, sha256
    processes: list[ProcessRow]
    errors: Optional[list[UserError]]  # None: not asked, or the topology master did not answer
    debug: dict  # log levels and sampling in force (scheduler/debugging.py's debug_view)


def list_data(state: StateManager) -> list[TopologyRow]:
    """One row per running topology: ``squall list``'s (and the UI's)."""
    rows = []
    for name in state.names(Kind.EXECUTION_STATE):
        execution = state.get(Kind.EXECUTION_STATE, name)
        plan = state.get(Kind.PACKING_PLAN, name)
        if execution is None or plan is None:
            continue
        health = topology_health(state, name, execution)
        rows.append(TopologyRow(
            name=name,
            status=health.status,
            cluster=execution.cluster,
            containers=len(plan.containers),
            instances=sum(len(c.instances) for c in plan.containers),
            run_id=execution.run_id,
            uptime_secs=round(time.time() - execution.submit_time, 1),
            reason=health.reasons[0].splitlines()[0] if health.reasons else "",
            reasons=list(health.reasons),
        ))
    return rows


def list_text(rows: list[TopologyRow]) -> str:
    if not rows:
        return "no topology is running"
    headers = ["name", "status", "cluster", "containers", "instances", "run_id", "uptime_secs", "reason"]
    return format_table(headers, [[row[h] for h in headers] for row in rows],
                        right={"containers", "instances", "uptime_secs"})


def processes(state: StateManager, name: str, containers: Optional[Collection[int]] = None) -> list[ProcessRow]:
    """The topology's supervisor, each container's executor and every process it runs, as its record says
    (``containers``: only those containers', the supervisor with container 0's)."""
    plan = state.get(Kind.PACKING_PLAN, name)
    physical = state.get(Kind.PHYSICAL_PLAN, name)
    location = state.get(Kind.SCHEDULER, name)
    leader = state.get(Kind.TMASTER, name)
    ports = {(s.container, "stmgr"): s.data_port for s in physical.stmgrs} if physical is not None else {}
    index = {i.id.task_id: i.id for c in plan.containers for i in c.instances}
    rows = []
    if location is not None and location.supervisor_pid and (containers is None or 0 in containers):
        rows.append(ProcessRow(container=None, process="supervisor", host=location.host, port=None,
                               pid=location.supervisor_pid, state="up", restarts=0))
    records = state.container_records(name) if containers is None else [
        r for r in (state.get(Kind.CONTAINER, member(name, c)) for c in sorted(containers)) if r is not None]
    for record in records:
        executor = f"executor (YARN {record.yarn_container})" if record.yarn_container else "executor"
        rows.append(ProcessRow(container=record.container, process=executor, host=record.host, port=None,
                               pid=record.executor_pid, state="up", restarts=0))
        for p in record.processes:
            what = p.name
            runs = [index[t] for t, _ in process_tasks(p.name) if t in index]
            if len(runs) > 1:
                what = "chain " + " -> ".join(f"{i.component}[{i.component_index}] task {i.task_id}" for i in runs)
            elif runs:
                what = f"instance {runs[0].component}[{runs[0].component_index}] task {runs[0].task_id}"
            port = ports.get((record.container, p.name))
            if leader is not None and p.pid == leader.pid:
                what, port = f"{p.name} (leader)", leader.control_port
            rows.append(ProcessRow(container=record.container, process=what, host=record.host, port=port,
                                   pid=p.pid or None, restarts=p.restarts,
                                   state=process_state(p)))
    return rows


def show_data(state: StateManager, name: str, errors: bool = True, every_process: bool = True) -> TopologyView:
    """``squall show``'s data; ``errors``: ask the topology master for the errors raised in user code;
    without ``every_process``, ``processes`` is empty (a page that shows no process of 20,000)."""
    execution = manager.running(state, name)
    health = topology_health(state, name, execution)
    physical = state.get(Kind.PHYSICAL_PLAN, name)
    return TopologyView(
        name=name,
        status=health.status,
        reasons=list(health.reasons),
        desired_status=STATUS_NAMES[execution.status],
        confirmed_status=STATUS_NAMES[physical.status] if physical else None,
        run_dir=execution.run_dir,
        cluster=execution.cluster,
        scheduler=launcher.make_scheduler(execution.cluster, state).details(execution),
        packing_plan=plan_to_json(name, state.get(Kind.PACKING_PLAN, name)),
        chains=[list(chain) for chain in chains(state.get(Kind.TOPOLOGY, name))],
        files=shipped_files.shown(state.get(Kind.FILES, name)),
        processes=processes(state, name) if every_process else [],
        errors=user_errors(state, name) if errors else None,
        debug=debug_view(state, name),
    )


def user_errors(state: StateManager, name: str) -> Optional[list[UserError]]:
    """The last errors raised in the topology's user code (each task's, oldest first), as its topology master
    keeps them; None when the master cannot be asked. Through the runtime's client, as ``squall metrics``."""
    try:
        metrics = query_metrics(state, name, timeout=2.0)
    except TMasterUnreachable:
        return None
    found = [UserError(component=m["component"], task=task, **e) for task, m in metrics["tasks"].items()
             for e in m["errors"]]
    return sorted(found, key=lambda e: e["time"])


def show_text(data: TopologyView) -> str:
    """``squall show``'s text: status and reasons, the scheduler's details, the packing plan, the processes
    and the newest errors in user code."""
    lines = [f"topology {data['name']!r}: {data['status']}  (run folder {data['run_dir']})"]
    lines += ["  " + reason.replace("\n", "\n    ") for reason in data["reasons"]]
    lines += [f"  {label}: {value}" for label, value in data["scheduler"].items()]
    if data["chains"]:
        lines.append("  chains (one process per task of each): " + "; ".join(" -> ".join(c) for c in data["chains"]))
    if data["files"]:
        lines.append("  shipped files: " + "; ".join(f"{f['alias']} version {f['version']} ({f['name']}, "
                                                     f"{f['size']} bytes)" for f in data["files"]))
    plan = data["packing_plan"]
    lines.append(f"\npacking plan ({plan['algorithm']}, {plan['granularity']} granularity)")
    rows = []
    for c in plan["containers"]:
        counts: dict[str, int] = {}
        for i in c["instances"]:
            counts[i["component"]] = counts.get(i["component"], 0) + 1
        r = c["resources"]
        rows.append((c["id"], r["cpu"], r["ram_mb"], r["disk_mb"], ", ".join(f"{k} x{v}" for k, v in counts.items())))
    lines.append(format_table(["container", "cpu", "ram_mb", "disk_mb", "instances"], rows,
                              right={"container", "cpu", "ram_mb", "disk_mb"}))
    lines.append("\nprocesses")
    lines.append(format_table(
        ["container", "process", "host", "port", "pid", "state", "restarts"],
        [["-" if p["container"] is None else p["container"], p["process"], p["host"], p["port"] or "-",
          p["pid"] or "-", p["state"], p["restarts"]] for p in data["processes"]],
        right={"container", "pid", "restarts"},
    ))
    if data["debug"]["levels"] or data["debug"]["sampling"]:
        lines.append("\ndebugging (squall set-log-level, squall sample)")
        lines += ["  " + line for line in debug_lines(data["debug"])]
    errors = data["errors"]
    if errors is None:
        lines.append("\nerrors in user code: unknown (its topology master did not answer)")
    elif errors:
        lines.append(f"\nerrors in user code (the last {min(len(errors), SHOWN_ERRORS)} of {len(errors)} kept)")
        lines.append(format_table(["time", "component", "task", "where", "error"], [
            [time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["time"])), e["component"], e["task"], e["where"],
             e["error"].splitlines()[-1]] for e in errors[-SHOWN_ERRORS:]], right={"task"}))
    return "\n".join(lines)
