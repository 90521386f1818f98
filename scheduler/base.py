"""The scheduler interface: obtain containers for a packing plan and run executors in them."""
from __future__ import annotations

import os
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Mapping, Optional

from squall.errors import SquallError
from squall.idl import schema
from squall.state import StateManager


class SchedulerError(SquallError):
    """A scheduler could not start, stop or change what was asked."""


@dataclass(frozen=True)
class LaunchOptions:
    """How ``submit`` launches, beyond the configuration."""

    spec_out: Optional[str] = None  # write the cluster's launch description here; an operator launches it
    dry_run: bool = False  # only describe the launch (``describe``): nothing is written or reached


class Scheduler(ABC):
    """One per cluster kind (local processes, YARN).

    Every method receives the topology's records as they are in the state
    manager; it returns once the change is made (not once the topology is up:
    the launcher waits for the physical plan). The scheduler keeps its own
    record (``schedulers/<topology>``: what it launched, where) current, and
    restarts containers that die under the restart policy.

    Every container runs the executor with the one command of the runtime
    contract, built by ``squall.processargs.ProcessArgs`` (never by hand):
    ``python -m squall.runtime.executor --topology T --container N --state
    FILE``, where FILE is the run's state address (``state_file``).

    Besides the four operations, a scheduler may refuse early (``check``,
    ``check_update``: before anything is written), describe what it would
    launch (``describe``: ``submit --dry-run``), prepare a launch for an
    operator instead of launching (``LaunchOptions.spec_out``; then
    ``launched`` is False and submit does not wait) and report where a run
    is (``details``).
    """

    @classmethod
    def create(cls, state: StateManager, options: LaunchOptions = LaunchOptions()) -> "Scheduler":
        if options != LaunchOptions():
            raise SchedulerError(f"--dry-run and --spec-out: the {cls.__name__} has no launch description")
        return cls(state)

    @property
    def launched(self) -> bool:
        """False when ``on_schedule`` only prepares a launch that an operator carries out."""
        return True

    def interpreter(self) -> str:
        """The Python executors start processes with; empty: each executor's own."""
        return sys.executable

    def check(self, topology: schema.Topology, plan: schema.PackingPlan, config: Mapping[str, object]) -> None:
        """Refuse, before anything is written, what this scheduler cannot launch."""

    def check_update(self, execution_state: schema.ExecutionState, current: schema.PackingPlan, proposed: schema.PackingPlan) -> None:
        """Refuse, before the new plan is written, an update this scheduler cannot carry out."""

    def fit_update(self, execution_state: schema.ExecutionState, topology: schema.Topology, current: schema.PackingPlan, proposed: schema.PackingPlan,
                   base: schema.PackingPlan) -> schema.PackingPlan:
        """``proposed`` as this scheduler can carry it out (on YARN a container that outgrew its YARN
        container moves whole to a new one): the plan shown and applied."""
        return proposed

    def describe(self, topology: schema.Topology, plan: schema.PackingPlan, config: Mapping[str, object], run_dir: str) -> str:
        """What ``on_schedule`` would launch, as text (``submit --dry-run``); writes nothing."""
        raise SchedulerError(f"--dry-run: the {type(self).__name__} has no launch description")

    def details(self, execution_state: schema.ExecutionState) -> dict[str, str]:
        """Where the run is, for ``show`` and ``logs`` (label -> value)."""
        return {}

    def headroom(self, execution_state: schema.ExecutionState) -> Optional[tuple[int, int]]:
        """``(memory MB, vcores)`` the cluster can still grant this topology now (on YARN, its queue's
        headroom in the ResourceManager's view); None when this scheduler sets no bound or cannot say."""
        return None

    def cluster(self, config: Mapping[str, object]) -> Optional[dict[str, object]]:
        """The cluster this scheduler runs topologies on, as data (the UI's cluster page); None when it
        has none to describe, or nothing in ``config`` says where it is."""
        return None

    @abstractmethod
    def on_schedule(self, execution_state: schema.ExecutionState, packing_plan: schema.PackingPlan) -> None:
        """Start container 0 and one container per ContainerPlan."""

    @abstractmethod
    def on_kill(self, execution_state: schema.ExecutionState) -> None:
        """Stop every container of the topology, leaving nothing running."""

    @abstractmethod
    def on_restart(self, execution_state: schema.ExecutionState, container: Optional[int]) -> None:
        """Restart one container (or all when ``container`` is None)."""

    @abstractmethod
    def on_update(self, execution_state: schema.ExecutionState, current: schema.PackingPlan, proposed: schema.PackingPlan) -> None:
        """Start containers ``proposed`` adds, stop those it removes (the
        packing plan in the state manager already is ``proposed``)."""


def state_file(execution_state: schema.ExecutionState) -> str:
    """The run's state address file (``squall.state.StateAddress``), passed to every executor."""
    return os.path.join(execution_state.run_dir, "state.json")


def container_ids(packing_plan: schema.PackingPlan) -> list[int]:
    """Container 0 (topology master) plus every container of the plan."""
    return [0] + sorted(c.id for c in packing_plan.containers)
