"""The runtime manager: kill, activate, deactivate, restart and update a running topology."""
from __future__ import annotations

import time
from typing import Any, Mapping, Optional

from squall.conf import Config
from squall.errors import SquallError
from squall.logical import find_component
from squall.packing import repack, with_parallelism
from squall.scheduler.launcher import make_scheduler, registered_instances
from squall.state import AlreadyExists, Kind, StateManager
from squall.state.status import topology_health


class NotRunning(SquallError):
    """No topology of that name is running."""


def running(state: StateManager, name: str) -> Any:
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

    def __exit__(self, *exc: Any) -> None:
        self.state.delete(Kind.LOCK, self.name)


def kill(state: StateManager, name: str) -> Any:
    """Stop every process of the topology and remove it from the state manager.

    Its run folder (logs, metrics) stays on disk until ``squall clean``.
    """
    execution = running(state, name)
    with _Locked(state, name):
        make_scheduler(execution.cluster, state).on_kill(execution)
        state.delete_topology(name)
    return execution


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


def restart(state: StateManager, name: str, container: Optional[int] = None, timeout: float = 60.0) -> None:
    """Replace the executor (and so every process) of one container or all; wait until it is up again."""
    execution = running(state, name)
    with _Locked(state, name):
        make_scheduler(execution.cluster, state).on_restart(execution, container)
    deadline = time.monotonic() + timeout
    while not topology_health(state, name).up:
        if time.monotonic() > deadline:
            health = topology_health(state, name)
            raise SquallError(f"topology {name!r} is {health.status} {timeout:g}s after the restart: "
                              f"{'; '.join(health.reasons)}")
        time.sleep(0.2)


def update(
    state: StateManager, name: str, parallelism: Mapping[str, int], base: Config, timeout: float = 60.0
) -> Any:
    """Scale components: repack, write the new plan, start/stop only the difference.

    Returns the repack diff (added, removed, moved instances) once the new
    physical plan lists every instance.
    """
    execution = running(state, name)
    topology = state.get(Kind.TOPOLOGY, name)
    for component, par in parallelism.items():
        try:
            find_component(topology, component)
        except KeyError as e:
            raise SquallError(str(e.args[0])) from None
        if isinstance(par, bool) or not isinstance(par, int) or par < 1:
            raise SquallError(f"--component-parallelism {component}={par}: must be a positive integer")
    with _Locked(state, name):
        current = state.get(Kind.PACKING_PLAN, name)
        proposed, diff = repack(topology, current, dict(parallelism), base)
        scheduler = make_scheduler(execution.cluster, state)
        scheduler.check_update(execution, current, proposed)
        state.put(Kind.TOPOLOGY, name, with_parallelism(topology, parallelism))
        state.put(Kind.PACKING_PLAN, name, proposed)
        scheduler.on_update(execution, current, proposed)
    total = sum(len(c.instances) for c in proposed.containers)
    deadline = time.monotonic() + timeout
    while registered_instances(state, name, proposed) < total:
        if time.monotonic() > deadline:
            raise SquallError(f"topology {name!r} did not take the new plan within {timeout:g}s")
        time.sleep(0.2)
    return diff
