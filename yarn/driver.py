"""Squall's application driver: the script of a topology's Skein application master.

``python -m squall.yarn.driver --topology T --state FILE``

Skein relaunches every failed container (``max_restarts: -1``); this process
applies Squall's restart policy to them, as the local supervisor does to its
executors. It follows the executors' container records: a container in the
plan whose record disappears or is taken over by another executor (host and
pid: a relaunched container claims the id again, maybe before this process
saw the gap) has exited once. One exit more than
``squall.restart.max`` within ``squall.restart.window.secs`` fails the
topology: the reason goes into the scheduler record (``squall show`` gives
it) and the application is shut down FAILED with it through Skein. When the
topology's state is gone (``squall kill``) it exits cleanly, and Skein ends
the application, stopping any container left.

Skein ends the application whenever this script exits: cleanly -> SUCCEEDED,
otherwise FAILED. So if the shutdown call cannot reach the master, exiting
non-zero still fails the application (with Skein's generic diagnostics).

``ContainerWatch`` holds the rules (the one supervision model,
``squall.supervision``); ``run`` is the loop.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Collection, Mapping, Optional

from squall.scheduler.daemon import topology_daemon
from squall.state import StateManager
from squall.supervision import RestartPolicy, Supervision

log = logging.getLogger("squall.yarn.driver")

POLL_SECS = 1.0
EXIT_FAILED = 3


class ContainerWatch:
    """Container exits against the restart policy, from the container records' holders over time: the one
    supervision model (``squall.supervision.Supervision``) with YARN starting the processes; a
    container's process is its holder, (host, executor pid)."""

    def __init__(self, policy: RestartPolicy):
        self.policy = policy
        self.supervision: Supervision[tuple[str, int]] = Supervision(policy, grace=0.0)

    def observe(self, holders: Mapping[int, tuple[str, int]], in_plan: Collection[int], now: float) -> Optional[str]:
        """The records' holders are ``holders`` now; the reason a container failed the topology, if one did."""
        failure = None
        for unit in self.supervision.want([str(c) for c in sorted(in_plan)], now):
            self.supervision.exited(unit, None, now)  # left the plan: its exit does not count
        for name, unit in sorted(self.supervision.units.items()):
            holder = holders.get(int(name))
            if unit.process is not None and unit.process != holder:
                self.supervision.exited(unit, None, now)
                if unit.failure is not None:
                    unit.failure = (f"container {name} exited {unit.budget.restarts(now) + 1} times within "
                                    f"{self.policy.window:g}s, past its restart budget ({self.policy.describe()})")
                    failure = failure or unit.failure
                else:
                    log.warning("container %s exited; YARN relaunches it (%d restarts within %gs)", name,
                                unit.budget.restarts(now), self.policy.window)
            if holder is not None and unit.process is None:
                self.supervision.started(unit, holder, now)
        return failure

    def restarts(self, container: int, now: float) -> int:
        """Exits of ``container`` within the window ending at ``now``."""
        unit = self.supervision.units.get(str(container))
        return unit.budget.restarts(now) if unit is not None else 0


def shutdown_failed(reason: str) -> None:
    """End the application FAILED with ``reason`` through Skein (logged if the master cannot be reached)."""
    try:
        import skein

        with skein.ApplicationClient.from_current() as app:
            app.shutdown("FAILED", diagnostics=reason)
    except Exception as e:  # any failure here falls back to the exit status, which fails the application too
        log.error("could not shut the application down through Skein (%s); exiting with %d instead", e, EXIT_FAILED)


def run(state: StateManager, name: str, policy: RestartPolicy) -> int:
    from squall.state import Kind, StateError

    watch = ContainerWatch(policy)
    while True:
        try:
            if state.get(Kind.EXECUTION_STATE, name) is None:
                log.info("topology %r has no state any more (killed): ending the application", name)
                return 0
            plan = state.get(Kind.PACKING_PLAN, name)
            in_plan = {0} | ({c.id for c in plan.containers} if plan is not None else set())
            holders = {r.container: (r.host, r.executor_pid) for r in state.container_records(name)}
        except StateError as e:
            log.warning("cannot read the state: %s", e)
            time.sleep(POLL_SECS)
            continue
        failure = watch.observe(holders, in_plan, time.monotonic())
        if failure is not None:
            log.error("topology %r failed: %s", name, failure)
            location = state.get(Kind.SCHEDULER, name)
            if location is not None:
                location.failure = failure
                state.put(Kind.SCHEDULER, name, location)
            shutdown_failed(f"squall: topology {name}: {failure}")
            return EXIT_FAILED
        time.sleep(POLL_SECS)


def main(argv: Optional[list[str]] = None) -> int:
    return topology_daemon(argv, "python -m squall.yarn.driver",
                           "Squall's application driver in a topology's Skein application master.", "driver", _run)


def _run(args: argparse.Namespace, state: StateManager) -> int:
    from squall.logical import topology_config
    from squall.state import Kind

    topology = state.get(Kind.TOPOLOGY, args.topology)
    if topology is None:
        log.info("topology %r has no state (killed before its application started)", args.topology)
        return 0
    return run(state, args.topology, RestartPolicy.from_config(topology_config(topology)))


if __name__ == "__main__":
    sys.exit(main())
