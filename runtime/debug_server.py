"""The container's debug server: its logs searched where they are, and stacks and profiles of its tasks.

A thread of the executor (the standard library's ``ThreadingHTTPServer``: runtime processes do not
depend on a web framework), listening on ``squall.runtime.bind.host``; its address is in the container's
record (``ContainerStatus.debug_address``), where clients find it. Every request carries the topology's
secret as ``Authorization: Bearer <secret>`` (401 without, 403 with another). Answers are JSON; bodies
are read as JSON (at most ``MAX_BODY`` bytes); nothing is unpickled.

- ``GET /logs/search?grep=RE[&component=C][&since=EPOCH][&limit=N]``: ``{"container", "host", "matches":
  [{"time", "file", "line", "text"}], "total", "truncated"}``, newest first, at most
  ``min(N, squall.debug.search.max.matches)`` lines;
- ``POST /stacks {"task": T}``: ``{"task", "process", "pid", "text", "path"}``;
- ``POST /profile {"task": T, "kind": "flame"|"memory", "seconds": S}``: ``{"task", "process", "pid", "path",
  ...}`` (``profiles.flame``, ``profiles.memory``);
- ``GET /results``: ``{"container", "results": [{"name", "kind", "size", "time"}]}``; ``GET /result?name=NAME``:
  that kept result's bytes;
- ``GET /events[?component=C][&limit=N][&since=EPOCH]``: ``{"container", "host", "events": [...]}``, the
  container's sampled emits (``squall/events_log.py``), oldest first, the newest ``N`` written after ``since``.

The executor's loop shares one thing with it: ``tasks``, a mapping it replaces whole when its processes
change (task -> ``profiles.Target``); the server never blocks the loop.
"""
from __future__ import annotations

import hmac
import json
import logging
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator, Mapping, NamedTuple, Optional
from urllib.parse import parse_qs, urlsplit

from squall import events_log
from squall.errors import SquallError
from squall.log_search import compile_pattern, log_files, search
from squall.runtime import profiles
from squall.runtime.profiles import Target

log = logging.getLogger(__name__)

MAX_BODY = 64 * 1024
MAX_EVENTS = 10_000  # sampled emits one answer holds at most
REQUEST_TIMEOUT_SECS = 30.0  # a connection that sends nothing for this long is closed
# how often serve_forever looks for shutdown(): an executor's exit waits for it (the standard library's
# 0.5 s was half of every `squall kill`)
SHUTDOWN_POLL_SECS = 0.05
CONTENT_TYPES = {"svg": "image/svg+xml", "txt": "text/plain; charset=utf-8", "json": "application/json"}


@dataclass(frozen=True)
class ServerSettings:
    container: int
    host: str  # advertised
    secret: str
    log_dir: str
    debug_dir: str
    max_matches: int  # squall.debug.search.max.matches
    profiler: str  # squall.debug.profiler
    interval: float  # squall.debug.sample.interval.ms, in seconds
    max_secs: float  # squall.debug.profile.max.secs


class Reply(NamedTuple):
    status: int
    body: bytes
    content_type: str = "application/json"


