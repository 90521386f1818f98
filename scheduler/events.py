"""``squall events``: the sampled emits of a topology (``squall sample``, ``topology.debug``), from every
container's events log (``squall/events_log.py``), oldest first.

A running topology's are asked of each container's debug server (``runtime/debug_server.py``), locally as
on YARN, where each log stays on its container's host; a stopped topology's are read from its run folder.
``--follow`` asks again every ``FOLLOW_POLL_SECS`` for the last ``FOLLOW_LAG_SECS`` and prints what is new.
"""
from __future__ import annotations

import glob
import json
import os
import time
from typing import Callable, Optional, TextIO
from urllib.parse import urlencode

from squall import events_log
from squall.scheduler.inspection import ask_every_container
from squall.scheduler.logs import run_dir_of
from squall.state import Kind, StateManager

FOLLOW_POLL_SECS = 0.5
FOLLOW_LAG_SECS = 5.0  # events written this late after their time are still followed


def read_events(state: StateManager, name: str, component: Optional[str] = None, limit: Optional[int] = None,
                since: Optional[float] = None) -> list[dict]:
    """The newest ``limit`` events of topology ``name`` (of ``component``, written after ``since``), oldest
    first: a running topology's from its containers' debug servers (one that does not answer is skipped:
    its events are not in the answer), else from its newest run folder."""
    execution = state.get(Kind.EXECUTION_STATE, name)
    if execution is None:
        logs = os.path.join(run_dir_of(state, name), "logs")
        files = [f for folder in sorted(glob.glob(os.path.join(logs, "container-*")))
                 for f in events_log.files_in(folder)]
        return events_log.read(files, component, limit, since)
    query = urlencode({k: v for k, v in (("component", component), ("limit", limit), ("since", since))
                       if v is not None})
    found = [e for _, answer, _ in ask_every_container(state, name, execution.secret, "/events?" + query)
             if answer is not None for e in answer["events"]]
    found.sort(key=lambda e: e.get("time", 0))
    return found[-limit:] if limit else found


def event_text(event: dict) -> str:
    """``time component[task] stream id=... values`` on one line."""
    t = event.get("time", 0)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"
    return (f"{stamp} {event['component']}[{event.get('task')}] {event.get('stream')} "
            f"id={json.dumps(event.get('id'))} {json.dumps(event.get('values'))}")


def event_json(event: dict) -> str:
    """One event as a line of JSON (``squall events --json --follow`` prints JSON Lines)."""
    return json.dumps(event)


class Tail:
    """What ``--follow`` prints of each poll: a task writes its sampled emits at its flushes, so each poll asks
    again for the last ``FOLLOW_LAG_SECS`` (``since``) and only what was not printed yet is new."""

    def __init__(self, now: float) -> None:
        self.since = now
        self.printed: dict[str, float] = {}

    def new(self, found: list[dict], asked: float) -> list[dict]:
        """The events of ``found`` (asked at ``asked`` for those after ``since``) not given before."""
        fresh = []
        for event in found:
            key = json.dumps(event, sort_keys=True)
            if key not in self.printed:
                self.printed[key] = event.get("time", 0)
                fresh.append(event)
        self.since = max(self.since, asked - FOLLOW_LAG_SECS)
        self.printed = {k: t for k, t in self.printed.items() if t > self.since}
        return fresh


def follow(events: Callable[[float], list[dict]], out: TextIO, render: Callable[[dict], str]) -> None:
    """Print the events written from now on, until interrupted (``squall events --follow``): ``events(since)``
    gives those written after ``since``."""
    tail = Tail(time.time())
    while True:
        time.sleep(FOLLOW_POLL_SECS)
        asked = time.time()
        for event in tail.new(events(tail.since), asked):
            out.write(render(event) + "\n")
        out.flush()
