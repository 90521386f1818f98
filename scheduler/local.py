"""The local scheduler: each container is an executor process group on this machine.

``on_schedule`` starts the topology's supervisor (``squall.scheduler.supervisor``),
detached in its own session so the topology outlives the command that
submitted it; the supervisor starts the executors, restarts dead ones and
records their pids. The scheduler's other operations act through it:
``restart`` stops an executor and waits for the supervisor's new one,
``update`` waits until the supervisor has started the new plan's
containers. ``kill`` stops the supervisor (which stops its executors), then
any executor it left, then sweeps any process of the topology that escaped
its group.
"""
from __future__ import annotations

import logging
import os
import subprocess
import time
from typing import Any, Iterable, Optional

import psutil

from squall.scheduler.base import Scheduler, SchedulerError, container_ids, state_file
from squall.scheduler.supervisor import stop_groups
from squall.state import Kind, StateManager
from squall.supervision import log_tail

log = logging.getLogger(__name__)

SUPERVISOR_MODULE = "squall.scheduler.supervisor"


def supervisor_command(python: str, topology: str, state_file: str) -> list:
    return [python, "-m", SUPERVISOR_MODULE, "--topology", topology, "--state", state_file]


class LocalScheduler(Scheduler):
    def __init__(self, state: StateManager, kill_grace_secs: float = 10.0, wait_secs: float = 30.0):
        self.state = state
        self.kill_grace_secs = kill_grace_secs
        self.wait_secs = wait_secs

    def on_schedule(self, execution_state: Any, packing_plan: Any) -> None:
        path = os.path.join(execution_state.run_dir, "logs", "supervisor.log")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        command = supervisor_command(execution_state.python, execution_state.topology_name,
                                     state_file(execution_state))
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

    def _wait(self, execution: Any, done: Any, what: str, process: Optional[subprocess.Popen] = None,
              log_path: Optional[str] = None) -> Any:
        """Wait until the scheduler record satisfies ``done``; the record."""
        deadline = time.monotonic() + self.wait_secs
        while True:
            location = self.state.get(Kind.SCHEDULER, execution.topology_name)
            if location is not None and done(location):
                return location
            if process is not None and process.poll() is not None:
                raise SchedulerError(f"the supervisor of {execution.topology_name!r} exited with "
                                     f"{process.returncode}; the end of its log ({log_path}):\n{log_tail(log_path)}")
            if time.monotonic() > deadline:
                raise SchedulerError(f"topology {execution.topology_name!r}: timed out after {self.wait_secs:g}s "
                                     f"waiting for {what}")
            time.sleep(0.1)

    def on_kill(self, execution_state: Any) -> None:
        location = self.state.get(Kind.SCHEDULER, execution_state.topology_name)
        if location is not None and location.supervisor_pid:
            self._stop([location.supervisor_pid], grace=self.kill_grace_secs * 2)
        if location is not None:
            self._stop(location.executor_pids.values())
        self._stop(p.pid for p in self.topology_processes(execution_state))

    def on_restart(self, execution_state: Any, container: Optional[int]) -> None:
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

    def on_update(self, execution_state: Any, current: Any, proposed: Any) -> None:
        # the supervisor follows the packing plan: it starts the containers ``proposed`` adds;
        # executors of removed containers see the new plan, drain their instances and exit by themselves
        wanted = set(container_ids(proposed))
        self._wait(execution_state, lambda loc: set(loc.executor_pids) >= wanted,
                   "its supervisor to start the new containers")

    def topology_processes(self, execution_state: Any) -> list:
        """Every live process started for this run of the topology (its command names the run's state file)."""
        path = state_file(execution_state)
        found = []
        for process in psutil.process_iter(["cmdline"]):
            cmdline = process.info["cmdline"] or []
            if _flag(cmdline, "--state") == path and _flag(cmdline, "--topology") == execution_state.topology_name:
                found.append(process)
        return found

    def _stop(self, pids: Iterable[int], grace: Optional[float] = None) -> None:
        """SIGTERM each process's group, wait for the grace period, SIGKILL the rest."""
        processes = []
        for pid in pids:
            try:
                processes.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                continue
        stop_groups(processes, self.kill_grace_secs if grace is None else grace)


def _flag(cmdline: list, name: str) -> Optional[str]:
    try:
        return cmdline[cmdline.index(name) + 1]
    except (ValueError, IndexError):
        return None
