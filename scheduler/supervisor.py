"""The local scheduler's supervisor: one process per topology that runs its
containers' executors and restarts the ones that die.

``python -m squall.scheduler.supervisor --topology T --state FILE``

It is to the local cluster what YARN is on a cluster (Heron's local
scheduler monitors its executors the same way). It starts one executor per
container (container 0 and every container of the packing plan), each in its
own process group (``squall.processargs.ProcessArgs``: the runtime
contract's command), and, with the one supervision model
(``squall.supervision.Supervision``):

- restarts an executor that dies under the restart policy; one past its
  budget fails the topology: the reason, with the end of the executor's log,
  goes into the scheduler record;
- restarts at once, without counting it, an executor that exits cleanly while
  its container is in the plan (``squall restart`` sends it SIGTERM);
- follows the packing plan: starts the containers an update adds; the
  executors of removed containers retire by themselves, and are stopped after
  ``retire_wait`` if they have not;
- keeps ``schedulers/<topology>`` current (executor pids, its own pid);
- stops every executor and exits on SIGTERM, or when the topology's state is
  gone (kill).

It is supervised itself (``squall.scheduler.keeper``): a keeper process
restarts it when it dies, and it starts a new keeper when its keeper dies.
A restarted supervisor *resumes*: it adopts the executors still running (a
container's executor is the holder of the ephemeral record
``containers/<topology>/<id>``, or the pid the last supervisor recorded,
checked against its command line: never a duplicate), restarts those that
died meanwhile (each such death counts against its budget), and carries the
restart budgets and failures over in ``<run_dir>/supervisor.json``. An
adopted executor is not its child: its exit status is unknown, so its exit
always counts.

``Supervision`` holds the rules and takes the time as an argument;
``Supervisor.run`` is the loop.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import time
from typing import Mapping, NamedTuple, Optional, Union

import psutil

from squall.idl import schema
from squall.processargs import DaemonArgs, ProcessArgs
from squall.state import Kind, StateError, StateManager, member
from squall.supervision import (RestartBudget, RestartPolicy, Start, Supervised, Supervision, Terminate, log_tail,
                                stop_processes)

log = logging.getLogger("squall.scheduler.supervisor")

SUPERVISOR_MODULE = "squall.scheduler.supervisor"
KEEPER_MODULE = "squall.scheduler.keeper"
POLL_SECS = 0.1
BUDGETS_FILE = "supervisor.json"


def container_log_dir(run_dir: str, container: int) -> str:
    return os.path.join(run_dir, "logs", f"container-{container}")


def poll(process: psutil.Process) -> tuple[bool, Optional[int]]:
    """(exited, its status): the status of a child of ours (``psutil.Popen``); None for an adopted one."""
    if isinstance(process, psutil.Popen):
        code = process.poll()
        return code is not None, code
    try:
        return process.status() == psutil.STATUS_ZOMBIE, None
    except psutil.NoSuchProcess:
        return True, None


def executor_of(pid: int, topology: str, state_file: str, container: int) -> Optional[psutil.Process]:
    """The live process ``pid`` if it is the executor of ``container`` of this run, else None."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        args = ProcessArgs.from_cmdline(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    if args is None or (args.role, args.topology, args.state, args.container) != ("executor", topology, state_file,
                                                                                  container):
        return None
    return process


class Budgets:
    """The restart budgets and failures of a topology's containers, kept in its run folder so that a
    restarted supervisor counts on from where the killed one was (monotonic times: one machine)."""

    def __init__(self, path: str):
        self.path = path

    def load(self) -> tuple[dict[str, list[float]], dict[str, str]]:
        try:
            with open(self.path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}, {}
        return dict(data.get("restarts", {})), dict(data.get("failures", {}))

    def save(self, units: Mapping[str, Supervised[psutil.Process]]) -> None:
        data = {"restarts": {n: u.budget.times() for n, u in units.items()},
                "failures": {n: u.failure for n, u in units.items() if u.failure is not None}}
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)
        except OSError as e:  # a new supervisor would count from zero: not worth stopping for
            log.warning("cannot keep the restart budgets in %s: %s", self.path, e)


class PlanChanged(NamedTuple):
    plan: Optional[schema.PackingPlan]


class TopologyGone(NamedTuple):
    """The execution state was removed (kill)."""


LoopEvent = Union[PlanChanged, TopologyGone]


