"""The local scheduler: each container is an executor process group on this machine.

``on_schedule`` starts the topology's supervisor (``squall.scheduler.supervisor``),
detached in its own session so the topology outlives the command that
submitted it; the supervisor starts the executors, restarts dead ones and
records their pids. The supervisor is supervised in turn by a keeper
(``squall.scheduler.keeper``), which restarts it when it dies; a restarted
supervisor adopts the executors still running. The scheduler's other operations act through it:
``restart`` stops an executor and waits for the supervisor's new one,
``update`` waits until the supervisor has started the new plan's
containers. ``kill`` stops the keeper (so that nothing restarts the
supervisor), then the supervisor (which stops its executors), then any
executor it left, then sweeps any process of the run that escaped its group
(recognised by its command line: ``squall.processargs``).
"""
from __future__ import annotations

import logging
import os
import subprocess
import time
from typing import Callable, Iterable, Optional

import psutil

from squall.idl import schema
from squall.processargs import DaemonArgs, ProcessArgs
from squall.scheduler.base import Scheduler, SchedulerError, container_ids, state_file
from squall.scheduler.supervisor import KEEPER_MODULE, SUPERVISOR_MODULE
from squall.state import Kind, StateManager
from squall.supervision import log_tail, stop_processes

log = logging.getLogger(__name__)


class LocalScheduler(Scheduler):
    def __init__(self, state: StateManager, kill_grace_secs: float = 10.0, wait_secs: float = 30.0):
        self.state = state
        self.kill_grace_secs = kill_grace_secs
        self.wait_secs = wait_secs

    def on_schedule(self, execution_state: schema.ExecutionState, packing_plan: schema.PackingPlan) -> None:
        path = os.path.join(execution_state.run_dir, "logs", "supervisor.log")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        command = DaemonArgs(SUPERVISOR_MODULE, execution_state.topology_name,
                             state_file(execution_state)).command(execution_state.python)
        try:
            with open(path, "ab") as out:
                process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                           cwd=execution_state.run_dir, start_new_session=True, close_fds=True)
        except OSError as e:
            raise SchedulerError(f"cannot start the supervisor of {execution_state.topology_name!r}: {e}") from e
        log.info("started the supervisor of %s: pid %d", execution_state.topology_name, process.pid)
        self._wait(execution_state, lambda loc: loc.supervisor_pid == process.pid
                   and set(loc.executor_pids) >= set(container_ids(packing_plan)),
                   "its supervisor to start the executors", process, path)

    def _wait(self, execution: schema.ExecutionState, done: Callable[[schema.SchedulerLocation], bool], what: str,
              process: Optional[subprocess.Popen[bytes]] = None,
              log_path: Optional[str] = None) -> schema.SchedulerLocation:
        """Wait until the scheduler record satisfies ``done``; the record."""
        deadline = time.monotonic() + self.wait_secs
        while True:
            location = self.state.get(Kind.SCHEDULER, execution.topology_name)
            if location is not None and done(location):
                return location
            if process is not None and log_path is not None and process.poll() is not None:
                raise SchedulerError(f"the supervisor of {execution.topology_name!r} exited with "
                                     f"{process.returncode}; the end of its log ({log_path}):\n{log_tail(log_path)}")
            if time.monotonic() > deadline:
                raise SchedulerError(f"topology {execution.topology_name!r}: timed out after {self.wait_secs:g}s "
                                     f"waiting for {what}")
            time.sleep(0.1)

    def on_kill(self, execution_state: schema.ExecutionState) -> None:
        # the keepers first: a keeper would restart the supervisor stopped next
        self._stop((p.pid for p in self.topology_processes(execution_state, KEEPER_MODULE)), group=False)
        location = self.state.get(Kind.SCHEDULER, execution_state.topology_name)
        if location is not None and location.supervisor_pid:
            self._stop([location.supervisor_pid], grace=self.kill_grace_secs * 2)
        if location is not None:
            self._stop(location.executor_pids.values())
        self._stop(p.pid for p in self.topology_processes(execution_state))

    def on_restart(self, execution_state: schema.ExecutionState, container: Optional[int]) -> None:
        name = execution_state.topology_name
        location = self.state.get(Kind.SCHEDULER, name)
        pids = dict(location.executor_pids) if location is not None else {}
        targets = sorted(pids) if container is None else [container]
        for c in targets:
            if c not in pids:
                raise SchedulerError(f"topology {name!r} has no container {c} "
                                     f"(containers: {', '.join(map(str, sorted(pids)))})")
        self._stop(pids[c] for c in targets)
        self._wait(execution_state, lambda loc: all(loc.executor_pids.get(c) not in (None, pids[c]) for c in targets),
                   f"new executors of containers {targets}")

    def on_update(self, execution_state: schema.ExecutionState, current: schema.PackingPlan,
                  proposed: schema.PackingPlan) -> None:
        # the supervisor follows the packing plan: it starts the containers ``proposed`` adds;
        # executors of removed containers see the new plan, drain their instances and exit by themselves
        wanted = set(container_ids(proposed))
        self._wait(execution_state, lambda loc: set(loc.executor_pids) >= wanted,
                   "its supervisor to start the new containers")

    def topology_processes(self, execution_state: schema.ExecutionState,
                           module: Optional[str] = None) -> list[psutil.Process]:
        """Every live process started for this run of the topology (its command names the run's state
        file), or only those of ``module``'s."""
        want = (execution_state.topology_name, state_file(execution_state))
        found = []
        for process in psutil.process_iter(["cmdline"]):
            cmdline = process.info["cmdline"] or []
            args = ProcessArgs.from_cmdline(cmdline) or DaemonArgs.from_cmdline(cmdline)
            if args is not None and (args.topology, args.state) == want and module in (None, args.module):
                found.append(process)
        return found

    def _stop(self, pids: Iterable[int], grace: Optional[float] = None, group: bool = True) -> None:
        """SIGTERM each process (``group``: its process group), wait for the grace period, SIGKILL the rest."""
        processes = []
        for pid in pids:
            try:
                processes.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                continue
        stop_processes(processes, self.kill_grace_secs if grace is None else grace, group=group)
