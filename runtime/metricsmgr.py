"""The metrics manager: one per container.

Its container's processes (instances, stream manager, topology master) send
one ``MetricsRow`` per bucket; it completes each row with psutil figures for
the reporting process (cpu % over the process's bucket, rss, threads), taken
when the row arrives, and the resources the packing plan gave the instance,
appends them at once as JSON Lines exactly as docs/metrics.md says to
``<run_dir>/metrics/container-<id>.jsonl``, answers the sender that they are
written, and forwards them to the leading topology master for ``squall
metrics``. Senders keep each row until it is answered for, and send again what
a dead manager did not answer for (``resent``); a resent row is written only if
the file does not have it yet (``last_written``): each row is in the file once.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import Any, Optional

import psutil

from squall.idl import schema
from squall.runtime.lifecycle import Lifecycle, serve_role
from squall.metrics_schema import CHAIN, METRICSMGR_COMPONENT
from squall.runtime.protocol import Connection, HandshakeGate, ProtocolError, control_frame, decode_control
from squall.state import StateError

log = logging.getLogger(__name__)

MAX_UNFORWARDED = 100_000
TAIL_BYTES = 4 << 20  # what a restarted manager reads of its file: more than any sender has in flight


@dataclass(slots=True)
class Reporter:
    """A connection of a process of this container that reports its metrics rows."""

    pid: int
    written: int = 0  # rows it sent that are in the file (each frame is answered with this count)


class ProcessStats:
    """psutil figures per pid, taken when the process's row arrives (the end of its bucket).

    cpu % is the CPU time (user + system) the process used since its previous
    row, over the wall time since then: its use over its own bucket, in % of
    one core. The first row of a pid is measured from the process's start.
    The state of a pid is kept across buckets in which no row of it arrived (a
    process's bucket drifts against this manager's, and a blocked spout's row
    can be late); it is dropped only when the process is gone or silent for
    ``FORGET_SECS``.
    """

    FORGET_SECS = 300.0

    def __init__(self) -> None:
        self.procs: dict = {}  # pid -> (psutil.Process, cpu seconds, monotonic time, cpu % then)

    def sample(self, pid: int) -> tuple:
        """``(cpu_percent, rss_mb, threads)`` of ``pid`` now; zeros if it is gone."""
        state = self.procs.get(pid)
        try:
            p = state[0] if state is not None else psutil.Process(pid)
            with p.oneshot():
                t = p.cpu_times()
                rss_mb = p.memory_info().rss / (1024 * 1024)
                threads = p.num_threads()
                started = p.create_time() if state is None else None
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            self.procs.pop(pid, None)
            return 0.0, 0.0, 0
        now = time.monotonic()
        cpu_secs = t.user + t.system
        if state is None:  # first row of this pid: since the process started
            used, elapsed = cpu_secs, time.time() - started
        else:
            _, last_cpu, last_at, last_percent = state
            used, elapsed = cpu_secs - last_cpu, now - last_at
            if elapsed < 0.05:  # two rows of one process in the same instant: same figure
                return last_percent, rss_mb, threads
        cpu = round(max(0.0, used) / max(elapsed, 1e-3) * 100, 1)
        self.procs[pid] = (p, cpu_secs, now, cpu)
        return cpu, rss_mb, threads

    def forget_silent(self) -> None:
        """Drop pids not sampled for ``FORGET_SECS`` (dead or gone quiet)."""
        cutoff = time.monotonic() - self.FORGET_SECS
        for pid in [pid for pid, st in self.procs.items() if st[2] < cutoff]:
            del self.procs[pid]


def row_dict(row: Any, topology: str, run_id: str, host: str, stats: tuple, resources: dict) -> dict:
    """One line of the metrics file (docs/metrics.md) from a reported row. A task of a chain shares its
    process (``user.__chain``): its row gets its share of the process's CPU (by busy time) and an
    even share of its memory, so summing rows never counts a process twice."""
    cpu, rss, threads = stats
    req = resources.get(row.task_id) if row.task_id is not None else None
    try:
        user = json.loads(row.user) if row.user else {}
    except ValueError:
        user = {}
    chain = user.get(CHAIN)
    if isinstance(chain, dict):
        cpu = round(cpu * float(chain.get("share", 0.0)), 1)
        rss = rss / max(1, int(chain.get("members", 1)))
    return {
        "ts": row.ts, "interval_secs": row.interval_secs, "topology": topology, "run_id": run_id,
        "container": row.container, "host": host, "process": row.process, "component": row.component,
        "task_id": row.task_id, "emit_count": row.emit_count, "execute_count": row.execute_count,
        "ack_count": row.ack_count, "fail_count": row.fail_count,
        "execute_latency_ms": row.execute_latency_ms, "process_latency_ms": row.process_latency_ms,
        "complete_latency_ms": row.complete_latency_ms, "queue_depth": row.queue_depth,
        "backpressure_ms": row.backpressure_ms, "cpu_percent": cpu, "rss_mb": round(rss, 3),
        "threads": threads, "cpu_requested": req[0] if req else None,
        "ram_requested_mb": req[1] if req else None, "user": user,
    }


def row_key(process: str, component: str, task_id: Optional[int]) -> tuple:
    """Whose row it is: a process's, or a task's of it."""
    return process, component, task_id


def last_written(path: str) -> dict:
    """``row_key`` -> the ts of its last row among the file's last ``TAIL_BYTES``. Rows are confirmed as
    soon as they are written, so those a killed manager wrote but did not confirm are at the end: this is
    what its successor needs to tell a resent row it already has."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            lines = f.read().split(b"\n")
    except FileNotFoundError:
        return {}
    last: dict = {}
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:  # the cut first line, or an empty last one
            continue
        if isinstance(r, dict) and isinstance(r.get("ts"), (int, float)):
            key = row_key(r.get("process"), r.get("component"), r.get("task_id"))
            last[key] = max(r["ts"], last.get(key, r["ts"]))
    return last


