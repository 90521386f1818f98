"""What every runtime process installs at start so that its container's debug server can look inside it
without extra privileges (the server is its executor's thread: same user, same host, it may signal it).

- ``SIGUSR1``: every thread's Python stack, written by ``faulthandler`` (the standard library's C-level
  handler: it answers even while the process is busy in one long call) to ``agent/stacks-<pid>.txt``.
- ``SIGUSR2``: a profile, as ``agent/request-<pid>.json`` asks (``ProfileRequest``): ``flame``, a sampling
  of every thread's stack (``sys._current_frames()``) every ``interval`` seconds, each weighed by the CPU
  its thread used since the sample before (``sample_stacks``), written as folded stacks;
  or ``memory``, tracemalloc's top allocations made over the interval and still held at its end. It runs
  in a thread of its own; its JSON answer is written atomically to the request's ``out``.

The stacks file doubles as the sign that the handlers are in place: the server signals no process without
it (``SIGUSR1``'s default action would kill it); the process removes it when it exits, its executor when it
reaps it (``forget_process``). Runtime processes keep ``SIGUSR1`` and ``SIGUSR2`` for this. Nothing here is
unpickled: requests and answers are JSON.
"""
from __future__ import annotations

import faulthandler
import json
import linecache
import logging
import os
import signal
import sys
import threading
import time
import tracemalloc
from collections import Counter
from dataclasses import asdict, dataclass
from types import FrameType
from typing import Optional, TextIO

log = logging.getLogger(__name__)

STACKS_SIGNAL = signal.SIGUSR1
PROFILE_SIGNAL = signal.SIGUSR2
KINDS = ("flame", "memory")


def agent_dir(debug_dir: str) -> str:
    """Where a container's processes and its server exchange requests and raw answers."""
    return os.path.join(debug_dir, "agent")


def stacks_file(debug_dir: str, pid: int) -> str:
    return os.path.join(agent_dir(debug_dir), f"stacks-{pid}.txt")


def request_file(debug_dir: str, pid: int) -> str:
    return os.path.join(agent_dir(debug_dir), f"request-{pid}.json")


@dataclass(frozen=True)
class ProfileRequest:
    kind: str  # one of KINDS
    seconds: float
    out: str  # where the answer goes (JSON)
    interval: float = 0.01  # flame: seconds between samples
    top: int = 20  # memory: allocation sites listed

    def __post_init__(self) -> None:
        if self.kind not in KINDS or not self.seconds > 0 or not self.interval > 0 or self.top < 1:
            raise ValueError(f"not a profile request: {self}")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "ProfileRequest":
        data = json.loads(text)
        return cls(str(data["kind"]), float(data["seconds"]), str(data["out"]), float(data["interval"]),
                   int(data["top"]))


def forget_process(debug_dir: str, pid: int) -> None:
    """Remove the handlers' files of a process that exited (its executor reaped it): a pid used again must
    not look ready before its new process installed its handlers."""
    for path in (stacks_file(debug_dir, pid), request_file(debug_dir, pid)):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        except OSError as e:
            log.warning("cannot remove %s: %s", path, e)


