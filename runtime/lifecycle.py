"""One lifecycle for the roles' background work (topology master, stream manager, metrics manager).

A role process runs an asyncio loop plus a few background tasks (heartbeat
checks, the state writer, timers, reconnecting). Each
role holds one ``Lifecycle``:

- ``status``: RUNNING until it is asked to stop (SIGTERM, ``stop()``) or a
  critical task dies; STOPPING from then on (the one spelling of "stopping"
  across roles: ``lifecycle.stopping``); STOPPED once its tasks are closed.
- ``spawn(coro, name)``: a critical task. One that ends by raising is never
  left dead unnoticed: the exception is logged with its traceback, the role
  is stopped (it closes as on SIGTERM), and ``serve_role`` returns exit status 1, so its executor
  restarts the process (STYLE.md: fail hard on a broken invariant). Work
  whose failure is harmless (one metrics send) is spawned with
  ``critical=False``: its failure is only logged.
- ``close()``: cancel and await every task still running (idempotent).
"""
from __future__ import annotations

import asyncio
import enum
import logging
import signal
import threading
from typing import Awaitable, Callable, Coroutine, Optional, Set

log = logging.getLogger(__name__)

FAILED_EXIT = 1  # a critical task died: the executor restarts the process


class Status(enum.Enum):
    RUNNING = "running"
    STOPPING = "stopping"  # asked to stop, or a critical task died: no new work, closing
    STOPPED = "stopped"  # every task closed


class Lifecycle:
    """The status, the stop signal and the critical background tasks of one role process."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.status = Status.RUNNING
        self.failure: Optional[str] = None  # the critical task that died, and its exception
        self.stop_requested = threading.Event()  # for threads (e.g. ``Election.acquire(stop)``)
        self._stop_requested = asyncio.Event()  # for the loop
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._tasks: Set[asyncio.Task] = set()

    @property
    def stopping(self) -> bool:
        """Asked to stop (or failed): no new work, no reconnecting."""
        return self.status is not Status.RUNNING

    @property
    def exit_status(self) -> int:
        return FAILED_EXIT if self.failure is not None else 0

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The role's loop (call on it, before ``spawn``); a stop asked before is kept."""
        self._loop = loop
        if self.stop_requested.is_set():
            self._stop_requested.set()

    def stop(self) -> None:
        """Ask the role to stop; idempotent, from any thread or a signal handler."""
        if self.status is Status.RUNNING:
            self.status = Status.STOPPING
        self.stop_requested.set()
        loop = self._loop
        if loop is None:
            return  # bind() passes it on
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._stop_requested.set()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self._stop_requested.set)

    async def wait_stopping(self) -> None:
        """Until the role is asked to stop (or a critical task died)."""
        await self._stop_requested.wait()

    def spawn(self, coro: Coroutine[object, object, object], name: str, critical: bool = True) -> asyncio.Task:
        """Run ``coro`` on the role's loop; a critical one that raises stops the role with exit status 1."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self._task_done if critical else _log_failure)
        return task

    def _task_done(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self.fail(task.get_name(), error)

    def fail(self, name: str, error: BaseException) -> None:
        """Critical work ``name`` died with ``error``: log it, stop the role, exit non-zero."""
        log.error("%s: critical task %r died: %r; closing, to exit with status %d so that the executor restarts "
                  "it", self.role, name, error, FAILED_EXIT, exc_info=error)
        if self.failure is None:
            self.failure = f"{name}: {error!r}"
        self.stop()

    async def close(self) -> None:
        """Cancel every task still running and wait for them (idempotent)."""
        if self.status is Status.RUNNING:
            self.status = Status.STOPPING
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.status = Status.STOPPED


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %r failed", task.get_name(), exc_info=task.exception())


def serve_role(lifecycle: Lifecycle, serve: Callable[[], Awaitable[None]]) -> int:
    """Run a role's ``serve()`` on a new loop, SIGTERM and SIGINT stopping it; its exit status: 1 when a
    critical task died, else 0 (an exception out of ``serve`` itself propagates)."""
    loop = asyncio.new_event_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lifecycle.stop)

    async def main() -> None:
        lifecycle.bind(asyncio.get_running_loop())
        try:
            await serve()
        finally:
            await lifecycle.close()

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    if lifecycle.failure is not None:
        log.error("%s stopped: critical task %s", lifecycle.role, lifecycle.failure)
    else:
        log.info("%s stopped", lifecycle.role)
    return lifecycle.exit_status