def own_row(container: int, now: float, interval: float) -> Any:
    return schema.MetricsRow(ts=now, interval_secs=interval, process="metricsmgr", component=METRICSMGR_COMPONENT,
                             task_id=None, emit_count=0, execute_count=0, ack_count=0, fail_count=0,
                             queue_depth=0, backpressure_ms=0.0, user="{}", pid=os.getpid(), container=container)


class MetricsManager:
    def __init__(self, env: Any):
        self.env = env
        self.container = env.args.container
        self.to_forward: list = []
        self.stats = ProcessStats()
        self.host = socket.gethostname()
        self.path = os.path.join(env.metrics_dir, f"container-{self.container}.jsonl")
        self.last_ts = last_written(self.path)  # row_key -> ts of its last row in the file
        self.tmaster: Optional[Connection] = None
        self.tmaster_at: Any = None  # the TMasterLocation of self.tmaster
        self.resources: dict = {}
        self.set_packing(env.packing)
        self.lifecycle = Lifecycle("metrics manager")
        self.loop: Optional[asyncio.AbstractEventLoop] = None

    def set_packing(self, packing: Any) -> None:
        if packing is None:
            return
        self.resources = {i.id.task_id: (i.resources.cpu, i.resources.ram_mb)
                          for c in packing.containers for i in c.instances}

    # connection handler ------------------------------------------------------------
    def accept(self, conn: Connection, hello: Any) -> bool:
        if hello.container != self.container:
            log.warning("refusing metrics from container %d", hello.container)
            return False
        conn.peer = Reporter(hello.pid)
        return True

    def ready(self, conn: Connection) -> None:
        pass

    def lost(self, conn: Connection) -> None:
        if conn is self.tmaster:
            self.tmaster = None

    def frames(self, conn: Connection, frames: list) -> None:
        if conn is self.tmaster:
            return
        rows = []
        for f in frames:
            msg = decode_control(f)
            if msg.metrics is None:
                raise ProtocolError("expected metrics rows")
            rows.extend(msg.metrics)
        new = [row for row in rows if not (row.resent and row.ts <= self.last_ts.get(
            row_key(row.process, row.component, row.task_id), float("-inf")))]
        # psutil figures now: the row was sent at the end of the process's bucket (a row delivered
        # late, after this manager restarted, gets the figures since the process's previous row)
        self.record([(row, self.stats.sample(row.pid)) for row in new])
        conn.peer.written += len(rows)
        conn.write(control_frame(metrics_written=conn.peer.written))  # only now: the rows are in the file

    def record(self, sampled: list) -> None:
        """Append rows with their process figures to the file; queue them for the topology master."""
        lines = [row_dict(r, self.env.name, self.env.execution.run_id, self.host, stats, self.resources)
                 for r, stats in sampled]
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "a") as f:
            f.write("".join(json.dumps(line) + "\n" for line in lines))
        for (r, _), line in zip(sampled, lines):  # the topology master gets the file's process figures
            r.cpu_percent, r.rss_mb = line["cpu_percent"], line["rss_mb"]
            key = row_key(r.process, r.component, r.task_id)
            self.last_ts[key] = max(r.ts, self.last_ts.get(key, r.ts))
        # rows wait (bounded) until the topology master's connection is up: its totals stay exact
        self.to_forward = (self.to_forward + [r for r, _ in sampled])[-MAX_UNFORWARDED:]

    # buckets ---------------------------------------------------------------------
    def flush(self, now: float, interval: float) -> None:
        """The end of this manager's bucket: its own row."""
        own = own_row(self.container, now, interval)
        self.record([(own, self.stats.sample(own.pid))])
        self.stats.forget_silent()

    async def connect_tmaster(self) -> None:
        from squall.state import Kind

        try:
            loc = await asyncio.to_thread(self.env.state.get, Kind.TMASTER, self.env.name)
        except StateError as e:  # the state manager is unreachable for now
            log.info("cannot read the topology master's location: %s", e)
            return
        if loc is None:
            return
        if self.tmaster is not None and not self.tmaster.closed:
            if loc == self.tmaster_at:
                return
            self.tmaster.close()  # another candidate leads now
        try:
            _, conn = await self.loop.create_connection(
                lambda: Connection(self, self.env.name, self.env.secret, False, self.env.max_frame,
                                   hello_args={"role": schema.Role.METRICSMGR, "container": self.container}),
                loc.host, loc.control_port)
            self.tmaster, self.tmaster_at = conn, loc
        except OSError as e:
            log.info("topology master not reachable (%s); metrics kept in the file only", e)

    async def periodic(self, bucket: float) -> None:
        last = time.time()
        while not self.lifecycle.stopping:
            try:
                await asyncio.wait_for(self.lifecycle.wait_stopping(), bucket)
            except asyncio.TimeoutError:
                pass
            now = time.time()
            self.flush(now, now - last)
            last = now
            await self.connect_tmaster()
            if self.tmaster is not None and self.tmaster.authenticated and not self.tmaster.closed:
                self.tmaster.write(control_frame(metrics=self.to_forward))
                self.to_forward = []

    async def serve(self) -> None:
        from squall.state import Kind

        self.loop = asyncio.get_running_loop()
        self.lifecycle.bind(self.loop)
        listener = socket.socket(fileno=int(self.env.launch["metricsmgr_fd"]))
        gate = HandshakeGate()
        server = await self.loop.create_server(
            lambda: Connection(self, self.env.name, self.env.secret, True, self.env.max_frame, gate=gate),
            sock=listener)
        call = self.loop.call_soon_threadsafe
        # registering a ZooKeeper watch reads the node: not on the loop
        cancel = await asyncio.to_thread(self.env.state.watch, Kind.PACKING_PLAN, self.env.name,
                                         lambda p: call(self.set_packing, p))
        bucket = float(self.env.config["topology.builtin.metrics.bucket.size.secs"])
        log.info("metrics manager of container %d writing %s every %.1fs", self.container, self.path, bucket)
        try:
            await self.periodic(bucket)
        finally:
            cancel()
            server.close()

    def stop(self) -> None:
        self.lifecycle.stop()


def run(env: Any) -> int:
    mm = MetricsManager(env)
    return serve_role(mm.lifecycle, mm.serve)
