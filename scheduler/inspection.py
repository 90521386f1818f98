"""The client of the containers' debug servers (``runtime/debug_server.py``): log search across every
container, stacks and profiles of any task. Used by ``squall logs --grep``, ``squall profile`` and the UI.

Each container's server is found in its record (``ContainerStatus.debug_address``) and is asked with the
topology's secret (its execution state's). A search asks every container at once and merges their
bounded answers, newest first; a stopped topology's run folder on this host is searched directly. Every
input is checked here first, so a bad one is refused in one line before anything is asked.
"""
from __future__ import annotations

import glob
import json
import os
import re
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Optional
from urllib.parse import urlencode

from squall.errors import SquallError
from squall.idl import schema
from squall.log_search import compile_pattern, log_files, parse_since, search
from squall.logical import process_tasks
from squall.scheduler import logs, manager
from squall.state import Kind, StateManager

TIMEOUT_SECS = 30.0  # a search or a stack; a profile adds its own length
DEFAULT_LIMIT = 200  # matches shown unless asked for more
PROFILE_KINDS = ("stacks", "flame", "memory")


class DebugServerUnreachable(SquallError):
    """A container's debug server did not answer (names the container and its address)."""


def _ask(record: schema.ContainerStatus, secret: str, method: str, path: str, body: Optional[dict] = None,
         timeout: float = TIMEOUT_SECS) -> tuple[bytes, str]:
    """(body, content type) of a request to ``record``'s debug server; its error line as a SquallError."""
    if not record.debug_address:
        raise DebugServerUnreachable(f"container {record.container} ({record.host}) has no debug server: its "
                                     "executor predates it (restart the container)")
    request = urllib.request.Request(f"http://{record.debug_address}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {secret}",
                                              "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.read(), reply.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read())["error"]
        except (ValueError, KeyError, TypeError):
            message = f"HTTP {e.code}"
        raise SquallError(message) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise DebugServerUnreachable(f"container {record.container}'s debug server at {record.debug_address} "
                                     f"did not answer: {reason}") from None


def ask_json(record: schema.ContainerStatus, secret: str, method: str, path: str, body: Optional[dict] = None,
              timeout: float = TIMEOUT_SECS) -> dict:
    return json.loads(_ask(record, secret, method, path, body, timeout)[0])


def ask_every_container(state: StateManager, name: str, secret: str, path: str) -> list[tuple]:
    """``(record, answer or None, why it did not answer or None)`` of a GET of ``path`` from every container's
    debug server, asked at once (a slow container does not hold the others back)."""
    records = state.container_records(name)

    def one(record: schema.ContainerStatus) -> tuple:
        try:
            return record, ask_json(record, secret, "GET", path), None
        except DebugServerUnreachable as e:
            return record, None, str(e)

    with ThreadPoolExecutor(max_workers=min(16, max(1, len(records)))) as pool:
        return list(pool.map(one, records))


# ------------------------------------------------------------------------------ log search
def check_component(state: StateManager, name: str, component: Optional[str]) -> None:
    if component is None:
        return
    topology = state.get(Kind.TOPOLOGY, name)
    names = [c.name for c in topology.components] if topology is not None else []
    if topology is not None and component not in names:
        raise SquallError(f"topology {name!r} has no component {component!r} (components: {', '.join(names)})")


def search_logs(state: StateManager, name: str, grep: str, component: Optional[str] = None,
                since: Optional[str] = None, limit: int = DEFAULT_LIMIT) -> dict:
    """``squall logs NAME --grep``: the newest ``limit`` matching lines of every container's logs:
    ``{"topology", "matches": [{"container", "host", "time", "file", "line", "text"}], "total", "truncated",
    "unreachable": [line, ...]}``. ``truncated``: a container or the merge cut what it found."""
    pattern = compile_pattern(grep)
    since_at = parse_since(since, time.time()) if since is not None else None
    if limit < 1:
        raise SquallError(f"--limit {limit}: at least 1")
    check_component(state, name, component)
    execution = state.get(Kind.EXECUTION_STATE, name)
    if execution is None:
        return _search_run_folder(logs.run_dir_of(state, name), name, pattern, component, since_at, limit)
    query = {"grep": grep, "limit": limit, **({"component": component} if component else {}),
             **({"since": since_at} if since_at is not None else {})}
    answers = [answer if answer is not None else {"container": record.container, "unreachable": why}
               for record, answer, why in ask_every_container(state, name, execution.secret,
                                                              "/logs/search?" + urlencode(query))]
    matches = [{"container": a["container"], "host": a["host"], **m} for a in answers for m in a.get("matches", [])]
    return _merged(name, matches, sum(a.get("total", 0) for a in answers),
                   any(a.get("truncated") for a in answers), limit,
                   [a["unreachable"] for a in answers if "unreachable" in a])


def _search_run_folder(run_dir: str, name: str, pattern: re.Pattern, component: Optional[str],
                       since: Optional[float], limit: int) -> dict:
    """A stopped topology's logs, on this host."""
    matches, total, cut = [], 0, False
    for folder in sorted(glob.glob(os.path.join(run_dir, "logs", "container-*"))):
        container = int(folder.rpartition("-")[2]) if folder.rpartition("-")[2].isdigit() else -1
        found = search(log_files(folder, component), pattern, since, limit)
        matches += [{"container": container, "host": None, **m.to_json()} for m in found.matches]
        total, cut = total + found.total, cut or found.truncated
    return _merged(name, matches, total, cut, limit, [])


def _merged(name: str, matches: list[dict], total: int, cut: bool, limit: int, unreachable: list[str]) -> dict:
    matches.sort(key=lambda m: (m["time"] if m["time"] is not None else float("-inf"), m["container"], m["line"]),
                 reverse=True)
    return {"topology": name, "matches": matches[:limit], "total": total, "truncated": cut or len(matches) > limit,
            "unreachable": unreachable}


def search_text(found: dict) -> list[str]:
    """One line per match, newest first: ``c<container> <file>:<line>: <the line>``."""
    return [f"c{m['container']} {os.path.basename(m['file'])}:{m['line']}: {m['text']}" for m in found["matches"]]


def search_notes(found: dict) -> list[str]:
    """What the lines do not say: cut at the limit, containers that did not answer."""
    notes = list(found["unreachable"])
    if found["truncated"]:
        notes.append(f"showing the newest {len(found['matches'])} of {found['total']} matching lines or more "
                     "(each container returns at most squall.debug.search.max.matches): narrow --grep, "
                     "--component or --since, or raise --limit")
    return notes


# --------------------------------------------------------------------------- stacks and profiles
def locate_task(state: StateManager, name: str, task: int) -> tuple[schema.ContainerStatus, schema.ProcessStatus]:
    """The container record and process running ``task`` (a chained task: its chain's process)."""
    manager.running(state, name)
    packing = state.get(Kind.PACKING_PLAN, name)
    tasks = sorted(i.id.task_id for c in packing.containers for i in c.instances) if packing else []
    if task not in tasks:
        raise SquallError(f"topology {name!r} has no task {task} (its tasks: {_ranges(tasks) or 'none'})")
    for record in state.container_records(name):
        for process in record.processes:
            if any(t == task for t, _ in process_tasks(process.name)):
                if not process.pid:
                    raise SquallError(f"task {task} ({process.name}, container {record.container}) is not running: "
                                      "restarting, or past its restart budget (squall show " + name + ")")
                return record, process
    raise SquallError(f"task {task} of topology {name!r} is not running: its container has no live executor "
                      f"(squall show {name})")


def profile(state: StateManager, name: str, task: int, kind: str, seconds: Optional[float] = None) -> dict:
    """``squall profile``: ``stacks`` (``{"text", ...}``), ``flame`` (``{"path", ...}``: an SVG) or ``memory``
    (``{"allocations", "path", ...}``) of ``task``, with ``container`` and ``host`` added."""
    if kind not in PROFILE_KINDS:
        raise SquallError(f"profile kind {kind!r}: one of {', '.join(PROFILE_KINDS)}")
    if kind != "stacks" and (seconds is None or not seconds > 0):
        raise SquallError(f"--{kind} {seconds}: give a number of seconds above 0")
    record, _ = locate_task(state, name, task)
    secret = manager.running(state, name).secret
    if kind == "stacks":
        answer = ask_json(record, secret, "POST", "/stacks", {"task": task})
    else:
        answer = ask_json(record, secret, "POST", "/profile", {"task": task, "kind": kind, "seconds": seconds},
                           timeout=TIMEOUT_SECS + float(seconds or 0))
    return {"topology": name, "container": record.container, "host": record.host, **answer}


def memory_text(answer: dict) -> list[str]:
    rows = [f"{a['size'] / 1024:10.1f} KiB {a['count']:8d}  {a['file']}:{a['line']}  {a['code']}"
            for a in answer["allocations"]]
    return [f"{'held':>14} {'blocks':>8}  where (allocated over {answer['seconds']:g}s, still held)"] + rows


def results(state: StateManager, name: str) -> list[dict]:
    """Every container's kept stacks and profiles, newest first: container, host, name, kind, size, time."""
    execution = manager.running(state, name)
    out = [{"container": record.container, "host": record.host, **r}
           for record, answer, _ in ask_every_container(state, name, execution.secret, "/results")
           if answer is not None for r in answer["results"]]
    return sorted(out, key=lambda r: r["time"], reverse=True)


def result_file(state: StateManager, name: str, container: int, file_name: str) -> tuple[bytes, str]:
    """(bytes, content type) of a kept result of ``container``."""
    execution = manager.running(state, name)
    record = next((r for r in state.container_records(name) if r.container == container), None)
    if record is None:
        raise SquallError(f"topology {name!r} has no running container {container}")
    return _ask(record, execution.secret, "GET", "/result?" + urlencode({"name": file_name}))


def _ranges(numbers: list[int]) -> str:
    """``1-4, 7, 9-10``."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
