"""A container's events log: the sampled emits its tasks write (``runtime/instance/sampling.py``), one JSON
object a line, in ``events.log`` of the container's log folder, rotated by its executor like the logs.

Read by the container's debug server (``runtime/debug_server.py``: on YARN the log stays where it is) and,
for a stopped topology, from the run folder (``scheduler/events.py``): both with ``read``.
"""
from __future__ import annotations

import glob
import json
import os
from typing import Optional

EVENTS_FILE = "events.log"


def files_in(log_dir: str) -> list[str]:
    """The events log of the container logging in ``log_dir`` and its rotated copies, oldest first."""
    current = os.path.join(log_dir, EVENTS_FILE)
    rotated = [p for p in glob.glob(current + ".*") if p[len(current) + 1:].isdigit()]  # .1 the newest
    return sorted(rotated, key=lambda p: -int(p[len(current) + 1:])) + ([current] if os.path.exists(current) else [])


def parse(line: str) -> Optional[dict]:
    """One event of a line, or None for a line that is not one (cut in two by a rotation, or being written)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and "component" in event else None


def read(files: list[str], component: Optional[str] = None, limit: Optional[int] = None,
         since: Optional[float] = None) -> list[dict]:
    """The events of ``files`` (of ``component`` only, written after ``since`` only, when given), oldest
    first; the newest ``limit``."""
    events = []
    for path in files:
        try:
            with open(path, errors="replace") as f:
                events += [e for e in map(parse, f) if e is not None and component in (None, e["component"])
                           and (since is None or e.get("time", 0) > since)]
        except FileNotFoundError:  # rotated away meanwhile
            continue
    events.sort(key=lambda e: e.get("time", 0))
    return events[-limit:] if limit else events
