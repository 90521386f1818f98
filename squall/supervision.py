"""Supervision, written once: the executor supervises the processes of its
container with it, the local supervisor the executors of its topology, and
the YARN application driver applies its restart budget to YARN's relaunches.

The restart policy: a budget of restarts within a sliding window, with a
doubling backoff.

A process that crashes once an hour is restarted for ever; one that crashes
``squall.restart.max`` + 1 times within ``squall.restart.window.secs`` is given
up on, and its topology fails with the reason.

``Supervision`` is the pure model (no processes, no clock): the wanted names,
the restart budget and the deadlines in (``want``, ``started``, ``exited``,
``retire``, the time), ``Start`` / ``Terminate`` / ``Kill`` actions out
(``actions``). Its rules:

- a wanted name is started; when its process exits it is started again after
  the policy's backoff, unless it is past its budget: then it is *failed*,
  with the reason, and never started again (``free_clean_exit``: an exit with
  status 0 is a requested restart, at once and not counted);
- a name that is no longer wanted is *leaving*: it is not restarted; the shell
  says when it gets SIGTERM (``retire``: at once, or after a drain), and it
  gets SIGKILL ``grace`` seconds after SIGTERM; a leaving name that is wanted
  again keeps its process;
- a process already running when supervision starts (a restarted supervisor
  resuming) is adopted with ``started``, not started twice.

``stop_processes`` is the one SIGTERM-wait-SIGKILL routine, for stopping
everything at once (an executor's shutdown, a kill).

``RetryPolicy`` is the other half: how a process retries what it needs (an
instance reaching its restarted stream manager) before it gives up and exits.
"""
from __future__ import annotations

import collections
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Callable, Collection, Generic, Iterable, Mapping, NamedTuple, Optional, Sequence, TypeVar, Union

import psutil

log = logging.getLogger(__name__)
T = TypeVar("T")
P = TypeVar("P")  # the shell's handle of a process: the model stores it, never touches it


@dataclass(frozen=True)
class RestartPolicy:
    max_restarts: int
    window: float
    backoff: float
    backoff_max: float

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> "RestartPolicy":
        return cls(int(str(config["squall.restart.max"])), float(str(config["squall.restart.window.secs"])),
                   float(str(config["squall.restart.backoff.secs"])),
                   float(str(config["squall.restart.backoff.max.secs"])))

    def describe(self) -> str:
        return f"{self.max_restarts} restarts within {self.window:g}s"


class RestartBudget:
    """The restarts of one process or container, against a policy."""

    def __init__(self, policy: RestartPolicy, times: Iterable[float] = ()):
        self.policy = policy
        self._times: collections.deque[float] = collections.deque(sorted(times))

    def times(self) -> list[float]:
        """When the restarts within the window happened (to carry the budget over to a new supervisor)."""
        return list(self._times)

    def restarts(self, now: float) -> int:
        """Restarts within the window ending at ``now``."""
        while self._times and self._times[0] <= now - self.policy.window:
            self._times.popleft()
        return len(self._times)

    def on_exit(self, now: float) -> Optional[float]:
        """It died at ``now``: the delay before restarting it, or None when it is past its budget."""
        used = self.restarts(now)
        if used >= self.policy.max_restarts:
            return None
        self._times.append(now)
        return min(self.policy.backoff * (2 ** used), self.policy.backoff_max)


class Start(NamedTuple):
    unit: "Supervised"


class Terminate(NamedTuple):
    """Send SIGTERM: it leaves."""

    unit: "Supervised"


class Kill(NamedTuple):
    """Send SIGKILL: it ignored SIGTERM for the grace period."""

    unit: "Supervised"


Action = Union[Start, Terminate, Kill]


