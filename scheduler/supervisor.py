"""The local scheduler's supervisor: one process per topology that runs its
containers' executors and restarts the ones that die.

``python -m squall.scheduler.supervisor --topology T --state FILE``

It is to the local cluster what YARN is on a cluster (Heron's local
scheduler monitors its executors the same way). It starts one executor per
container (container 0 and every container of the packing plan), each in its
own process group, and:

- restarts an executor that dies under the restart policy
  (``squall.supervision``); one past its budget fails the topology: the
  reason, with the end of the executor's log, goes into the scheduler record;
- restarts at once, without counting it, an executor that exits cleanly while
  its container is in the plan (``squall restart`` sends it SIGTERM);
- follows the packing plan: starts the containers an update adds; the
  executors of removed containers retire by themselves, and are stopped after
  ``retire_wait`` if they have not;
- keeps ``schedulers/<topology>`` current (executor pids, its own pid);
- stops every executor and exits on SIGTERM, or when the topology's state is
  gone (kill).

``ContainerSupervisor`` holds the rules and takes the time as an argument;
``run`` is the loop.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import psutil

from squall.idl import schema
from squall.supervision import RestartBudget, RestartPolicy, log_tail

log = logging.getLogger("squall.scheduler.supervisor")

EXECUTOR_MODULE = "squall.runtime.executor"
POLL_SECS = 0.1


def executor_command(python: str, topology: str, container: int, state_file: str) -> list:
    """The one command line an executor is started with (the runtime contract)."""
    return [python, "-m", EXECUTOR_MODULE, "--topology", topology, "--container", str(container),
            "--state", state_file]


def container_log_dir(run_dir: str, container: int) -> str:
    return os.path.join(run_dir, "logs", f"container-{container}")


@dataclass
class _Container:
    id: int
    budget: RestartBudget
    popen: Optional[subprocess.Popen] = None
    next_start: float = 0.0
    retire_by: Optional[float] = None  # left the plan: stopped at this time if still running
    failure: Optional[str] = None


@dataclass
class ContainerSupervisor:
    """Which executors should run, and what to do when one exits."""

    policy: RestartPolicy
    start: Callable[[int], subprocess.Popen]
    log_file: Callable[[int], str]
    retire_wait: float = 60.0
    containers: dict = field(default_factory=dict)  # id -> _Container
    failure: Optional[str] = None

    def want(self, ids: list, now: float) -> bool:
        """The plan's containers are ``ids``: start new ones, retire removed ones; True if pids changed."""
        changed = False
        for cid in ids:
            c = self.containers.get(cid)
            if c is None:
                c = self.containers[cid] = _Container(cid, RestartBudget(self.policy))
            if c.retire_by is not None:
                c.retire_by = None  # back in the plan
            if c.popen is None and c.failure is None and now >= c.next_start:
                c.popen = self.start(cid)
                changed = True
        for cid, c in self.containers.items():
            if cid not in ids and c.retire_by is None:
                c.retire_by = now + self.retire_wait
                log.info("container %d left the packing plan; its executor retires by itself", cid)
        return changed

    def on_exit(self, c: _Container, code: int, now: float) -> None:
        c.popen = None
        if c.retire_by is not None:
            log.info("executor of retired container %d exited with %s", c.id, code)
            return
        if code == 0:  # asked to stop (squall restart): a new executor at once, not a failure
            log.info("executor of container %d stopped cleanly; starting a new one", c.id)
            c.next_start = now
            return
        delay = c.budget.on_exit(now)
        if delay is None:
            path = self.log_file(c.id)
            c.failure = (f"container {c.id}: its executor exited with {code}, past its restart budget "
                         f"({self.policy.describe()}); the end of its log ({path}):\n{log_tail(path)}")
            self.failure = self.failure or c.failure
            log.error("executor of container %d exited with %s; not restarting it: past its budget of %s",
                      c.id, code, self.policy.describe())
            return
        c.next_start = now + delay
        log.warning("executor of container %d exited with %s; restarting it in %.1fs (%d restarts within %gs)",
                    c.id, code, delay, c.budget.restarts(now), self.policy.window)

    def poll(self, now: float) -> tuple:
        """Reap exits, restart what is due; (pids changed, retired executors to stop now)."""
        changed = False
        overdue = []
        for cid, c in list(self.containers.items()):
            if c.popen is not None and c.popen.poll() is not None:
                self.on_exit(c, c.popen.returncode, now)
                changed = True
            if c.retire_by is not None:
                if c.popen is None:
                    del self.containers[cid]
                elif now >= c.retire_by:
                    overdue.append(c)
            elif c.popen is None and c.failure is None and now >= c.next_start:
                c.popen = self.start(cid)
                changed = True
        return changed, overdue

    def pids(self) -> dict:
        return {cid: c.popen.pid for cid, c in sorted(self.containers.items()) if c.popen is not None}


