"""Carrying out a decision's action through the scheduler, as ``squall update`` and ``squall restart`` do.

- ``scale`` / ``resize`` / ``split_chain``: the scheduler's update (``scheduler/manager.py``): repack,
  write the plans, start and stop only the difference, wait until every instance is connected;
- ``restart_task`` / ``move_container``: the scheduler's restart of the task's (or the) container: a new
  executor and processes (on YARN, a new YARN container, so possibly another node);
- ``set_pending``: the scheduler's live ``topology.max.spout.pending`` (the execution state's, handed to every
  spout task with the physical plan).

A refusal is a ``SquallError`` whose message says why; the manager records it as the decision's reason.
"""
from __future__ import annotations

from squall.chaining import CHAINING_KEY
from squall.conf import Config
from squall.errors import SquallError
from squall.health.model import Action
from squall.idl import schema
from squall.scheduler import manager
from squall.scheduler.changes import TopologyUpdate
from squall.state import Kind, StateManager

# Seconds an action may take until every instance of the new plan is connected.
ACTION_TIMEOUT_SECS = 120.0


def update_of(action: Action) -> TopologyUpdate:
    """The scheduler update an action of kind scale, resize or split_chain is."""
    if action.component is None:
        raise SquallError(f"a {action.kind} action names no component")
    sizes: dict = {}
    if action.cpu is not None:
        sizes["squall.component.cpu"] = float(action.cpu)
    if action.ram_mb is not None:
        sizes["squall.component.ram.mb"] = int(round(action.ram_mb))
    resized = {action.component: sizes} if sizes else {}
    if action.kind == "scale":  # right-sized in the same update when it carries cpu / ram
        if action.parallelism is None:
            raise SquallError(f"scale of {action.component!r} names no parallelism")
        return TopologyUpdate(parallelism={action.component: action.parallelism}, component_config=resized)
    if action.kind == "resize":
        return TopologyUpdate(component_config=resized)
    if action.kind == "split_chain":
        return TopologyUpdate(component_config={action.component: {CHAINING_KEY: "head"}})
    raise SquallError(f"action {action.kind!r} is not an update")


def container_of(packing: schema.PackingPlan, task_id: int) -> int:
    """The container running ``task_id`` in ``packing``."""
    for c in packing.containers:
        if any(i.id.task_id == task_id for i in c.instances):
            return c.id
    raise SquallError(f"task {task_id} is in no container of packing plan {packing.id}")


def carry_out(state: StateManager, topology: str, action: Action, base: Config,
              timeout: float = ACTION_TIMEOUT_SECS) -> None:
    """Apply ``action`` to the running topology; a ``SquallError`` when the scheduler refuses it."""
    if action.kind in ("scale", "resize", "split_chain"):
        manager.update(state, topology, update_of(action), base, timeout)
    elif action.kind == "restart_task":
        if action.task_id is None:
            raise SquallError("restart_task names no task")
        manager.restart(state, topology, container_of(state.get(Kind.PACKING_PLAN, topology), action.task_id),
                        timeout)
    elif action.kind == "move_container":
        if action.container is None:
            raise SquallError("move_container names no container")
        manager.restart(state, topology, action.container, timeout)
    elif action.kind == "set_pending":
        if action.pending is None:
            raise SquallError("set_pending names no value")
        manager.set_max_spout_pending(state, topology, action.pending)
    else:
        raise SquallError(f"action {action.kind!r} changes nothing to carry out")
