"""A topology's status, read from its records: never RUNNING while a process of its plan is dead.

| status | when |
| --- | --- |
| SUBMITTED | no physical plan yet: its containers are starting |
| RUNNING | every container's executor and every process of the plan is alive, a topology master leads, the physical plan is the packing plan's, and it lists every instance and stream manager as the process alive now (so each is connected and routable: a restarted one is in it only once it has rejoined) |
| PAUSED | as RUNNING, deactivated |
| DEGRADED | something is restarting or changing: a dead process or executor waiting for its restart, no leading topology master (failover), a physical plan not yet rebuilt |
| FAILED | a process or container died past its restart budget (the reason holds the end of its log) |

Liveness comes from the executors' ephemeral container records. A record
outlives its process by up to a ZooKeeper session timeout, so on this host
the pids are checked as well.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Optional

import psutil

from squall.idl import schema
from squall.state.base import Kind, StateManager

SUBMITTED, RUNNING, PAUSED, DEGRADED, FAILED = "SUBMITTED", "RUNNING", "PAUSED", "DEGRADED", "FAILED"


@dataclass(frozen=True)
class TopologyHealth:
    status: str
    reasons: tuple = field(default_factory=tuple)  # why it is not RUNNING/PAUSED, one item each
    crashed: tuple = field(default_factory=tuple)  # (container, ProcessStatus) of processes that exited

    @property
    def up(self) -> bool:
        return self.status in (RUNNING, PAUSED)


def process_state(p: "schema.ProcessStatus") -> str:
    """What ``show`` and the UI say of a process: ``failed`` (past its restart budget), ``restarting``
    (none runs now), ``starting`` (an instance process not through ``initialize`` yet) or ``up``."""
    if p.failure:
        return "failed"
    if not p.pid:
        return "restarting"
    return "starting" if p.initialized is False else "up"


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def unconnected(pplan: "schema.PhysicalPlan", records: dict) -> list:
    """What the physical plan lists with a pid no live process of its container has: a stream manager
    or instance that restarted and has not rejoined yet (a restarted instance is listed, with its new
    pid, once it has connected to its stream manager; a restarted stream manager once it has
    registered again; the tasks of a chain share their process's pid)."""
    live: dict = {}
    stmgr_pid: dict = {}
    for cid, record in records.items():
        live[cid] = {p.pid for p in record.processes if p.pid}
        stmgr_pid[cid] = next((p.pid for p in record.processes if p.name == "stmgr"), 0)
    out = []
    for s in pplan.stmgrs:
        pid = stmgr_pid.get(s.container)
        if pid and pid != s.pid:
            out.append(f"container {s.container}: its stream manager (pid {pid}) has not registered yet")
    waiting = [i for i in pplan.instances if i.container in live and i.pid not in live[i.container]]
    for i in waiting[:3]:
        out.append(f"container {i.container}: instance {i.id.component} task {i.id.task_id} has not connected to "
                   "its stream manager yet")
    if len(waiting) > 3:
        out.append(f"{len(waiting) - 3} more instances have not connected to their stream manager yet")
    return out


def topology_health(state: StateManager, name: str, execution: Optional["schema.ExecutionState"] = None) -> TopologyHealth:
    """The status of running topology ``name`` (its execution state must exist)."""
    execution = execution or state.get(Kind.EXECUTION_STATE, name)
    plan = state.get(Kind.PACKING_PLAN, name)
    location = state.get(Kind.SCHEDULER, name)
    pplan = state.get(Kind.PHYSICAL_PLAN, name)
    leader = state.get(Kind.TMASTER, name)
    records = {record.container: record for record in state.container_records(name)}
    here = socket.gethostname()
    failures, problems, crashed = [], [], []
    if location is not None and location.failure:
        failures.append(location.failure)
    if location is not None and location.supervisor_pid and location.host == here \
            and not alive(location.supervisor_pid):
        problems.append(f"its supervisor (pid {location.supervisor_pid}) is gone: dead containers are not restarted")
    containers = [0] + sorted(c.id for c in plan.containers) if plan is not None else [0]
    for cid in containers:
        record = records.get(cid)
        if record is None or (record.host == here and not alive(record.executor_pid)):
            problems.append(f"container {cid}: its executor is not running")
            continue
        for p in record.processes:
            if p.crashes:
                crashed.append((cid, p))
            if p.failure:
                failures.append(p.failure)
            elif not p.pid or (record.host == here and not alive(p.pid)):
                problems.append(f"container {cid}: {p.name} is down, restarting "
                                f"({p.restarts} restarts within the window)")
    if leader is None:
        problems.append("no topology master leads (it is starting, or failing over)")
    if failures:
        status = FAILED
    elif pplan is None:
        status = SUBMITTED
    else:
        if plan is not None and pplan.packing_plan_id != plan.id:
            problems.append(f"the physical plan is not yet rebuilt for packing plan {plan.id}")
        elif leader is not None and pplan.tmaster != leader:
            problems.append("the new topology master is rebuilding the physical plan")
        else:
            problems += unconnected(pplan, records)
        if problems:
            status = DEGRADED
        else:
            status = PAUSED if execution.status == schema.TopologyStatus.PAUSED else RUNNING
    return TopologyHealth(status, tuple(failures + problems), tuple(crashed))