def stop_groups(processes: list, grace: float) -> None:
    """SIGTERM each process's group, wait up to ``grace``, SIGKILL the groups still there.

    ``processes`` are ``subprocess.Popen`` (our children) or ``psutil.Process`` objects.
    """
    for p in processes:
        _signal_group(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in processes:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except (subprocess.TimeoutExpired, psutil.TimeoutExpired):
            log.warning("process %d ignored SIGTERM for %.0fs; killing its process group", p.pid, grace)
            _signal_group(p.pid, signal.SIGKILL)
            try:
                p.wait(timeout=5)
            except (subprocess.TimeoutExpired, psutil.TimeoutExpired):
                log.error("process %d survived SIGKILL for 5s", p.pid)
        except psutil.NoSuchProcess:
            pass


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(os.getpgid(pid), signum)
    except ProcessLookupError:
        pass


class Supervisor:
    def __init__(self, state: Any, topology: str, state_file: str, execution: Any, config: Any):
        self.state = state
        self.name = topology
        self.state_file = state_file
        self.execution = execution
        self.grace = float(config["squall.executor.kill.grace.secs"]) * 2
        self.rules = ContainerSupervisor(RestartPolicy.from_config(config), self._start,
                                         lambda cid: os.path.join(container_log_dir(execution.run_dir, cid),
                                                                  "executor.log"),
                                         retire_wait=float(config["squall.submit.timeout.secs"]))
        self.stopping = False
        self.plan: Any = None
        self.plan_changed = False
        self.gone = False

    def _start(self, cid: int) -> subprocess.Popen:
        log_dir = container_log_dir(self.execution.run_dir, cid)
        os.makedirs(log_dir, exist_ok=True)
        command = executor_command(self.execution.python or sys.executable, self.name, cid, self.state_file)
        with open(os.path.join(log_dir, "executor.log"), "ab") as out:
            p = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 cwd=self.execution.run_dir, start_new_session=True, close_fds=True)
        log.info("started the executor of container %d: pid %d", cid, p.pid)
        return p

    def write_location(self) -> bool:
        """Record the executors' pids; False if the state manager cannot be written now (tried again)."""
        from squall.state import Kind, StateError

        try:
            self.state.put(Kind.SCHEDULER, self.name, schema.SchedulerLocation(
                topology_name=self.name, scheduler="local", host=socket.gethostname(),
                executor_pids=self.rules.pids(), supervisor_pid=os.getpid(), failure=self.rules.failure))
        except StateError as e:
            log.warning("cannot record the executors: %s", e)
            return False
        return True

    def on_plan(self, plan: Any) -> None:  # state watch thread
        self.plan, self.plan_changed = plan, True

    def on_execution(self, execution: Any) -> None:  # state watch thread
        if execution is None:
            self.gone = True

    def run(self) -> int:
        from squall.state import Kind

        signal.signal(signal.SIGTERM, self._signal)
        signal.signal(signal.SIGINT, self._signal)
        cancels = [self.state.watch(Kind.PACKING_PLAN, self.name, self.on_plan),
                   self.state.watch(Kind.EXECUTION_STATE, self.name, self.on_execution)]
        plan = self.state.get(Kind.PACKING_PLAN, self.name)
        try:
            if plan is None or self.state.get(Kind.EXECUTION_STATE, self.name) is None:
                log.info("topology %r has no state: nothing to run", self.name)
                return 0
            self.rules.want([0] + sorted(c.id for c in plan.containers), time.monotonic())
            unrecorded = not self.write_location()
            while not (self.stopping or self.gone):
                time.sleep(POLL_SECS)
                now = time.monotonic()
                changed = False
                if self.plan_changed:
                    self.plan_changed = False
                    if self.plan is None:
                        break
                    changed = self.rules.want([0] + sorted(c.id for c in self.plan.containers), now)
                failure = self.rules.failure
                polled, overdue = self.rules.poll(now)
                if overdue:
                    log.warning("retired containers %s still running after %.0fs; stopping them",
                                [c.id for c in overdue], self.rules.retire_wait)
                    stop_groups([c.popen for c in overdue], self.grace)
                if unrecorded or changed or polled or failure != self.rules.failure:
                    unrecorded = not self.write_location()
        finally:
            for cancel in cancels:
                cancel()
            running = [c.popen for c in self.rules.containers.values() if c.popen is not None]
            log.info("stopping %d executors", len(running))
            stop_groups(running, self.grace)
        log.info("supervisor of %r exits", self.name)
        return 0

    def _signal(self, signum: int, frame: Any) -> None:
        log.info("received signal %d; stopping", signum)
        self.stopping = True


def main(argv: Optional[list] = None) -> int:
    from squall.scheduler.daemon import topology_daemon

    return topology_daemon(argv, "python -m squall.scheduler.supervisor",
                           "Run and restart the executors of one topology on this machine.", "supervisor", _run)


def _run(args: argparse.Namespace, state: Any) -> int:
    from squall.logical import topology_config
    from squall.state import Kind

    execution = state.get(Kind.EXECUTION_STATE, args.topology)
    topology = state.get(Kind.TOPOLOGY, args.topology)
    if execution is None or topology is None:
        log.error("topology %r has no state (not submitted, or killed)", args.topology)
        return 2
    return Supervisor(state, args.topology, args.state, execution, topology_config(topology)).run()


if __name__ == "__main__":
    sys.exit(main())
