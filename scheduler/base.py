"""The scheduler interface: obtain containers for a packing plan and run executors in them."""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any, Optional

from squall.errors import SquallError


class SchedulerError(SquallError):
    """A scheduler could not start, stop or change what was asked."""


class Scheduler(ABC):
    """One per cluster kind (local processes, YARN).

    Every method receives the topology's records as they are in the state
    manager; it returns once the change is made (not once the topology is up:
    the launcher waits for the physical plan). The scheduler keeps its own
    record (``schedulers/<topology>``: what it launched, where) current, and
    restarts containers that die under the restart policy.

    Every container runs the executor with the one command of the runtime
    contract: ``python -m squall.runtime.executor --topology T --container N
    --state FILE``, where FILE is the run's state address (``state_file``).
    """

    @abstractmethod
    def on_schedule(self, execution_state: Any, packing_plan: Any) -> None:
        """Start container 0 and one container per ContainerPlan."""

    @abstractmethod
    def on_kill(self, execution_state: Any) -> None:
        """Stop every container of the topology, leaving nothing running."""

    @abstractmethod
    def on_restart(self, execution_state: Any, container: Optional[int]) -> None:
        """Restart one container (or all when ``container`` is None)."""

    @abstractmethod
    def on_update(self, execution_state: Any, current: Any, proposed: Any) -> None:
        """Start containers ``proposed`` adds, stop those it removes (the
        packing plan in the state manager already is ``proposed``)."""


def state_file(execution_state: Any) -> str:
    """The run's state address file (``squall.state.StateAddress``), passed to every executor."""
    return os.path.join(execution_state.run_dir, "state.json")


def container_ids(packing_plan: Any) -> list:
    """Container 0 (topology master) plus every container of the plan."""
    return [0] + sorted(c.id for c in packing_plan.containers)