class BadRequest(SquallError):
    """A request the server answers with a client error (``status``) and one line."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _json(data: object, status: int = 200) -> Reply:
    return Reply(status, json.dumps(data).encode())


class DebugServer:
    def __init__(self, host: str, settings: ServerSettings):
        self.settings = settings
        self.tasks: Mapping[int, Target] = {}  # replaced whole by the executor's loop
        self._busy: dict[str, threading.Lock] = {}  # process name -> held while it is being profiled
        self._guard = threading.Lock()
        self._http = ThreadingHTTPServer((host, 0), _Handler)
        self._http.daemon_threads = True
        self._http.debug = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._http.serve_forever, args=(SHUTDOWN_POLL_SECS,),
                                        name="debug-server", daemon=True)
        self.routes: dict[tuple[str, str], Callable[[dict, dict], Reply]] = {
            ("GET", "/logs/search"): self.search_logs,
            ("POST", "/stacks"): self.stacks,
            ("POST", "/profile"): self.profile,
            ("GET", "/results"): self.results,
            ("GET", "/result"): self.result,
            ("GET", "/events"): self.events,
        }

    @property
    def address(self) -> str:
        return f"{self.settings.host}:{self._http.server_address[1]}"

    def start(self) -> str:
        self._thread.start()
        log.info("debug server of container %d at %s", self.settings.container, self.address)
        return self.address

    def close(self) -> None:
        if self._thread.is_alive():
            self._http.shutdown()
        self._http.server_close()

    # requests ----------------------------------------------------------------------------
    def answer(self, method: str, path: str, authorization: str, query: dict, body: dict) -> Reply:
        scheme, _, token = authorization.partition(" ")
        if not authorization:
            return _json({"error": "send the topology's secret: Authorization: Bearer <secret>"}, 401)
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self.settings.secret.encode()):
            return _json({"error": "wrong secret: not this topology's"}, 403)
        route = self.routes.get((method, path))
        if route is None:
            known = ", ".join(f"{m} {p}" for m, p in self.routes)
            return _json({"error": f"no {method} {path} here ({known})"}, 404)
        try:
            return route(query, body)
        except BadRequest as e:
            return _json({"error": str(e)}, e.status)
        except profiles.ProfileError as e:
            return _json({"error": str(e)}, 409)

    def search_logs(self, query: dict, body: dict) -> Reply:
        pattern = compile_pattern(_one(query, "grep"))
        component = query.get("component")
        since = _number(query, "since", float)
        limit = min(_number(query, "limit", int) or self.settings.max_matches, self.settings.max_matches)
        found = search(log_files(self.settings.log_dir, component), pattern, since, max(limit, 1))
        return _json({"container": self.settings.container, "host": self.settings.host,
                      "matches": [m.to_json() for m in found.matches], "total": found.total,
                      "truncated": found.truncated, "files": found.files})

    def stacks(self, query: dict, body: dict) -> Reply:
        target, task = self._target(body)
        with self._hold(target):
            text, path = profiles.stacks(target)
        return _json({"task": task, "process": target.name, "pid": target.pid, "text": text, "path": path})

    def profile(self, query: dict, body: dict) -> Reply:
        target, task = self._target(body)
        kind, seconds = body.get("kind"), body.get("seconds")
        if kind not in ("flame", "memory"):
            raise BadRequest(f"kind {kind!r}: flame or memory")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
                or not 0 < seconds <= self.settings.max_secs:
            raise BadRequest(f"seconds {seconds!r}: more than 0 and at most {self.settings.max_secs:g} "
                             "(squall.debug.profile.max.secs)")
        with self._hold(target):
            if kind == "flame":
                done = profiles.flame(target, float(seconds), self.settings.interval, self.settings.profiler)
            else:
                done = profiles.memory(target, float(seconds), int(body.get("top") or 20))
        return _json({"task": task, "process": target.name, "pid": target.pid, "kind": kind, **done})

    def results(self, query: dict, body: dict) -> Reply:
        return _json({"container": self.settings.container, "host": self.settings.host,
                      "results": profiles.results(self.settings.debug_dir)})

    def result(self, query: dict, body: dict) -> Reply:
        name = _one(query, "name")
        path = profiles.result_path(self.settings.debug_dir, name)
        if path is None:
            raise BadRequest(f"container {self.settings.container} keeps no result named {name!r}", 404)
        with open(path, "rb") as f:
            return Reply(200, f.read(), CONTENT_TYPES[name.rpartition(".")[2]])

    def events(self, query: dict, body: dict) -> Reply:
        limit = _number(query, "limit", int)
        found = events_log.read(events_log.files_in(self.settings.log_dir), query.get("component"),
                                max(1, min(limit or MAX_EVENTS, MAX_EVENTS)), _number(query, "since", float))
        return _json({"container": self.settings.container, "host": self.settings.host, "events": found})

    def _target(self, body: dict) -> tuple[Target, int]:
        task = body.get("task")
        if isinstance(task, bool) or not isinstance(task, int):
            raise BadRequest(f"task {task!r}: give a task id")
        tasks = self.tasks
        target = tasks.get(task)
        if target is None:
            raise BadRequest(f"container {self.settings.container} runs no task {task} "
                             f"(its tasks: {', '.join(map(str, sorted(tasks))) or 'none'})", 404)
        if not target.pid:
            raise BadRequest(f"task {task} ({target.name}) is not running (restarting, or past its restart budget)",
                             409)
        return target, task

    @contextmanager
    def _hold(self, target: Target) -> Iterator[None]:
        """One stack or profile of a process at a time (they share its handlers' files)."""
        with self._guard:
            lock = self._busy.setdefault(target.name, threading.Lock())
        if not lock.acquire(blocking=False):
            raise BadRequest(f"{target.name} is being profiled already; try again when that is done", 409)
        try:
            yield
        finally:
            lock.release()


def _one(query: dict, name: str) -> str:
    value = query.get(name)
    if not value:
        raise BadRequest(f"give ?{name}=")
    return value


def _number(query: dict, name: str, kind: Callable[[str], float]) -> Optional[float]:
    value = query.get(name)
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        raise BadRequest(f"{name}={value!r} is not a number") from None


class _Handler(BaseHTTPRequestHandler):
    """The HTTP shell: parses with the standard library, asks ``DebugServer.answer``, writes the reply."""

    timeout = REQUEST_TIMEOUT_SECS
    server_version = "squall-debug"

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        debug: DebugServer = self.server.debug  # type: ignore[attr-defined]
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            body = self._body()
            reply = debug.answer(method, url.path, self.headers.get("Authorization", ""), query, body)
        except BadRequest as e:
            reply = _json({"error": str(e)}, e.status)
        except SquallError as e:  # a bad regular expression, ...
            reply = _json({"error": str(e)}, 400)
        except Exception as e:  # a bug: said, logged, and the server goes on
            log.exception("debug server: %s %s", method, self.path)
            reply = _json({"error": f"{type(e).__name__}: {e}"}, 500)
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass  # the client went away

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise BadRequest(f"a request body of {length} bytes: at most {MAX_BODY}", 413)
        if not length:
            return {}
        try:
            data = json.loads(self.rfile.read(length))
        except ValueError as e:
            raise BadRequest(f"the body is not JSON: {e}") from None
        if not isinstance(data, dict):
            raise BadRequest("the body must be a JSON object")
        return data

    def log_message(self, format: str, *args: object) -> None:
        log.debug("debug server: " + format, *args)