@dataclass(eq=False)
class Supervised(Generic[P]):
    """One supervised name and what is known of its process."""

    name: str
    budget: RestartBudget
    process: Optional[P] = None  # the shell's handle; None: not running
    started_at: float = 0.0
    next_start: float = 0.0
    crashes: int = 0
    last_exit: Optional[int] = None
    failure: Optional[str] = None  # past its budget: never started again
    leaving: bool = False
    label: Optional[str] = None  # the shell's reason it leaves (the executor: the plan it left with)
    stop_at: Optional[float] = None  # leaving: SIGTERM at this time; None: the shell has not said yet
    kill_at: Optional[float] = None  # SIGTERM sent: SIGKILL at this time

    @property
    def running(self) -> bool:
        return self.process is not None


@dataclass
class Supervision(Generic[P]):
    """The pure supervision model (module docstring)."""

    policy: RestartPolicy
    grace: float
    free_clean_exit: bool = False
    units: dict[str, Supervised[P]] = field(default_factory=dict)  # wanted, by name
    leaving: list[Supervised[P]] = field(default_factory=list)

    def want(self, names: Collection[str], now: float) -> list[Supervised[P]]:
        """The wanted names are ``names`` from now on: new ones are due to start; the ones no longer wanted
        leave (returned; each stays running until ``retire`` says when it is stopped)."""
        for name in names:
            if name in self.units:
                continue
            back = next((u for u in self.leaving if u.name == name and u.running), None)
            if back is not None:  # wanted again before it left: its process stays
                self.leaving.remove(back)
                back.leaving, back.label, back.stop_at, back.kill_at = False, None, None, None
                self.units[name] = back
            else:
                self.units[name] = Supervised(name, RestartBudget(self.policy), next_start=now)
        gone = [u for n, u in self.units.items() if n not in names]
        for u in gone:
            del self.units[u.name]
            u.leaving = True
            if u.running:
                self.leaving.append(u)
        return [u for u in gone if u.running]

    def retire(self, unit: Supervised[P], stop_at: float, label: Optional[str] = None) -> None:
        """A leaving ``unit`` gets SIGTERM at ``stop_at`` (earlier calls may bring it forward, never back)."""
        unit.stop_at = stop_at if unit.stop_at is None else min(unit.stop_at, stop_at)
        if label is not None:
            unit.label = label

    def started(self, unit: Supervised[P], process: P, now: float) -> None:
        """``unit`` runs as ``process`` (started by the shell, or adopted)."""
        unit.process, unit.started_at = process, now

    def exited(self, unit: Supervised[P], code: Optional[int], now: float) -> None:
        """``unit``'s process exited with ``code`` (None: unknown, an adopted process): a leaving unit is
        gone; a wanted one is started again after its backoff, or failed past its budget."""
        unit.process, unit.kill_at = None, None
        if unit.leaving:
            if unit in self.leaving:
                self.leaving.remove(unit)
            return
        if code == 0 and self.free_clean_exit:
            unit.next_start = now
            return
        unit.crashes += 1
        unit.last_exit = code
        delay = unit.budget.on_exit(now)
        if delay is None:
            unit.failure = (f"{unit.name} exited with {'an unknown status' if code is None else code}, "
                            f"past its restart budget ({self.policy.describe()})")
        else:
            unit.next_start = now + delay

    def actions(self, now: float) -> list[Action]:
        """What is due at ``now``: starts, SIGTERMs and SIGKILLs (each given once)."""
        out: list[Action] = [Start(u) for u in self.units.values()
                             if not u.running and u.failure is None and now >= u.next_start]
        for u in self.leaving:
            if u.kill_at is not None:
                if now >= u.kill_at:
                    u.kill_at = float("inf")
                    out.append(Kill(u))
            elif u.stop_at is not None and now >= u.stop_at:
                u.kill_at = now + self.grace
                out.append(Terminate(u))
        return out

    def running(self) -> list[Supervised[P]]:
        """Every unit with a process, wanted or leaving."""
        return [u for u in self.units.values() if u.running] + list(self.leaving)

    @property
    def failure(self) -> Optional[str]:
        """The first failure (by name), if any unit is past its budget."""
        return next((u.failure for _, u in sorted(self.units.items()) if u.failure is not None), None)


