"""The client side of ``debug/<topology>``: ``squall set-log-level``, ``squall sample``, the UI and the REST
API change the record here; every process of the topology watches it (``runtime/debugging.py``).

Each change is checked whole before anything is written (a running topology, its components, the
levels, percent and seconds: ``squall/debugging.py``), so a refused one leaves the record as it was.
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

from squall import debugging
from squall.debugging import DebugError
from squall.idl import schema
from squall.scheduler.manager import running
from squall.state import Kind, StateManager


def components_of(state: StateManager, name: str) -> list[str]:
    """The components of running topology ``name``."""
    running(state, name)
    topology = state.get(Kind.TOPOLOGY, name)
    return [c.name for c in topology.components] if topology is not None else []


def check_component(state: StateManager, name: str, component: Optional[str]) -> None:
    known = components_of(state, name)
    if component is not None and component not in known:
        raise DebugError(f"unknown component {component!r} of topology {name!r}: it has {', '.join(known)}")


def set_log_levels(state: StateManager, name: str, levels: Sequence[str], resets: Sequence[str],
                   component: Optional[str] = None, now: Optional[float] = None) -> schema.Debug:
    """``LOGGER=LEVEL[:SECONDS]`` of ``levels`` set and the loggers of ``resets`` reset, for ``component``
    (None: every process); the record written."""
    if not levels and not resets:
        raise DebugError("give LOGGER=LEVEL[:SECONDS] (e.g. root=DEBUG:30) or --reset LOGGER")
    check_component(state, name, component)
    requests = [debugging.parse_level(text) for text in levels]
    loggers = [debugging.logger_name(text) for text in resets]
    now = time.time() if now is None else now
    record = state.get(Kind.DEBUG, name)
    record = debugging.reset_levels(record, loggers, component, now)
    record = debugging.set_levels(record, requests, component, now)
    state.put(Kind.DEBUG, name, record)
    return record


def set_sampling(state: StateManager, name: str, percent: Optional[object], component: Optional[str] = None,
                 seconds: Optional[object] = None, off: bool = False, now: Optional[float] = None) -> schema.Debug:
    """Sample ``percent`` % of ``component``'s emits (None: every component's) for ``seconds`` (None: until
    turned off), or with ``off`` stop sampling them; the record written."""
    if off == (percent is not None):
        raise DebugError("give --percent P (0-100) or --off")
    if off and seconds is not None:
        raise DebugError("--seconds: only with --percent")
    check_component(state, name, component)
    now = time.time() if now is None else now
    record = state.get(Kind.DEBUG, name)
    if off:
        record = debugging.sampling_off(record, component, now)
    else:
        lasting = None if seconds is None else debugging.seconds_of(str(seconds), "--seconds")
        record = debugging.set_sampling(record, debugging.percent_of(percent), component, lasting, now)
    state.put(Kind.DEBUG, name, record)
    return record


def debug_view(state: StateManager, name: str, now: Optional[float] = None) -> dict:
    """The levels and sampling in force (``squall show``, the UI, the REST API)."""
    now = time.time() if now is None else now
    return debugging.to_json(state.get(Kind.DEBUG, name), now)


def debug_lines(view: dict) -> list[str]:
    """``debug_view`` as text: one line per level and sampling in force, with when it reverts."""
    def until(expires: Optional[float], forever: str) -> str:
        return forever if expires is None else \
            f"until {time.strftime('%H:%M:%S', time.localtime(expires))} ({max(0.0, expires - time.time()):.0f}s)"

    lines = [f"{e['logger']}={e['level']} in {_where(e['component'])} {until(e['expires'], 'until reset')}"
             for e in view["levels"]]
    lines += [f"sampling {s['percent']:g}% of the emits of {s['component'] or 'every component'} "
              f"{until(s['expires'], 'until --off')}" for s in view["sampling"]]
    return lines


def _where(component: Optional[str]) -> str:
    return f"component {component}" if component else "every process"
