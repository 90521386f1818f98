"""Exceptions raised in a task's user code, kept for its metrics rows.

A task's instance holds one ``UserErrors``. Where the runtime already catches
an exception from user code (a bolt's ``process()`` under ``auto_fail``, a
chain member's ``process()``, a user metric, the exception that ends the
task), it calls ``record`` inside the ``except`` block. The next metrics row
carries what was recorded in its bucket in ``user`` (``report``):
``__errors``, a list of ``{"time", "where", "error", "traceback"}`` (at most
``PER_BUCKET`` of them: a bolt that raises on every tuple formats a few
tracebacks a bucket, not one per tuple) and ``__error-count`` (every error
of the bucket, kept or not). The topology master keeps each task's last
errors from those rows (``runtime/metrics_store.py``); the metrics files keep
them all.
"""
from __future__ import annotations

import sys
import time
import traceback

from squall.metrics_schema import ERROR_COUNT, ERRORS

PER_BUCKET = 5  # errors a task formats and reports per metrics bucket; the rest are only counted
TRACEBACK_FRAMES = 6  # the innermost frames kept: the user's code, not the runtime's loop around it
TEXT_LIMIT = 2000  # characters of the error line and of the traceback kept
UNCAUGHT = "uncaught: the task exited"  # where an exception that ended its task (or its chain) was raised
CHECKPOINT_STORAGE = "checkpoint storage (a runtime failure, not the user's code)"  # a save or load that failed


class UserErrors:
    """The errors of one task's current bucket."""

    __slots__ = ("kept", "count")

    def __init__(self) -> None:
        self.kept: list = []
        self.count = 0

    def record(self, where: str) -> None:
        """The exception being handled (call it in an ``except`` block) was raised in user code at
        ``where`` (``"process()"``, ``"next_tuple()"``, ...)."""
        self.count += 1
        if len(self.kept) >= PER_BUCKET:
            return
        kind, error, tb = sys.exc_info()
        if error is None:
            return
        frames = traceback.format_tb(tb)[-TRACEBACK_FRAMES:]
        self.kept.append({
            "time": time.time(),
            "where": where,
            "error": "".join(traceback.format_exception_only(kind, error)).strip()[:TEXT_LIMIT],
            "traceback": "".join(frames)[-TEXT_LIMIT:],
        })

    def problem(self, where: str, error: str) -> None:
        """A component's own report of a problem it handled (``Component.report_error``: a broker that
        does not answer), kept as an error without a traceback."""
        self.count += 1
        if len(self.kept) < PER_BUCKET:
            self.kept.append({"time": time.time(), "where": where, "error": error[:TEXT_LIMIT], "traceback": ""})

    def runtime_failure(self, where: str, error: str) -> None:
        """A failure of the runtime under the task (``CHECKPOINT_STORAGE``: its checkpoint storage), shown
        with the task's errors where one looks for them, under a ``where`` that says it is not the user's
        code, and without a traceback into the runtime."""
        self.problem(where, error)

    def report(self, user: dict) -> None:
        """Add the bucket's errors to a metrics row's ``user`` dict, and start a new bucket."""
        if self.count:
            user[ERRORS] = self.kept
            user[ERROR_COUNT] = self.count
            self.kept = []
            self.count = 0

