"""Stacks and profiles of one of the container's processes, taken by its debug server (``debug_server.py``)
through the process's own handlers (``debug_agent.py``) or, for a flame graph where the process may be
traced, by py-spy; the results kept in the container's debug folder.

Results are named ``<kind>-<process>-<time>.<ext>`` (``stacks`` .txt, ``flame`` .svg, ``memory`` .json)
and nothing else in that folder is served.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Optional

from squall.errors import SquallError
from squall.runtime import flamegraph
from squall.runtime.debug_agent import (PROFILE_SIGNAL, STACKS_SIGNAL, ProfileRequest, agent_dir, request_file,
                                        stacks_file, write_atomically)

log = logging.getLogger(__name__)

POLL_SECS = 0.02
STACKS_WAIT_SECS = 5.0  # for faulthandler's dump to appear
QUIET_SECS = 0.1  # the dump is complete once its file stopped growing this long
ANSWER_GRACE_SECS = 10.0  # beyond a profile's own length, for its answer
RESULT_NAME = re.compile(r"(stacks|flame|memory)-[A-Za-z0-9_.+-]+-\d{8}-\d{6}(-\d+)?\.(txt|svg|json)")
PY_SPY_SCOPE = "/proc/sys/kernel/yama/ptrace_scope"


class ProfileError(SquallError):
    """A stack or profile could not be taken (names the process and why)."""


@dataclass(frozen=True)
class Target:
    """One running process of the container: its name and pid, and the debug folder its handlers use."""

    name: str
    pid: int
    debug_dir: str

    def ready(self) -> bool:
        """Its handlers are installed (signalling it earlier would kill it)."""
        return os.path.exists(stacks_file(self.debug_dir, self.pid))

    def check_ready(self) -> None:
        if not self.ready():
            raise ProfileError(f"{self.name} (pid {self.pid}) is starting: its debug handlers are not in place "
                               "yet; try again in a moment")

    def signal(self, signum: int) -> None:
        self.check_ready()
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            raise ProfileError(f"{self.name} (pid {self.pid}) is gone (restarting?)") from None

    def result_path(self, kind: str, ext: str) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = os.path.join(self.debug_dir, f"{kind}-{self.name}-{stamp}.{ext}")
        k = 1
        while os.path.exists(path):
            k += 1
            path = os.path.join(self.debug_dir, f"{kind}-{self.name}-{stamp}-{k}.{ext}")
        return path


def stacks(target: Target) -> tuple[str, str]:
    """(every thread's Python stack as faulthandler prints it, the path it is kept at)."""
    target.check_ready()
    path = stacks_file(target.debug_dir, target.pid)
    with open(path, "r+") as f:  # what earlier requests left is not this one's
        f.truncate(0)
    target.signal(STACKS_SIGNAL)
    deadline = time.monotonic() + STACKS_WAIT_SECS
    size, since = 0, time.monotonic()
    while time.monotonic() < deadline:
        now_size = os.path.getsize(path)
        if now_size != size:
            size, since = now_size, time.monotonic()
        elif size and time.monotonic() - since >= QUIET_SECS:
            break
        time.sleep(POLL_SECS)
    with open(path) as f:
        text = f.read()
    if not text:
        raise ProfileError(f"{target.name} (pid {target.pid}) wrote no stacks within {STACKS_WAIT_SECS:g}s")
    kept = target.result_path("stacks", "txt")
    with open(kept, "w") as f:
        f.write(text)
    return text, kept


def flame(target: Target, seconds: float, interval: float, profiler: str) -> dict:
    """A flame graph of ``seconds`` of the process, saved as SVG: ``{"path", "profiler", "total", "unit"}``
    (``total`` of ``unit``, None from py-spy).
    ``profiler``: ``sampler`` (in the process), ``py-spy``, or ``auto`` (py-spy where it is installed and
    the process may be traced, else the sampler)."""
    out = target.result_path("flame", "svg")
    if profiler == "py-spy" or (profiler == "auto" and py_spy_usable()):
        if _py_spy(target, seconds, interval, out):
            return {"path": out, "profiler": "py-spy", "total": None, "unit": "samples"}
        if profiler == "py-spy":
            raise ProfileError(f"py-spy could not profile {target.name} (pid {target.pid}); see the executor's log")
    answer = _ask(target, ProfileRequest("flame", seconds, _answer_path(target), interval=interval))
    folded = {str(k): int(v) for k, v in answer["folded"].items()}
    unit = str(answer["unit"])
    title = f"{target.name} (pid {target.pid}): {seconds:g}s sampled every {interval * 1000:g} ms, by {unit}"
    with open(out, "w") as f:
        f.write(flamegraph.render(folded, title, unit))
    return {"path": out, "profiler": "sampler", "total": sum(folded.values()), "unit": unit}


def memory(target: Target, seconds: float, top: int) -> dict:
    """tracemalloc's top allocations over ``seconds``, saved as JSON: ``{"path", "allocations"}``."""
    answer = _ask(target, ProfileRequest("memory", seconds, _answer_path(target), top=top))
    out = target.result_path("memory", "json")
    result = {"process": target.name, "pid": target.pid, "seconds": seconds, "allocations": answer["allocations"]}
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    return {"path": out, **result}


def py_spy_usable() -> bool:
    """py-spy is installed and may attach to a sibling process: no Yama restriction (``ptrace_scope`` 0, or no
    Yama at all: the classic rule, same user). With scope 1 only an ancestor may trace, and py-spy, a child of
    the executor, is the task's sibling."""
    if py_spy_path() is None:
        return False
    try:
        with open(PY_SPY_SCOPE) as f:
            return f.read().strip() == "0"
    except FileNotFoundError:
        return True
    except OSError:
        return False


def py_spy_path() -> Optional[str]:
    """py-spy beside this Python (its environment's scripts), else on the PATH."""
    return shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")


def _py_spy(target: Target, seconds: float, interval: float, out: str) -> bool:
    command = [py_spy_path() or "py-spy", "record", "--pid", str(target.pid), "--duration", str(max(1, round(seconds))),
               "--rate", str(max(1, round(1 / interval))), "--format", "flamegraph", "--output", out,
               "--nonblocking"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + ANSWER_GRACE_SECS)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("py-spy on %s (pid %d): %s; the in-process sampler instead", target.name, target.pid, e)
        return False
    if done.returncode != 0 or not os.path.exists(out):
        log.warning("py-spy on %s (pid %d) exited %d: %s; the in-process sampler instead", target.name, target.pid,
                    done.returncode, done.stderr.strip()[-500:])
        return False
    return True


def _answer_path(target: Target) -> str:
    return os.path.join(agent_dir(target.debug_dir), f"answer-{target.pid}-{time.monotonic_ns()}.json")


def _ask(target: Target, request: ProfileRequest) -> dict:
    """Hand ``request`` to the process and wait for its answer."""
    write_atomically(request_file(target.debug_dir, target.pid), request.to_json())
    target.signal(PROFILE_SIGNAL)
    deadline = time.monotonic() + request.seconds + ANSWER_GRACE_SECS
    while not os.path.exists(request.out):
        if time.monotonic() > deadline:
            raise ProfileError(f"{target.name} (pid {target.pid}) did not answer its {request.kind} profile "
                               f"within {request.seconds + ANSWER_GRACE_SECS:g}s")
        time.sleep(POLL_SECS)
    try:
        with open(request.out) as f:
            answer = json.load(f)
    finally:
        os.remove(request.out)
    if "error" in answer:
        raise ProfileError(f"{target.name} (pid {target.pid}): {answer['error']}")
    return answer


def results(debug_dir: str) -> list[dict]:
    """The kept results of the container, newest first: name, kind, size, time."""
    try:
        names = [n for n in os.listdir(debug_dir) if RESULT_NAME.fullmatch(n)]
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        try:
            st = os.stat(os.path.join(debug_dir, name))
        except FileNotFoundError:
            continue
        out.append({"name": name, "kind": name.partition("-")[0], "size": st.st_size, "time": st.st_mtime})
    return sorted(out, key=lambda r: r["time"], reverse=True)


def result_path(debug_dir: str, name: str) -> Optional[str]:
    """The path of kept result ``name`` (None when there is none by that name): only a name the folder
    lists as a result, so nothing in a request becomes a path."""
    return os.path.join(debug_dir, name) if any(r["name"] == name for r in results(debug_dir)) else None
