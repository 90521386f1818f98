"""``squall events``: the sampled emits of a topology (``squall sample``, ``topology.debug``), read from
every container's events log (``runtime/instance/sampling.py`` writes them), oldest first.

Locally the containers' log folders are under the run folder. On a cluster whose containers run on
other hosts (YARN) each container's events log is where its logs are: ``remote_events`` is the one
place that would read it from the container's own log server, and says so until there is one.
"""
from __future__ import annotations

import glob
import json
import os
import time
from typing import Callable, Optional, TextIO

from squall.errors import SquallError
from squall.scheduler.logs import run_dir_of
from squall.state import Kind, StateManager

EVENTS_FILE = "events.log"  # as runtime/debugging.py names it (the runtime's layer is not imported here)
FOLLOW_POLL_SECS = 0.5
MAX_BACKUPS = 100  # rotated copies looked for (squall.log.backups keeps fewer)


def event_files(state: StateManager, name: str) -> list[str]:
    """Every container's events log of topology ``name`` (its rotated copies too, oldest first)."""
    execution = state.get(Kind.EXECUTION_STATE, name)
    if execution is not None and execution.cluster != "local":
        return remote_events(state, name)
    logs = os.path.join(run_dir_of(state, name), "logs")
    files = []
    for current in sorted(glob.glob(os.path.join(logs, "container-*", EVENTS_FILE))):
        rotated = [f"{current}.{k}" for k in range(MAX_BACKUPS, 0, -1) if os.path.exists(f"{current}.{k}")]
        files += rotated + [current]
    return files


def remote_events(state: StateManager, name: str) -> list[str]:
    """The hook for containers on other hosts: each one's events log is in the log folder of its container
    record (``ContainerStatus.processes[].log_file``), served by the container itself."""
    folders = sorted({os.path.dirname(p.log_file) for r in state.container_records(name) for p in r.processes})
    raise SquallError(f"topology {name!r} runs on {state.get(Kind.EXECUTION_STATE, name).cluster}: its events logs "
                      f"are in its containers' log folders ({', '.join(folders) or 'none registered'}), which this "
                      f"version cannot read remotely")


def parse(line: str) -> Optional[dict]:
    """One event of a line, or None for a line that is not one (cut in two by a rotation)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and "component" in event else None


def read_events(files: list[str], component: Optional[str] = None, limit: Optional[int] = None) -> list[dict]:
    """The events of ``files`` (of ``component`` only when given), oldest first; the newest ``limit``."""
    events = []
    for path in files:
        try:
            with open(path, errors="replace") as f:
                events += [e for e in map(parse, f) if e is not None and component in (None, e["component"])]
        except FileNotFoundError:  # rotated away meanwhile
            continue
    events.sort(key=lambda e: e.get("time", 0))
    return events[-limit:] if limit else events


def event_text(event: dict) -> str:
    """``time component[task] stream id=... values`` on one line."""
    t = event.get("time", 0)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"
    return (f"{stamp} {event['component']}[{event.get('task')}] {event.get('stream')} "
            f"id={json.dumps(event.get('id'))} {json.dumps(event.get('values'))}")


def event_json(event: dict) -> str:
    """One event as a line of JSON (``squall events --json --follow`` prints JSON Lines)."""
    return json.dumps(event)


class Follower:
    """The events appended to the current events logs (``files()``, asked again at each ``poll``: a new
    container's) since it was made; a line still being written is read once it is whole."""

    def __init__(self, files: Callable[[], list[str]], component: Optional[str]) -> None:
        self.files, self.component = files, component
        self.offsets = {path: _size(path) for path in files() if not _rotated(path)}

    def poll(self) -> list[dict]:
        found = []
        for path in self.files():
            if not _rotated(path):
                found += self._appended(path)
        return found

    def _appended(self, path: str) -> list[dict]:
        offset = self.offsets.get(path, 0)
        if _size(path) < offset:  # rotated (copied and truncated): read it from its start again
            offset = 0
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offsets[path] = offset + end
        events = map(parse, data[:end].decode(errors="replace").splitlines())
        return [e for e in events if e is not None and self.component in (None, e["component"])]


def follow(files: Callable[[], list[str]], component: Optional[str], out: TextIO,
           render: Callable[[dict], str]) -> None:
    """Print the events written from now on, until interrupted (``squall events --follow``)."""
    follower = Follower(files, component)
    while True:
        time.sleep(FOLLOW_POLL_SECS)
        for event in follower.poll():
            out.write(render(event) + "\n")
        out.flush()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _rotated(path: str) -> bool:
    return not path.endswith(EVENTS_FILE)
