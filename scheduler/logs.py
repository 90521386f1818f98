"""``squall logs``: which log files of a run to print, printing (and following) them, and where they are
when the containers run on other hosts.

Instance logs are named after their process (``instance-<task>-<component>.log``, a chain's
``instance-<task>-<component>+<task>-<component>....log``): a chained task's lines are in its chain's
log, each naming its component.
"""
from __future__ import annotations

import glob
import os
import time
from typing import Optional, TextIO

from squall.commandline import format_table
from squall.errors import SquallError
from squall.idl import schema
from squall.logical import process_tasks
from squall.scheduler import launcher
from squall.state import Kind, StateManager

FOLLOW_POLL_SECS = 0.5


def select_logs(run_dir: str, component: Optional[str] = None, task: Optional[int] = None) -> list[str]:
    """Log files of the run, of one component's and/or one task's processes when asked (sorted)."""
    files = sorted(glob.glob(os.path.join(run_dir, "logs", "container-*", "*.log")))
    if component is None and task is None:
        return files
    return [path for path in files
            if any((component is None or c == component) and (task is None or t == task)
                   for t, c in process_tasks(os.path.basename(path)[: -len(".log")]))]


def run_dir_of(state: StateManager, name: str) -> str:
    """The running topology's run folder, else its newest run on disk; an error when there is none."""
    execution = state.get(Kind.EXECUTION_STATE, name)
    if execution is not None:
        return execution.run_dir
    runs = sorted(glob.glob(os.path.join(launcher.topology_home(name), "*", "logs")))
    if not runs:
        raise SquallError(f"topology {name!r} is not running and has no logs on disk")
    return os.path.dirname(runs[-1])


def local_logs(name: str, run_dir: str, component: Optional[str], task: Optional[int]) -> list[str]:
    """The log files ``squall logs`` prints; an error that says where they are when there are none here."""
    files = select_logs(run_dir, component, task)
    application = os.path.join(run_dir, "yarn", "application_id")
    if not files and os.path.isfile(application):
        with open(application) as f:
            app_id = f.read().strip()
        raise SquallError(f"topology {name!r} ran on YARN as {app_id}; its logs are YARN's: "
                          f"yarn logs -applicationId {app_id}")
    if not files:
        what = " ".join(filter(None, [component and f"component {component!r}",
                                      task is not None and f"task {task}"]))
        raise SquallError(f"no log in {run_dir}/logs matches {what or 'anything'}")
    return files


def print_logs(files: list[str], out: TextIO, follow: bool) -> None:
    """Each file's text under a ``==> path <==`` header; with ``follow``, what is appended, until interrupted."""
    offsets = {path: 0 for path in files}
    first = True
    while first or follow:
        if not first:
            time.sleep(FOLLOW_POLL_SECS)
        for path in files:
            with open(path, errors="replace") as f:
                f.seek(offsets[path])
                text = f.read()
                offsets[path] = f.tell()
            if text or first:
                out.write(f"==> {path} <==\n")
                out.write(text)
                out.flush()
        first = False


def remote_logs_text(state: StateManager, execution: schema.ExecutionState) -> str:
    """Where each container's logs are when its containers run on other hosts (YARN)."""
    rows = []
    for record in state.container_records(execution.topology_name):
        folders = sorted({os.path.dirname(p.log_file) for p in record.processes}) or ["-"]
        rows.append([record.container, record.yarn_container or "-", record.host, ", ".join(folders)])
    lines = [format_table(["container", "yarn container", "host", "log folder"], sorted(rows), right={"container"})]
    details = launcher.make_scheduler(execution.cluster, state).details(execution)
    lines += [f"{label}: {value}" for label, value in details.items()]
    return "\n".join(lines)