class Supervisor:
    def __init__(self, state: StateManager, topology: str, state_file: str, execution: schema.ExecutionState,
                 config: Mapping[str, object]):
        self.state = state
        self.name = topology
        self.state_file = state_file
        self.execution = execution
        self.python = execution.python or sys.executable
        self.policy = RestartPolicy.from_config(config)
        self.grace = float(str(config["squall.executor.kill.grace.secs"])) * 2
        self.retire_wait = float(str(config["squall.submit.timeout.secs"]))
        self.supervision: Supervision[psutil.Process] = Supervision(self.policy, self.grace, free_clean_exit=True)
        self.budgets = Budgets(os.path.join(execution.run_dir, BUDGETS_FILE))
        self.stopping = False  # set by the signal handler (the loop's own thread)
        self.events: queue.Queue[LoopEvent] = queue.Queue()  # from the state watches
        self.keeper: Optional[psutil.Process] = None  # the process that restarts this one if it dies
        self.started_keeper: Optional[psutil.Popen] = None

    # executors ----------------------------------------------------------------------------
    def log_file(self, cid: int) -> str:
        return os.path.join(container_log_dir(self.execution.run_dir, cid), "executor.log")

    def start(self, unit: Supervised[psutil.Process], now: float) -> None:
        cid = int(unit.name)
        os.makedirs(container_log_dir(self.execution.run_dir, cid), exist_ok=True)
        command = ProcessArgs(self.name, cid, self.state_file).command(self.python)
        with open(self.log_file(cid), "ab") as out:
            process = psutil.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   cwd=self.execution.run_dir, start_new_session=True, close_fds=True)
        self.supervision.started(unit, process, now)
        log.info("started the executor of container %d: pid %d", cid, process.pid)

    def want(self, plan: schema.PackingPlan, now: float) -> None:
        """The plan's containers (and container 0) are wanted; removed ones retire by themselves."""
        for unit in self.supervision.want([str(c) for c in [0] + sorted(c.id for c in plan.containers)], now):
            log.info("container %s left the packing plan; its executor retires by itself", unit.name)
            self.supervision.retire(unit, now + self.retire_wait)

    def resume(self, now: float) -> None:
        """Adopt the executors a killed supervisor left running; count the deaths it missed."""
        restarts, failures = self.budgets.load()
        try:
            last = self.state.get(Kind.SCHEDULER, self.name)
        except StateError as e:
            log.warning("cannot read the scheduler record: %s", e)
            last = None
        recorded = dict(last.executor_pids) if last is not None else {}
        for name, unit in self.supervision.units.items():
            cid = int(name)
            unit.budget = RestartBudget(self.policy, restarts.get(name, ()))
            unit.failure = failures.get(name)
            process = next(filter(None, (executor_of(pid, self.name, self.state_file, cid)
                                         for pid in (self._holder(cid), recorded.get(cid)) if pid)), None)
            if process is not None:
                self.supervision.started(unit, process, now)
                log.info("adopted the executor of container %d: pid %d", cid, process.pid)
            elif cid in recorded and unit.failure is None:
                self.supervision.exited(unit, None, now)
                log.warning("the executor of container %d died while no supervisor ran", cid)

    def _holder(self, cid: int) -> Optional[int]:
        try:
            record = self.state.get(Kind.CONTAINER, member(self.name, cid))
        except StateError as e:
            log.warning("cannot read container %d's record: %s", cid, e)
            return None
        return record.executor_pid if record is not None else None

    def check(self, now: float) -> bool:
        """Reap exits, carry out what is due; True if the executors' pids or failures changed."""
        changed = False
        for unit in self.supervision.running():
            exited, code = poll(unit.process) if unit.process is not None else (False, None)
            if not exited:
                continue
            changed = True
            self.supervision.exited(unit, code, now)
            if unit.leaving:
                log.info("executor of retired container %s exited with %s", unit.name, code)
            elif unit.failure is not None:
                path = self.log_file(int(unit.name))
                unit.failure = (f"container {unit.name}: its executor exited with {code}, past its "
                                f"restart budget ({self.policy.describe()}); the end of its log ({path}):\n"
                                f"{log_tail(path)}")
                log.error("executor of container %s exited with %s; not restarting it: past its budget of %s",
                          unit.name, code, self.policy.describe())
            elif code == 0:
                log.info("executor of container %s stopped cleanly; starting a new one", unit.name)
            else:
                log.warning("executor of container %s exited with %s; restarting it in %.1fs (%d restarts "
                            "within %gs)", unit.name, code, unit.next_start - now, unit.budget.restarts(now),
                            self.policy.window)
        if changed:
            self.budgets.save(self.supervision.units)
        for action in self.supervision.actions(now):
            unit = action.unit
            if isinstance(action, Start):
                self.start(unit, now)
                changed = True
            elif unit.process is not None:
                log.warning("retired container %s still running after %.0fs; stopping it", unit.name,
                            self.retire_wait)
                signum = signal.SIGTERM if isinstance(action, Terminate) else signal.SIGKILL
                try:
                    os.killpg(unit.process.pid, signum)
                except ProcessLookupError:
                    pass
        return changed

    def pids(self) -> dict[int, int]:
        return {int(n): u.process.pid for n, u in sorted(self.supervision.units.items()) if u.process is not None}

    # the keeper ---------------------------------------------------------------------------
    def keep_keeper(self) -> None:
        """Make sure a keeper watches this process: its parent, else one it starts (``--adopt``)."""
        if self.keeper is not None:
            exited, _ = poll(self.keeper)
            if not exited and (self.keeper is self.started_keeper or os.getppid() == self.keeper.pid):
                return
            log.warning("the keeper (pid %d) is gone", self.keeper.pid)
        else:
            try:
                parent = psutil.Process(os.getppid())
                if DaemonArgs.from_cmdline(parent.cmdline()) == DaemonArgs(KEEPER_MODULE, self.name,
                                                                            self.state_file):
                    self.keeper = parent
                    return
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        command = DaemonArgs(KEEPER_MODULE, self.name, self.state_file).command(self.python) + \
            ["--adopt", str(os.getpid())]
        path = os.path.join(self.execution.run_dir, "logs", "keeper.log")
        with open(path, "ab") as out:
            self.started_keeper = psutil.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                               stderr=subprocess.STDOUT, cwd=self.execution.run_dir,
                                               start_new_session=True, close_fds=True)
        self.keeper = self.started_keeper
        log.info("started a keeper for this supervisor: pid %d", self.keeper.pid)

    # the loop -----------------------------------------------------------------------------
    def write_location(self) -> bool:
        """Record the executors' pids; False if the state manager cannot be written now (tried again)."""
        try:
            self.state.put(Kind.SCHEDULER, self.name, schema.SchedulerLocation(
                topology_name=self.name, scheduler="local", host=socket.gethostname(),
                executor_pids=self.pids(), supervisor_pid=os.getpid(), failure=self.supervision.failure))
        except StateError as e:
            log.warning("cannot record the executors: %s", e)
            return False
        return True

    def on_plan(self, plan: Optional[schema.PackingPlan]) -> None:  # state watch thread
        self.events.put(PlanChanged(plan))

    def on_execution(self, execution: Optional[schema.ExecutionState]) -> None:  # state watch thread
        if execution is None:
            self.events.put(TopologyGone())

    def next_event(self) -> Optional[LoopEvent]:
        """The next event within a poll period: the topology gone, else the latest plan change, else None."""
        events = []
        try:
            events.append(self.events.get(timeout=POLL_SECS))
            while True:
                events.append(self.events.get_nowait())
        except queue.Empty:
            pass
        return next((e for e in events if isinstance(e, TopologyGone)), events[-1] if events else None)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._signal)
        signal.signal(signal.SIGINT, self._signal)
        cancels = [self.state.watch(Kind.PACKING_PLAN, self.name, self.on_plan),
                   self.state.watch(Kind.EXECUTION_STATE, self.name, self.on_execution)]
        plan = self.state.get(Kind.PACKING_PLAN, self.name)
        try:
            if plan is None or self.state.get(Kind.EXECUTION_STATE, self.name) is None:
                log.info("topology %r has no state: nothing to run", self.name)
                return 0
            now = time.monotonic()
            self.want(plan, now)
            self.resume(now)
            self.keep_keeper()
            self.check(now)
            unrecorded = not self.write_location()
            next_keeper_check = now + 1.0
            while not self.stopping:
                event = self.next_event()
                now = time.monotonic()
                changed = False
                if isinstance(event, TopologyGone) or (isinstance(event, PlanChanged) and event.plan is None):
                    log.info("topology %r is gone; stopping", self.name)
                    break
                if isinstance(event, PlanChanged) and event.plan is not None:
                    self.want(event.plan, now)
                    changed = True
                if self.check(now) or changed or unrecorded:
                    unrecorded = not self.write_location()
                if now >= next_keeper_check:
                    next_keeper_check = now + 1.0
                    self.keep_keeper()
        finally:
            for cancel in cancels:
                cancel()
            if self.started_keeper is not None:  # it watches this process: it must not restart it now
                try:
                    self.started_keeper.send_signal(signal.SIGTERM)
                except psutil.NoSuchProcess:
                    pass
            running = [u.process for u in self.supervision.running() if u.process is not None]
            log.info("stopping %d executors", len(running))
            stop_processes(running, self.grace, group=True)
        log.info("supervisor of %r exits", self.name)
        return 0

    def _signal(self, signum: int, frame: object) -> None:
        log.info("received signal %d; stopping", signum)
        self.stopping = True


def main(argv: Optional[list[str]] = None) -> int:
    from squall.scheduler.daemon import topology_daemon

    return topology_daemon(argv, "python -m squall.scheduler.supervisor",
                           "Run and restart the executors of one topology on this machine.", "supervisor", _run)


def _run(args: argparse.Namespace, state: StateManager) -> int:
    from squall.logical import topology_config

    execution = state.get(Kind.EXECUTION_STATE, args.topology)
    topology = state.get(Kind.TOPOLOGY, args.topology)
    if execution is None or topology is None:
        log.error("topology %r has no state (not submitted, or killed)", args.topology)
        return 2
    return Supervisor(state, args.topology, args.state, execution, topology_config(topology)).run()


if __name__ == "__main__":
    sys.exit(main())
