"""The local scheduler: each container is an executor process group on this machine.

Executors are started detached (their own session), so topologies outlive the
command that submitted them. Killing signals the whole process group, waits,
then kills what is left, and finally sweeps any process of the topology that
escaped its group.
"""
from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
from typing import Any, Iterable, Optional

import psutil

from squall.idl import schema
from squall.scheduler.base import Scheduler, SchedulerError, container_ids

log = logging.getLogger(__name__)

EXECUTOR_MODULE = "squall.runtime.executor"


def executor_command(python: str, topology: str, container: int, state_root: str) -> list:
    """The one command line an executor is started with (the runtime contract)."""
    return [
        python, "-m", EXECUTOR_MODULE,
        "--topology", topology,
        "--container", str(container),
        "--state-manager", "local",
        "--state-root", state_root,
    ]


def container_log_dir(run_dir: str, container: int) -> str:
    return os.path.join(run_dir, "logs", f"container-{container}")


class LocalScheduler(Scheduler):
    def __init__(self, state_root: str, kill_grace_secs: float = 10.0, retire_wait_secs: float = 60.0):
        self.state_root = state_root
        self.kill_grace_secs = kill_grace_secs
        self.retire_wait_secs = retire_wait_secs

    def on_schedule(self, execution_state: Any, packing_plan: Any) -> Any:
        pids = {c: self._start(execution_state, c) for c in container_ids(packing_plan)}
        return schema.SchedulerLocation(
            topology_name=execution_state.topology_name,
            scheduler="local",
            host=socket.gethostname(),
            executor_pids=pids,
        )

    def _start(self, state: Any, container: int) -> int:
        log_dir = container_log_dir(state.run_dir, container)
        os.makedirs(log_dir, exist_ok=True)
        command = executor_command(state.python, state.topology_name, container, self.state_root)
        try:
            with open(os.path.join(log_dir, "executor.log"), "ab") as out:
                process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=state.run_dir,
                    start_new_session=True,
                    close_fds=True,
                )
        except OSError as e:
            raise SchedulerError(f"cannot start the executor of container {container}: {e}") from e
        log.info("started executor of container %d: pid %d", container, process.pid)
        return process.pid

    def on_kill(self, execution_state: Any, location: Any) -> None:
        pids = dict(location.executor_pids) if location is not None else {}
        self._stop(pids.values())
        self._stop(p.pid for p in self.topology_processes(execution_state.topology_name))

    def on_restart(self, execution_state: Any, location: Any, container: Optional[int]) -> Any:
        pids = dict(location.executor_pids)
        targets = sorted(pids) if container is None else [container]
        for c in targets:
            if c not in pids:
                raise SchedulerError(
                    f"topology {execution_state.topology_name!r} has no container {c} "
                    f"(containers: {', '.join(map(str, sorted(pids)))})"
                )
        self._stop(pids[c] for c in targets)
        for c in targets:
            pids[c] = self._start(execution_state, c)
        location.executor_pids = pids
        return location

    def on_update(self, execution_state: Any, location: Any, current: Any, proposed: Any) -> Any:
        pids = dict(location.executor_pids)
        wanted = set(container_ids(proposed))
        for c in sorted(wanted - set(pids)):
            pids[c] = self._start(execution_state, c)
        # Executors of removed containers see the new plan, wait until it is in
        # force, drain their instances and exit by themselves; stop only what
        # has not done so in time.
        removed = [pids.pop(c) for c in sorted(set(pids) - wanted)]
        self._stop(removed, wait_first=self.retire_wait_secs)
        location.executor_pids = pids
        return location

    def topology_processes(self, topology: str) -> list:
        """Every live process started for ``topology`` under this state root."""
        found = []
        for process in psutil.process_iter(["cmdline"]):
            cmdline = process.info["cmdline"] or []
            if _flag(cmdline, "--topology") == topology and _flag(cmdline, "--state-root") == self.state_root:
                found.append(process)
        return found

    def _stop(self, pids: Iterable[int], wait_first: float = 0.0) -> None:
        """SIGTERM each process group, wait for the grace period, SIGKILL the rest.

        With ``wait_first``, give the processes that long to exit by themselves
        before they are signalled.
        """
        processes = []
        for pid in pids:
            try:
                processes.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                continue
        if wait_first:
            _, processes = psutil.wait_procs(processes, timeout=wait_first)
        for process in processes:
            try:
                os.killpg(os.getpgid(process.pid), signal.SIGTERM)
            except ProcessLookupError:
                continue
            except PermissionError as e:
                raise SchedulerError(f"cannot signal process {process.pid}: {e}") from e
        _, alive = psutil.wait_procs(processes, timeout=self.kill_grace_secs)
        for process in alive:
            log.warning("process %d ignored SIGTERM for %.0fs; killing it", process.pid, self.kill_grace_secs)
            try:
                os.killpg(os.getpgid(process.pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        psutil.wait_procs(alive, timeout=5)  # also reaps our own children


def _flag(cmdline: list, name: str) -> Optional[str]:
    try:
        return cmdline[cmdline.index(name) + 1]
    except (ValueError, IndexError):
        return None
