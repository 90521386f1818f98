"""A runtime process's part in its topology's ``debug/<topology>`` record: the log levels in force for it,
and, in an instance, the sampling of its components' emits.

Every process (executor, topology master, stream manager, metrics manager, instance) keeps one
``DebugSettings`` for its life. It watches the record, reads it once at start (so a process restarted
while a level lasts takes it again) and applies what is in force for its components
(``squall/debugging.py``'s rules): each logger named gets its level, and the level it had before is
remembered, so that a reset, an expiry or a record removed restores it. An expiry is a timer set for the
earliest one to come, not a poll of the process's loop. The callbacks run on the state manager's thread
or the timer's: they set logger levels and hand the sampling percentages to ``on_sampling``, which
swaps methods (``runtime/instance/sampling.py``) and touches no loop state.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable, Iterable, Optional

from squall import debugging
from squall.events_log import EVENTS_FILE
from squall.idl import schema
from squall.state import Kind, StateError, StateManager

log = logging.getLogger(__name__)

SamplingCallback = Callable[[dict[str, float]], None]  # component -> percent of its emits sampled


def events_path(log_dir: str) -> str:
    """The events log of the container whose processes log in ``log_dir`` (``runtime/instance/sampling.py``
    writes it, the executor rotates it; ``squall/events_log.py`` reads it)."""
    return os.path.join(log_dir, EVENTS_FILE)


class LevelKeeper:
    """The levels ``squall set-log-level`` set in this process, and each logger's level before it."""

    def __init__(self) -> None:
        self.before: dict[str, int] = {}  # logger -> its level before the first set (NOTSET: inherited)
        self.applied: dict[str, str] = {}

    def apply(self, wanted: dict[str, str]) -> None:
        """Loggers of ``wanted`` at their levels; the others this keeper set back to their own."""
        for name in sorted(set(self.applied) - set(wanted)):
            _logger(name).setLevel(self.before.pop(name))
            del self.applied[name]
            log.info("log level of %s reverted to %s", name, logging.getLevelName(_logger(name).level))
        for name, level in sorted(wanted.items()):
            if self.applied.get(name) == level:
                continue
            logger = _logger(name)
            self.before.setdefault(name, logger.level)
            logger.setLevel(level)
            self.applied[name] = level
            log.info("log level of %s set to %s", name, level)


class DebugSettings:
    """Applies ``debug/<topology>`` in this process, for ``components`` (none: not a task's process)."""

    def __init__(self, state: StateManager, topology: str, components: Iterable[str] = (),
                 on_sampling: Optional[SamplingCallback] = None, default_percent: float = 0.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.state, self.topology = state, topology
        self.components = tuple(components)
        self.on_sampling = on_sampling
        self.default_percent = default_percent  # 100 with topology.debug
        self.clock = clock
        self.levels = LevelKeeper()
        self.percents: Optional[dict[str, float]] = None
        self.record: Optional[schema.Debug] = None
        self._lock = threading.Lock()
        self._timer: Optional[threading.Timer] = None
        self._cancel: Callable[[], None] = lambda: None
        self._closed = False

    def start(self) -> "DebugSettings":
        """Watch the record, then read it (a change in between is applied twice, which is harmless). A
        state manager out of reach leaves the levels as they are, logged."""
        try:
            self._cancel = self.state.watch(Kind.DEBUG, self.topology, self.on_record)
            record = self.state.get(Kind.DEBUG, self.topology)
        except StateError as e:
            log.warning("debug settings of %s not watched: %s", self.topology, e)
            record = None
        self.on_record(record)
        return self

    def on_record(self, record: Optional[schema.Debug]) -> None:
        """The record changed (None: removed)."""
        with self._lock:
            self.record = record
        self.apply()

    def apply(self) -> None:
        """What is in force now, and a timer for the next expiry."""
        with self._lock:
            if self._closed:
                return
            now = self.clock()
            record = self.record
            wanted = debugging.levels_in_force(record, self.components, now)
            self.levels.apply({name: found.level for name, found in wanted.items()})
            percents = {c: debugging.sampling_percent(record, c, now, self.default_percent)
                        for c in self.components}
            if self.on_sampling is not None and percents != self.percents:
                self.on_sampling(percents)
            self.percents = percents
            self._schedule(debugging.next_expiry(record, now), now)

    def _schedule(self, at: Optional[float], now: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if at is None:
            return
        self._timer = threading.Timer(max(0.0, at - now) + 0.01, self.apply)
        self._timer.daemon = True
        self._timer.name = "debug-expiry"
        self._timer.start()

    def close(self) -> None:
        """Stop watching (idempotent); the levels stay as they are for the rest of the process's life."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
        self._cancel()


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == debugging.ROOT else logging.getLogger(name)