def write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class DebugAgent:
    """The handlers of one process (``install`` once, from the main thread, at start)."""

    def __init__(self, debug_dir: str):
        self.debug_dir = debug_dir
        self._stacks: Optional[TextIO] = None
        self._busy = threading.Lock()  # one profile at a time

    def install(self) -> None:
        """Install the handlers; a folder that cannot be written leaves the process without them (said in its
        log; its server then answers that it is not ready), never stops it."""
        try:
            os.makedirs(agent_dir(self.debug_dir), exist_ok=True)
            self._stacks = open(stacks_file(self.debug_dir, os.getpid()), "a")
        except OSError as e:
            log.warning("no stacks or profiles of this process: %s", e)
            return
        faulthandler.register(STACKS_SIGNAL, file=self._stacks, all_threads=True, chain=False)
        signal.signal(PROFILE_SIGNAL, self._on_profile)

    def close(self) -> None:
        if self._stacks is None:
            return
        faulthandler.unregister(STACKS_SIGNAL)
        self._stacks.close()
        self._stacks = None
        forget_process(self.debug_dir, os.getpid())

    def _on_profile(self, signum: int, frame: Optional[FrameType]) -> None:
        path = request_file(self.debug_dir, os.getpid())
        try:
            with open(path) as f:
                request = ProfileRequest.from_json(f.read())
            os.remove(path)
        except (OSError, ValueError, KeyError) as e:
            log.warning("profile signal without a readable request (%s): %s", path, e)
            return
        if not self._busy.acquire(blocking=False):
            write_atomically(request.out, json.dumps({"error": "a profile of this process is already running"}))
            return
        threading.Thread(target=self._profile, args=(request,), name="squall-profile", daemon=True).start()

    def _profile(self, request: ProfileRequest) -> None:
        try:
            if request.kind == "flame":
                folded, unit = sample_stacks(request.seconds, request.interval)
                answer: dict = {"folded": dict(folded), "unit": unit}
            else:
                answer = {"allocations": trace_allocations(request.seconds, request.top)}
            answer["seconds"] = request.seconds
        except Exception as e:  # the answer says why; the process goes on
            log.exception("profile %s failed", request.kind)
            answer = {"error": f"{type(e).__name__}: {e}"}
        finally:
            self._busy.release()
        write_atomically(request.out, json.dumps(answer))


def frame_name(frame: FrameType) -> str:
    """``function (file.py)``: a flame graph's frame (lines left out, so a function is one box)."""
    code = frame.f_code
    return f"{getattr(code, 'co_qualname', code.co_name)} ({os.path.basename(code.co_filename)})"


def sample_stacks(seconds: float, interval: float) -> tuple[Counter[str], str]:
    """Folded stacks (``thread;outermost;...;innermost``) of every other thread of this process, sampled every
    ``interval`` seconds for ``seconds``, and their unit.

    A CPU profile where Linux tells each thread's CPU time (``/proc/self/task/<tid>/stat``): a sample weighs
    the milliseconds of CPU its thread used since the one before (unit ``cpu ms``), so a thread waiting on
    its socket weighs nothing. (Asking a thread's state would not do: while this thread samples it holds the
    GIL, so every other Python thread is waiting for it.) Elsewhere each sample weighs one (``samples``: wall
    clock, waits included)."""
    me = threading.get_ident()
    folded: Counter[str] = Counter()
    used: dict[int, int] = {}  # thread -> its CPU ticks at the sample before
    cpu = _cpu_ticks(threading.main_thread().native_id) is not None
    ms_per_tick = 1000.0 / os.sysconf("SC_CLK_TCK") if cpu else 0.0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        threads = {t.ident: t for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            thread = threads.get(ident)
            weight = 1.0
            if cpu:
                ticks = _cpu_ticks(thread.native_id) if thread is not None and thread.native_id else None
                if ticks is None:
                    continue
                weight = (ticks - used.get(ident, ticks)) * ms_per_tick
                used[ident] = ticks
                if not weight:
                    continue
            stack = []
            walked: Optional[FrameType] = frame
            while walked is not None:
                stack.append(frame_name(walked))
                walked = walked.f_back
            stack.append(f"thread {thread.name if thread is not None else ident}")
            folded[";".join(reversed(stack))] += round(weight)
        time.sleep(interval)
    return folded, "cpu ms" if cpu else "samples"


def _cpu_ticks(native_id: Optional[int]) -> Optional[int]:
    """User + system CPU clock ticks of one of this process's threads (None: Linux does not say)."""
    try:
        with open(f"/proc/self/task/{native_id}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        return int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)
    except (OSError, IndexError, ValueError):
        return None


def trace_allocations(seconds: float, top: int) -> list[dict]:
    """The ``top`` lines (file, line) that allocated the most memory over ``seconds`` still held at its end,
    largest first: size (bytes), count of blocks, the line's code."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        time.sleep(seconds)
        snapshot = tracemalloc.take_snapshot()
    finally:
        if started:
            tracemalloc.stop()
    snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__),
                                       tracemalloc.Filter(False, __file__)])
    out = []
    for stat in snapshot.statistics("lineno")[:top]:
        where = stat.traceback[0]
        out.append({"file": where.filename, "line": where.lineno, "size": stat.size, "count": stat.count,
                    "code": linecache.getline(where.filename, where.lineno).strip()})
    return out
