"""The rules of a topology's ``debug/<topology>`` record: dynamic log levels and tuple sampling.

Written once and asked by every side: the client (``squall set-log-level``, ``squall sample``, the UI and
the REST API) changes the record with these functions, and every runtime process reads from it what is in
force for itself (``runtime/debugging.py``). Pure: time is passed in, records are values (each change
returns a new ``schema.Debug``).

- A level or a sampling entry is for one component (the processes of its tasks) or, without one, for
  every process of the topology. An entry for a component wins over the one for all, for that
  component; a process that runs several components (a chain) takes the most verbose of its
  components' levels of a logger (a logger is the process's), while each member samples its own emits.
- An entry ends at its ``expires`` (wall-clock seconds), or never without one; an entry past its
  expiry is not in force, and every change drops those.
- Levels are Python's (``DEBUG INFO WARNING ERROR CRITICAL``); Storm's ``TRACE WARN FATAL`` are taken
  as ``DEBUG WARNING CRITICAL``. The root logger is ``root`` (Storm's ``ROOT`` too).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Iterable, Optional

from squall.errors import SquallError
from squall.idl import schema

ROOT = "root"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_ALIASES = {"TRACE": "DEBUG", "WARN": "WARNING", "FATAL": "CRITICAL"}


class DebugError(SquallError):
    """A debug setting that cannot be applied: one line naming the logger, level, component or value."""


@dataclass(frozen=True)
class LevelRequest:
    """One ``LOGGER=LEVEL[:SECONDS]`` of ``squall set-log-level``."""

    logger: str
    level: str
    seconds: Optional[float]  # None: until reset


@dataclass(frozen=True)
class LevelInForce:
    """A logger's level in one process, and when it reverts (None: never)."""

    level: str
    expires: Optional[float]


def empty() -> schema.Debug:
    return schema.Debug(levels=[], sampling=[])


def level_name(text: str) -> str:
    """The canonical name of a level (case-insensitive; Storm's names taken)."""
    name = text.strip().upper()
    name = _ALIASES.get(name, name)
    if name not in LEVELS:
        raise DebugError(f"unknown log level {text!r}: expected one of {', '.join(LEVELS)} (or TRACE, WARN, FATAL)")
    return name


def logger_name(text: str) -> str:
    """A logger's name as stored: ``root`` for the root logger (``root`` or ``ROOT``)."""
    name = text.strip()
    if name.lower() == ROOT:
        return ROOT
    if not name or any(c.isspace() or c in "=:" for c in name) or name.startswith(".") or name.endswith("."):
        raise DebugError(f"logger name {text!r}: expected a dotted name like squall.runtime or mymodule.MyBolt "
                         f"(or root)")
    return name


