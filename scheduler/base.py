"""The scheduler interface: obtain containers for a packing plan and run executors in them."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Optional

from squall.errors import SquallError


class SchedulerError(SquallError):
    """A scheduler could not start, stop or change what was asked."""


class Scheduler(ABC):
    """One per cluster kind (local processes, YARN).

    Every method receives the topology's records as they are in the state
    manager; it returns once the change is made (not once the topology is up:
    the launcher waits for the physical plan).
    """

    @abstractmethod
    def on_schedule(self, execution_state: Any, packing_plan: Any) -> Any:
        """Start container 0 and one container per ContainerPlan; return the
        ``SchedulerLocation`` to record."""

    @abstractmethod
    def on_kill(self, execution_state: Any, location: Any) -> None:
        """Stop every container of the topology, leaving nothing running."""

    @abstractmethod
    def on_restart(self, execution_state: Any, location: Any, container: Optional[int]) -> Any:
        """Restart one container (or all when ``container`` is None); return
        the new ``SchedulerLocation``."""

    @abstractmethod
    def on_update(self, execution_state: Any, location: Any, current: Any, proposed: Any) -> Any:
        """Start containers ``proposed`` adds, stop those it removes (the
        packing plan in the state manager already is ``proposed``); return the
        new ``SchedulerLocation``."""


def container_ids(packing_plan: Any) -> list:
    """Container 0 (topology master) plus every container of the plan."""
    return [0] + sorted(c.id for c in packing_plan.containers)
