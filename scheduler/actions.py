"""The control commands as one function each, for every front end: ``squall`` and the UI's REST API.

Each checks and acts through ``manager`` and returns the line the command
prints; a user error is a ``SquallError`` with the line the command prints
on stderr. So the CLI and the UI refuse and report in the same words.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from squall.conf import Config
from squall.errors import SquallError
from squall.idl import schema
from squall.scheduler import changes, manager
from squall.state import StateManager


def set_status(state: StateManager, name: str, status: int) -> str:
    """Activate (RUNNING) or deactivate (PAUSED); the line once the topology master confirms it."""
    word = "active" if status == schema.TopologyStatus.RUNNING else "deactivated"
    if not manager.set_status(state, name, status):
        raise SquallError(f"topology {name!r} did not confirm it is {word} (is its topology master up?)")
    return f"topology {name!r} is {word}"


def activate(state: StateManager, name: str) -> str:
    return set_status(state, name, schema.TopologyStatus.RUNNING)


def deactivate(state: StateManager, name: str) -> str:
    return set_status(state, name, schema.TopologyStatus.PAUSED)


def kill(state: StateManager, name: str) -> str:
    execution = manager.kill(state, name)
    return f"killed topology {name!r}; its logs and metrics stay in {execution.run_dir}"


def restart(state: StateManager, name: str, container: Optional[int] = None) -> str:
    manager.restart(state, name, container)
    what = "all containers" if container is None else f"container {container}"
    return f"restarted {what} of topology {name!r}"


def parallelism_of(values: Mapping[str, object]) -> dict:
    """``{component: n}`` from a request, checked as ``--component-parallelism COMPONENT=N`` is."""
    return changes.parse_assignments([f"{c}={n}" for c, n in values.items()], "--component-parallelism", int)


@dataclass(frozen=True)
class UpdateOutcome:
    planned: changes.PlannedUpdate  # after the update, the one applied
    applied: bool
    line: str  # the command's last line


def update(state: StateManager, name: str, change: changes.TopologyUpdate, base: Config,
           planned: changes.PlannedUpdate, dry_run: bool) -> UpdateOutcome:
    """Apply ``planned`` (``manager.plan`` of ``change``, shown first), unless ``dry_run`` or nothing changes."""
    applied = planned.changed and not dry_run
    if applied:
        planned = manager.update(state, name, change, base)
    if dry_run:
        line = "dry run: nothing applied"
    elif applied:
        line = f"updated topology {name!r}: every instance of plan {planned.proposed.id} is running"
    else:
        line = f"topology {name!r} already runs so: nothing to change"
    return UpdateOutcome(planned, applied, line)
