"""The keeper: the process that restarts a topology's local supervisor when it dies.

``python -m squall.scheduler.keeper --topology T --state FILE [--adopt PID]``

The local supervisor (``squall.scheduler.supervisor``) restarts executors;
this tiny process restarts the supervisor, so a SIGKILLed supervisor does not
leave every container that dies afterwards dead. The rule, both ways:

- the keeper runs the supervisor as its child and starts a new one when it
  dies (under the topology's restart policy, ``squall.supervision``); a
  supervisor that exits 0 (its topology was killed, or it was stopped) ends
  the keeper too;
- a supervisor whose keeper dies starts a new keeper with ``--adopt`` its own
  pid: that keeper watches the running supervisor (not its child, so its
  exit status is unknown) and, once it is gone, starts a new one as its
  child, unless the topology's state is gone;
- neither outlives the topology: a keeper exits when the topology's
  execution state is gone, or on SIGTERM (leaving the supervisor to whoever
  stops it); a supervisor that stops sends SIGTERM to the keeper it started;
  the local scheduler's kill stops keepers before supervisors.

A new supervisor resumes: it adopts the executors still running and carries
their restart budgets over (the supervisor's docstring).
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time
from typing import Optional

import psutil

from squall.idl import schema
from squall.processargs import DaemonArgs
from squall.scheduler.supervisor import SUPERVISOR_MODULE, poll
from squall.state import Kind, StateError, StateManager
from squall.supervision import RestartBudget, RestartPolicy

log = logging.getLogger("squall.scheduler.keeper")

POLL_SECS = 0.2
EXIT_FAILED = 3


class Keeper:
    def __init__(self, state: StateManager, topology: str, state_file: str, execution: schema.ExecutionState,
                 policy: RestartPolicy):
        self.state = state
        self.name = topology
        self.state_file = state_file
        self.execution = execution
        self.budget = RestartBudget(policy)
        self.policy = policy
        self.stopping = False

    def start(self) -> psutil.Popen:
        command = DaemonArgs(SUPERVISOR_MODULE, self.name, self.state_file).command(
            self.execution.python or sys.executable)
        path = os.path.join(self.execution.run_dir, "logs", "supervisor.log")
        with open(path, "ab") as out:
            process = psutil.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   cwd=self.execution.run_dir, close_fds=True)
        log.info("started the supervisor of %r: pid %d", self.name, process.pid)
        return process

    def topology_gone(self) -> bool:
        try:
            return self.state.get(Kind.EXECUTION_STATE, self.name) is None
        except StateError as e:
            log.warning("cannot read the execution state (%s); taking the topology as alive", e)
            return False

    def run(self, adopt: Optional[int]) -> int:
        signal.signal(signal.SIGTERM, self._signal)
        signal.signal(signal.SIGINT, self._signal)
        process: Optional[psutil.Process] = None
        if adopt is not None:
            try:
                process = psutil.Process(adopt)
                log.info("watching the supervisor of %r: pid %d", self.name, adopt)
            except psutil.NoSuchProcess:
                process = None
        next_start = 0.0
        while not self.stopping:
            if process is None:
                if time.monotonic() >= next_start:
                    if self.topology_gone():
                        log.info("topology %r is gone; the keeper exits", self.name)
                        return 0
                    process = self.start()
            else:
                exited, code = poll(process)
                if exited:
                    if code == 0:
                        log.info("the supervisor of %r exited cleanly; the keeper exits", self.name)
                        return 0
                    now = time.monotonic()
                    delay = self.budget.on_exit(now)
                    if delay is None:
                        log.error("the supervisor of %r exited with %s, past its restart budget (%s); not "
                                  "restarting it", self.name, code, self.policy.describe())
                        return EXIT_FAILED
                    log.warning("the supervisor (pid %d) of %r exited with %s; restarting it in %.1fs",
                                process.pid, self.name, "an unknown status" if code is None else code, delay)
                    process, next_start = None, now + delay
            time.sleep(POLL_SECS)
        log.info("keeper of %r exits", self.name)
        return 0

    def _signal(self, signum: int, frame: object) -> None:
        log.info("received signal %d; stopping", signum)
        self.stopping = True


def main(argv: Optional[list[str]] = None) -> int:
    from squall.scheduler.daemon import topology_daemon

    def adopt(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--adopt", type=int, metavar="PID", help="a running supervisor to watch until it ends")

    return topology_daemon(argv, "python -m squall.scheduler.keeper",
                           "Restart the local supervisor of one topology when it dies.", "keeper",
                           lambda args, state: _run(args, state, args.adopt), adopt)


def _run(args: argparse.Namespace, state: StateManager, adopt: Optional[int]) -> int:
    from squall.logical import topology_config

    execution = state.get(Kind.EXECUTION_STATE, args.topology)
    topology = state.get(Kind.TOPOLOGY, args.topology)
    if execution is None or topology is None:
        log.info("topology %r has no state (killed): nothing to keep", args.topology)
        return 0
    config = topology_config(topology)
    return Keeper(state, args.topology, args.state, execution, RestartPolicy.from_config(config)).run(adopt)


if __name__ == "__main__":
    sys.exit(main())
