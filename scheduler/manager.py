"""The runtime manager: kill, activate, deactivate, restart and update a running topology."""
from __future__ import annotations

import dataclasses
import logging
import time
from typing import Optional, Sequence

from squall.conf import Config
from squall.errors import SquallError
from squall.idl import schema
from squall.logical import topology_config
from squall.packing import diff_plans
from squall.scheduler import shipped_files
from squall.scheduler.changes import PlannedUpdate, TopologyUpdate, plan_update
from squall.scheduler.launcher import make_scheduler
from squall.scheduler.shipped_files import LocalFile
from squall.state import AlreadyExists, Kind, StateManager
from squall.state.shipped_files import delete_updates
from squall.state.status import topology_health
from squall.state.storage import open_storage
from squall.stateful import checkpointing

log = logging.getLogger(__name__)


class NotRunning(SquallError):
    """No topology of that name is running."""


def running(state: StateManager, name: str) -> schema.ExecutionState:
    """The topology's execution state, or NotRunning naming the running ones."""
    execution = state.get(Kind.EXECUTION_STATE, name)
    if execution is None:
        names = state.names(Kind.EXECUTION_STATE)
        known = f"running: {', '.join(names)}" if names else "none is running"
        raise NotRunning(f"no topology named {name!r} is running ({known})")
    return execution


class _Locked:
    """Hold the topology's lock so that two commands do not change it at once."""

    def __init__(self, state: StateManager, name: str):
        self.state, self.name = state, name

    def __enter__(self) -> None:
        try:
            self.state.create(Kind.LOCK, self.name, b"runtime-manager")
        except AlreadyExists:
            raise SquallError(f"topology {self.name!r} is being changed by another command; try again") from None

    def __exit__(self, *exc: object) -> None:
        self.state.delete(Kind.LOCK, self.name)


def kill(state: StateManager, name: str) -> schema.ExecutionState:
    """Stop every process of the topology and remove it from the state manager.

    Its run folder (logs, metrics) stays on disk until ``squall clean``.
    """
    execution = running(state, name)
    with _Locked(state, name):
        make_scheduler(execution.cluster, state).on_kill(execution)
        _delete_checkpoints(state, name, execution)
        _delete_shipped_updates(state, name, execution)
        state.delete_topology(name)
    return execution


def _delete_checkpoints(state: StateManager, name: str, execution: schema.ExecutionState) -> None:
    """A topology that checkpoints leaves nothing in its checkpoint storage (on HDFS it would stay for ever)."""
    topology = state.get(Kind.TOPOLOGY, name)
    if topology is None:
        return
    config = topology_config(topology)
    if not checkpointing(topology, config):
        return
    try:
        open_storage(config["squall.state.storage"], execution.run_dir).delete(name)
    except Exception as e:  # storage unreachable: the topology is still killed
        log.warning("could not delete the checkpoints of %r: %s", name, e)


def _delete_shipped_updates(state: StateManager, name: str, execution: schema.ExecutionState) -> None:
    """Versions ``update --files`` stored in a cluster's shared storage go with the topology."""
    topology = state.get(Kind.TOPOLOGY, name)
    if topology is None or state.get(Kind.FILES, name) is None:
        return
    try:
        delete_updates(execution, topology_config(topology)["squall.state.storage"])
    except Exception as e:  # storage unreachable: the topology is still killed
        log.warning("could not delete the shipped files of %r: %s", name, e)


def update_files(state: StateManager, name: str, files: Sequence[LocalFile],
                 dry_run: bool = False) -> list[schema.ShippedFile]:
    """Ship new versions of shipped files to a running topology (``shipped_files.update``), under its lock."""
    execution = running(state, name)
    config = topology_config(state.get(Kind.TOPOLOGY, name))
    with _Locked(state, name):
        return shipped_files.update(state, execution, files, config, dry_run)


def set_status(state: StateManager, name: str, status: int, timeout: float = 15.0) -> bool:
    """Activate or deactivate; True once the topology master confirms it."""
    execution = running(state, name)
    with _Locked(state, name):
        execution.status = status
        state.put(Kind.EXECUTION_STATE, name, execution)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        physical = state.get(Kind.PHYSICAL_PLAN, name)
        if physical is not None and physical.status == status:
            return True
        time.sleep(0.1)
    return False


def set_max_spout_pending(state: StateManager, name: str, pending: int) -> None:
    """``topology.max.spout.pending`` of every reliable spout task, while the topology runs: the topology
    master hands it out with the physical plan (a spout task started later gets it too)."""
    if isinstance(pending, bool) or not isinstance(pending, int) or pending < 1:
        raise SquallError(f"topology.max.spout.pending {pending!r}: must be a positive integer")
    execution = running(state, name)
    with _Locked(state, name):
        execution.max_spout_pending = pending
        state.put(Kind.EXECUTION_STATE, name, execution)


def restart(state: StateManager, name: str, container: Optional[int] = None, timeout: float = 60.0) -> None:
    """Replace the executor (and so every process) of one container or all; wait until it is up again."""
    execution = running(state, name)
    with _Locked(state, name):
        make_scheduler(execution.cluster, state).on_restart(execution, container)
    wait_up(state, name, timeout, "the restart")


def wait_up(state: StateManager, name: str, timeout: float, after: str) -> None:
    """Wait until the topology is RUNNING or PAUSED: its current packing plan's physical plan, with every
    instance connected to its stream manager; an error naming what it still waits for after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        health = topology_health(state, name)
        if health.up:
            return
        if time.monotonic() > deadline:
            raise SquallError(f"topology {name!r} is {health.status} {timeout:g}s after {after}: "
                              f"{'; '.join(health.reasons)}")
        time.sleep(0.2)


def plan(state: StateManager, name: str, change: TopologyUpdate, base: Config) -> PlannedUpdate:
    """The new plan ``change`` gives the running topology (as its scheduler can carry it out), and its
    difference; nothing is written."""
    execution = running(state, name)
    return _planned(state, name, execution, change, base)


def _planned(state: StateManager, name: str, execution: schema.ExecutionState, change: TopologyUpdate, base: Config) -> PlannedUpdate:
    planned = plan_update(name, state.get(Kind.TOPOLOGY, name), state.get(Kind.PACKING_PLAN, name), change, base)
    fitted = make_scheduler(execution.cluster, state).fit_update(execution, planned.topology, planned.current,
                                                                 planned.proposed, base)
    if fitted is planned.proposed:
        return planned
    return dataclasses.replace(planned, proposed=fitted, diff=diff_plans(planned.current, fitted))


def update(state: StateManager, name: str, change: TopologyUpdate, base: Config,
           timeout: float = 60.0) -> PlannedUpdate:
    """Scale components and resize their instances: repack, write the new plans, start and stop only
    the difference (on YARN, new containers are asked for), and wait until every instance of the new
    plan is connected. Returns the ``PlannedUpdate``."""
    execution = running(state, name)
    with _Locked(state, name):
        planned = _planned(state, name, execution, change, base)
        scheduler = make_scheduler(execution.cluster, state)
        scheduler.check_update(execution, planned.current, planned.proposed)
        state.put(Kind.TOPOLOGY, name, planned.topology)
        state.put(Kind.PACKING_PLAN, name, planned.proposed)
        scheduler.on_update(execution, planned.current, planned.proposed)
    wait_up(state, name, timeout, "the update")
    return planned
