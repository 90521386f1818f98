"""An instance process tells its executor when every task in it is initialized: one byte on a pipe.

Instances register with their stream manager before they run user code (``initialize`` needs the
physical plan), so a complete physical plan does not say that the user's code came up. The executor
makes a pipe for each instance process it starts and hands it the write end (its fd in
``SQUALL_READY_FD``). The process writes one byte once ``initialize`` returned for each of its tasks,
and the executor records that in the process's status (``ProcessStatus.initialized``), which
``squall submit`` waits for. A process that dies first closes the pipe without the byte.
"""
from __future__ import annotations

import os
from typing import Optional

READY_FD_ENV = "SQUALL_READY_FD"


class ReadyPipe:
    """The executor's end: made before the process starts, read on every round of its loop."""

    def __init__(self) -> None:
        self.read_fd, write_fd = os.pipe()
        self.write_fd: Optional[int] = write_fd
        os.set_blocking(self.read_fd, False)

    def child_env(self) -> dict[str, str]:
        return {**os.environ, READY_FD_ENV: str(self.write_fd)}

    def started(self) -> None:
        """The child has its copy of the write end: only its closing ends the pipe now."""
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None

    def poll(self) -> Optional[bool]:
        """True once the byte came, False once the pipe closed without it, None until either."""
        try:
            data = os.read(self.read_fd, 1)
        except BlockingIOError:
            return None
        return bool(data)

    def close(self) -> None:
        self.started()
        os.close(self.read_fd)


_fd: Optional[int] = None


def take_ready_fd() -> None:
    """At the process's start: the fd its executor gave it, kept here and out of the environment
    (a process the user's code starts does not inherit it)."""
    global _fd
    value = os.environ.pop(READY_FD_ENV, None)
    _fd = int(value) if value else None


def signal_ready() -> None:
    """Every task of this process is initialized (once; a process its executor did not start: nothing)."""
    global _fd
    if _fd is None:
        return
    fd, _fd = _fd, None
    try:
        os.write(fd, b"1")
    except OSError:  # the executor is gone: nobody to tell
        pass
    finally:
        os.close(fd)