def seconds_of(text: str, what: str) -> float:
    """A positive, finite number of seconds (``what`` names it in the message)."""
    try:
        seconds = float(text)
    except ValueError:
        raise DebugError(f"{what}: {text!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise DebugError(f"{what}: expected a positive number of seconds, got {text!r}")
    return seconds


def parse_level(text: str) -> LevelRequest:
    """``LOGGER=LEVEL[:SECONDS]``."""
    logger, sep, rest = text.partition("=")
    if not sep:
        raise DebugError(f"{text!r}: expected LOGGER=LEVEL[:SECONDS] (e.g. root=DEBUG:30)")
    level, colon, seconds = rest.partition(":")
    return LevelRequest(logger_name(logger), level_name(level),
                        seconds_of(seconds, f"{text!r}: SECONDS") if colon else None)


def percent_of(value: object) -> float:
    """A sampling percentage: a number from 0 to 100."""
    try:
        percent = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DebugError(f"percent {value!r} is not a number from 0 to 100") from None
    if isinstance(value, bool) or not 0 <= percent <= 100:
        raise DebugError(f"percent {value!r} is outside 0-100")
    return percent


def live(debug: Optional[schema.Debug], now: float) -> schema.Debug:
    """``debug`` without its entries past their expiry (an empty record for None)."""
    if debug is None:
        return empty()
    return schema.Debug(levels=[e for e in debug.levels if _alive(e.expires, now)],
                        sampling=[s for s in debug.sampling if _alive(s.expires, now)])


def set_levels(debug: Optional[schema.Debug], requests: Iterable[LevelRequest], component: Optional[str],
               now: float) -> schema.Debug:
    """``requests`` in force for ``component`` (None: every process), each replacing the entry of its
    logger for that component."""
    record = live(debug, now)
    for r in requests:
        record.levels = [e for e in record.levels if (e.logger, e.component) != (r.logger, component)]
        record.levels.append(schema.LogLevel(logger=r.logger, level=r.level, component=component,
                                             expires=None if r.seconds is None else now + r.seconds))
    return record


def reset_levels(debug: Optional[schema.Debug], loggers: Iterable[str], component: Optional[str],
                 now: float) -> schema.Debug:
    """The entries of ``loggers`` for ``component`` removed; a logger without one is an error."""
    record = live(debug, now)
    for logger in loggers:
        kept = [e for e in record.levels if (e.logger, e.component) != (logger, component)]
        if len(kept) == len(record.levels):
            where = f"component {component!r}" if component else "every process (without --component)"
            raise DebugError(f"--reset {logger}: no level of logger {logger!r} is set for {where}")
        record.levels = kept
    return record


def set_sampling(debug: Optional[schema.Debug], percent: float, component: Optional[str],
                 seconds: Optional[float], now: float) -> schema.Debug:
    """Sample ``percent`` % of ``component``'s emits (None: every component's), for ``seconds`` (None:
    until turned off)."""
    record = live(debug, now)
    record.sampling = [s for s in record.sampling if s.component != component]
    record.sampling.append(schema.Sampling(percent=percent, component=component,
                                           expires=None if seconds is None else now + seconds))
    return record


def sampling_off(debug: Optional[schema.Debug], component: Optional[str], now: float) -> schema.Debug:
    """No sampling of ``component`` (None: of any component) from now on: its entry removed, and a 0 %
    entry for it while one for every component remains."""
    record = live(debug, now)
    if component is None:
        record.sampling = []
        return record
    record.sampling = [s for s in record.sampling if s.component != component]
    if any(s.component is None for s in record.sampling):
        record.sampling.append(schema.Sampling(percent=0.0, component=component))
    return record


def levels_in_force(debug: Optional[schema.Debug], components: Iterable[str], now: float) -> dict[str, LevelInForce]:
    """logger -> its level in a process running ``components`` (none: not a task's process)."""
    mine = set(components)
    every: dict[str, LevelInForce] = {}
    own: dict[str, LevelInForce] = {}
    for e in live(debug, now).levels:
        found = LevelInForce(e.level, e.expires)
        if e.component is None:
            every[e.logger] = found
        elif e.component in mine:
            held = own.get(e.logger)
            if held is None or _verbosity(found.level) > _verbosity(held.level):
                own[e.logger] = found
    return {**every, **own}


def sampling_percent(debug: Optional[schema.Debug], component: str, now: float,
                     default: float = 0.0) -> float:
    """The percentage of ``component``'s emits sampled: its own entry's, else the one for every
    component, else ``default`` (100 with ``topology.debug``)."""
    every = default
    for s in live(debug, now).sampling:
        if s.component == component:
            return s.percent
        if s.component is None:
            every = s.percent
    return every


def next_expiry(debug: Optional[schema.Debug], now: float) -> Optional[float]:
    """The earliest expiry still to come in ``debug`` (None: none)."""
    record = live(debug, now)
    times = [e.expires for e in record.levels if e.expires is not None]
    times += [s.expires for s in record.sampling if s.expires is not None]
    return min(times, default=None)


def to_json(debug: Optional[schema.Debug], now: float) -> dict:
    """The entries in force, as ``squall show --json``, the UI and the REST API give them."""
    record = live(debug, now)
    return {
        "levels": [{"logger": e.logger, "level": e.level, "component": e.component, "expires": e.expires}
                   for e in sorted(record.levels, key=lambda e: (e.component or "", e.logger))],
        "sampling": [{"component": s.component, "percent": s.percent, "expires": s.expires}
                     for s in sorted(record.sampling, key=lambda s: s.component or "")],
    }


def _alive(expires: Optional[float], now: float) -> bool:
    return expires is None or expires > now


def _verbosity(level: str) -> int:
    return -logging.getLevelName(level)
