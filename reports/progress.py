"""A progress bar for Spark jobs, drawn from the SparkContext's status tracker."""
from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Optional, TextIO

if TYPE_CHECKING:  # pyspark is an extra (squall[reports]): imported where a session starts
    from pyspark.sql import SparkSession

WIDTH = 30


class SparkProgress:
    """Context manager: while open, a thread polls the active stages and redraws
    one line ``[#####.....] step: tasks 12/40`` on ``stream`` (stderr).

    ``step(text)`` names what the report is doing. On a terminal the line is
    redrawn in place; otherwise each step is printed once, so logs stay short.
    Nothing is drawn when ``enabled`` is false.
    """

    def __init__(self, spark: "SparkSession", enabled: bool = True, stream: Optional[TextIO] = None, interval: float = 0.25):
        self._tracker = spark.sparkContext.statusTracker()
        self._stream = stream or sys.stderr
        self._enabled = enabled
        self._interval = interval
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._label = "starting"
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.steps: list = []

    def __enter__(self) -> "SparkProgress":
        if self._enabled and self._tty:
            self._thread = threading.Thread(target=self._run, name="spark-progress", daemon=True)
            self._thread.start()
        return self

    def step(self, label: str) -> None:
        self._label = label
        self.steps.append((label, time.monotonic()))
        if self._enabled and not self._tty:
            print(f"squall: report: {label} ...", file=self._stream, flush=True)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._stream.write("\r" + " " * 79 + "\r")
            self._stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            done, total = self._tasks()
            self._stream.write("\r" + render(self._label, done, total)[:79].ljust(79))
            self._stream.flush()

    def _tasks(self) -> tuple:
        done = total = 0
        for stage_id in self._tracker.getActiveStageIds():
            info = self._tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return done, total


def render(label: str, done: int, total: int) -> str:
    """One progress line: ``[#####.....] label: tasks done/total``."""
    if total <= 0:
        return f"[{'.' * WIDTH}] {label}"
    filled = int(WIDTH * done / total)
    return f"[{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total} tasks: {label}"
