"""One restart policy for processes (restarted by their executor) and containers
(restarted by their scheduler): a budget of restarts within a sliding window,
with a doubling backoff.

A process that crashes once an hour is restarted for ever; one that crashes
``squall.restart.max`` + 1 times within ``squall.restart.window.secs`` is given
up on, and its topology fails with the reason.

``RetryPolicy`` is the other half: how a process retries what it needs (an
instance reaching its restarted stream manager) before it gives up and exits.
"""
from __future__ import annotations

import collections
import logging
import os
import signal
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class RestartPolicy:
    max_restarts: int
    window: float
    backoff: float
    backoff_max: float

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "RestartPolicy":
        return cls(int(config["squall.restart.max"]), float(config["squall.restart.window.secs"]),
                   float(config["squall.restart.backoff.secs"]), float(config["squall.restart.backoff.max.secs"]))

    def describe(self) -> str:
        return f"{self.max_restarts} restarts within {self.window:g}s"


class RestartBudget:
    """The restarts of one process or container, against a policy."""

    def __init__(self, policy: RestartPolicy):
        self.policy = policy
        self._times: collections.deque = collections.deque()

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