def stop_processes(processes: Sequence[psutil.Process], grace: float, group: bool = False) -> None:
    """SIGTERM each process (``group``: its process group), wait up to ``grace`` seconds for all of them
    (``psutil.wait_procs``, which also reaps our children), SIGKILL the ones still there.

    Give ``psutil.Popen`` for children of ours: its ``returncode`` is kept current."""
    processes = list(processes)
    _send(processes, signal.SIGTERM, group)
    alive = _wait_exited(processes, grace)
    if not alive:
        return
    log.warning("pids %s ignored SIGTERM for %.1fs; killing them", [p.pid for p in alive], grace)
    _send(alive, signal.SIGKILL, group)
    alive = _wait_exited(alive, 5.0)
    if alive:
        log.error("pids %s survived SIGKILL for 5s", [p.pid for p in alive])


EXIT_POLL_SECS = 0.05


def _wait_exited(processes: Sequence[psutil.Process], timeout: float) -> list[psutil.Process]:
    """``psutil.wait_procs`` (which reaps our children) for up to ``timeout`` seconds; the processes still
    running. A zombie has exited: psutil would wait on until its parent reaps it, and a daemon whose launcher
    is gone (a supervisor, a keeper, an adopted executor) is init's to reap, on init's own schedule (a
    container's init may take seconds)."""
    deadline = time.monotonic() + timeout
    alive = list(processes)
    while True:
        _, alive = psutil.wait_procs(alive, timeout=max(0.0, min(EXIT_POLL_SECS, deadline - time.monotonic())))
        alive = [p for p in alive if not _exited(p)]
        if not alive or time.monotonic() >= deadline:
            return alive


def _exited(process: psutil.Process) -> bool:
    """Gone, or a zombie: reaped here if it is our child (a ``psutil.Popen`` keeps its returncode)."""
    try:
        if process.status() != psutil.STATUS_ZOMBIE:
            return False
        process.wait(0)
    except psutil.TimeoutExpired:
        pass  # another's child: its parent reaps it
    except psutil.NoSuchProcess:
        pass
    return True


def _send(processes: Iterable[psutil.Process], signum: int, group: bool) -> None:
    for p in processes:
        try:
            if group:
                try:
                    pgid = os.getpgid(p.pid)
                except ProcessLookupError:
                    pgid = p.pid  # the leader is gone; its group may not be (a session leader's pgid is its pid)
                os.killpg(pgid, signum)
            else:
                p.send_signal(signum)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass


def log_tail(path: str, lines: int = 12) -> str:
    """The last ``lines`` lines of a log file ("" if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


@dataclass(frozen=True)
class RetryPolicy:
    """Retrying one thing (a connection) until a deadline: waits of ``first`` seconds, multiplied by
    ``factor`` after each attempt up to ``longest``, for at most ``deadline`` seconds in all."""

    deadline: float
    first: float = 0.1
    factor: float = 2.0
    longest: float = 2.0

    def run(self, attempt: Callable[[], T], retryable: type, what: str,
            sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> T:
        """``attempt()`` until it returns; a ``retryable`` error is retried until the deadline, then
        ``retryable`` is raised again naming ``what``, how long was tried and the last error."""
        start = clock()
        wait = self.first
        tries = 0
        while True:
            tries += 1
            try:
                return attempt()
            except retryable as e:
                elapsed = clock() - start
                if elapsed + wait > self.deadline:
                    raise retryable(f"{what}: gave up after {tries} attempts in {elapsed:.1f}s: {e}") from e
                log.info("%s: %s; retrying in %.1fs", what, e, wait)
            sleep(wait)
            wait = min(wait * self.factor, self.longest)


def die_with_parent() -> None:
    """Linux: get SIGTERM when the parent (the executor) dies, so nothing outlives it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl
        os.kill(os.getpid(), signal.SIGTERM)
