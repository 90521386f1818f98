"""The stream manager: one per container, routes DATA frames by their header.

It never decodes a tuple: the sending instance already chose the destination
task, so a frame goes to the local instance of that task, or unchanged to the
stream manager of the container holding it (one outbound connection per
other container; inbound connections are only read). Frames from a remote
stream manager are delivered locally only.

Retiring tasks: when a task leaves the physical plan (scale down) its route is
kept as a *stale* entry (task -> the container that had it) until the task is
actually gone: a local one until its connection closes, a remote one until the
link to its container is lost or ``stale_secs`` have passed. Frames that
senders batched with the old plan still reach it; the executor stops it only
after a drain period (``squall.executor.drain.secs``).

The topology master: the stream manager connects to the one the state names
(``tmasters/<topology>``, read in a worker thread: the loop never waits on the
state manager) and follows that record: when another candidate takes over it
drops its old connection and registers with the new leader. Routing never
waits for a topology master: it runs on the last physical plan.

Backpressure: every outbound connection has asyncio write-buffer limits at the
high/low water marks (``squall.stmgr.backpressure.high.mb``/``low.mb``), and
every local instance's queue is bounded in time (``QueueBound``,
``squall.stmgr.max.queue.secs``). While any is over its mark this stream
manager tells its local spouts to stop emitting (CONTROL ``backpressure``),
stops reading them, and tells every other stream manager to do the same,
until all are back under the low mark. Telling spouts matters: what a spout
had written before its stream manager stopped reading it would otherwise
wait in kernel buffers and flood the queue when reading resumes.

ACK frames (at-least-once) are routed exactly like DATA frames.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import time
from typing import Any, Callable, Optional

from squall.idl import schema
from squall.runtime.metrics_sender import MetricsSender
from squall.runtime.protocol import (CONTROL, DEST_COUNT, HEADER_SIZE, ROUTED, Connection, HandshakeGate,
                                     ProtocolError, control_frame, decode_control)
from squall.runtime.queue_bound import QueueBound

log = logging.getLogger(__name__)

RETRY_SECS = 0.5
STALE_SECS = 60.0  # longest a remote task that left the plan keeps its route
STOP_FLUSH_SECS = 1.0  # on SIGTERM, how long buffered frames may take to leave


class _PeerLink:
    """The outbound connection to another container's stream manager."""

    def __init__(self, container: int, host: str, port: int):
        self.container = container
        self.host, self.port = host, port
        self.conn: Optional[Connection] = None
        self.buffer: list = []
        self.buffered = 0
        self.closed = False
        self.retiring = False  # its container left the plan; kept for stale routes only

    def send(self, data: bytes) -> None:
        if self.conn is not None and self.conn.authenticated and not self.conn.closed:
            self.conn.write(data)
        else:
            self.buffer.append(data)
            self.buffered += len(data)

    def unsent(self) -> int:
        return self.buffered + (self.conn.unsent() if self.conn is not None else 0)


class StreamManager:
    """Routing, registration and backpressure of one container."""

    def __init__(self, topology: str, secret: str, container: int, host: str, spouts: set,
                 high_bytes: int, low_bytes: int, max_frame: int,
                 tmaster_locator: Optional[Callable[[], Any]] = None,
                 metrics_port: Optional[int] = None, heartbeat_secs: float = 5.0,
                 bucket_secs: float = 5.0, stale_secs: float = STALE_SECS, max_queue_secs: float = 1.0):
        self.topology = topology
        self.secret = secret
        self.container = container
        self.host = host
        self.spouts = set(spouts)  # component names that are spouts
        self.high, self.low = high_bytes, low_bytes
        self.max_frame = max_frame
        self.tmaster_locator = tmaster_locator
        self.metrics_port = metrics_port
        self.heartbeat_secs = heartbeat_secs
        self.bucket_secs = bucket_secs
        self.data_port = 0
        self.local: dict = {}  # task -> Connection
        self.task_container: dict = {}  # task -> container, current physical plan
        self.stale: dict = {}  # task -> (container, since): left the plan, maybe still alive
        self.stale_secs = stale_secs
        self.peers: dict = {}  # container -> _PeerLink
        self.pplan: Any = None
        self.pplan_frame: Optional[bytes] = None
        self.congested: set = set()  # connections over their byte water mark, or local queues over their bound
        self.max_queue_secs = max_queue_secs
        self.queues: dict = {}  # task -> QueueBound of its local instance
        self.gate = HandshakeGate()
        self.bp_self = False
        self.bp_remote: set = set()
        self.bp_since: Optional[float] = None
        self.bp_time = 0.0
        self.bp_episodes = 0
        self.tmaster: Optional[Connection] = None
        self.tmaster_at: Any = None  # the TMasterLocation of self.tmaster
        self.metrics: Optional[MetricsSender] = None
        self.forwarded_frames = 0
        self.forwarded_bytes = 0
        self.dropped_frames = 0
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.closing = False
        self._register_pending = False
        self.stopped = asyncio.Event()
        self._tasks: set = set()

    # connection handler --------------------------------------------------------
    def _conn(self, server: bool, tag: Any = None, **hello: Any) -> Connection:
        c = Connection(self, self.topology, self.secret, server, self.max_frame,
                       hello_args=hello or None, gate=self.gate if server else None)
        c.tag = tag
        return c

    def accept(self, conn: Connection, hello: Any) -> bool:
        if hello.role == schema.Role.INSTANCE:
            if hello.container != self.container or hello.task_id is None:
                log.warning("refusing instance %s of container %s", hello.task_id, hello.container)
                return False
            old = self.local.get(hello.task_id)
            if old is not None and not old.closed:
                log.warning("task %d connected again; closing its old connection", hello.task_id)
                old.close()
            conn.tag = ("instance", hello.task_id, hello.component, hello.pid)
            self.local[hello.task_id] = conn
            self.queues[hello.task_id] = QueueBound(self.max_queue_secs)
            return True
        if hello.role == schema.Role.STMGR:
            conn.tag = ("peer_in", hello.container)
            return True
        log.warning("refusing a %s connection on the data port", schema.Role._VALUES_TO_NAMES.get(hello.role))
        return False

    def ready(self, conn: Connection) -> None:
        kind = conn.tag[0]
        conn.transport.set_write_buffer_limits(high=self.high, low=self.low)
        if kind == "instance":
            task = conn.tag[1]
            log.info("task %d (%s, pid %d) connected", task, conn.tag[2], conn.tag[3])
            if conn.tag[2] in self.spouts and self._throttled():
                conn.pause_reading(True)
                conn.write(self.throttle_frame(True))
            if self.pplan is not None and any(i.id.task_id == task for i in self.pplan.instances):
                conn.write(self.pplan_frame)
            self.schedule_register()
        elif kind == "tmaster":
            log.info("connected to the topology master")
            self.send_register()
        elif kind == "peer_out":
            link = self.peers.get(conn.tag[1])
            if link is not None:
                for data in link.buffer:
                    conn.write(data)
                link.buffer.clear()
                link.buffered = 0
                if self.bp_self:
                    conn.write(control_frame(backpressure=schema.Backpressure(self.container, True)))
            log.info("connected to the stream manager of container %d", conn.tag[1])

    def lost(self, conn: Connection) -> None:
        self.congested.discard(conn)
        tag = conn.tag
        if tag is None or self.closing:
            return
        kind = tag[0]
        if kind == "instance":
            if self.local.get(tag[1]) is conn:
                del self.local[tag[1]]
                self.queues.pop(tag[1], None)
                self.congested.discard(tag[1])  # its queue is gone with it
                if self.stale.pop(tag[1], None) is not None:
                    log.info("task %d (retired) disconnected; its route is gone", tag[1])
                else:
                    log.info("task %d disconnected", tag[1])
                self.schedule_register()
        elif kind == "tmaster":
            if self.tmaster is conn:
                self.tmaster = self.tmaster_at = None
                log.warning("lost the topology master; routing on the last physical plan, reconnecting")
                self.loop.call_later(RETRY_SECS, lambda: self.closing or self._spawn(self.connect_tmaster()))
        elif kind == "peer_out":
            link = self.peers.get(tag[1])
            if link is not None and link.conn is conn and link.retiring:
                self._drop_link(link)
            elif link is not None and link.conn is conn and not link.closed:
                link.conn = None
                log.warning("lost the stream manager of container %d; reconnecting", tag[1])
                self.loop.call_later(RETRY_SECS, lambda: self.closing or self._spawn(self.connect_peer(link)))
        elif kind == "peer_in":
            if tag[1] in self.bp_remote:
                self.bp_remote.discard(tag[1])
                self._apply_throttle()
        self._update_congestion()

    def write_paused(self, conn: Connection, paused: bool) -> None:
        if paused:
            self.congested.add(conn)
        else:
            self.congested.discard(conn)
        self._update_congestion()

    def frames(self, conn: Connection, frames: list) -> None:
        kind = conn.tag[0]
        if kind == "instance":
            for f in frames:
                if f[4] in ROUTED:
                    self.route(f)
                elif f[4] == CONTROL:
                    msg = decode_control(f)
                    if msg.consumed is None:
                        raise ProtocolError(f"unexpected control message from task {conn.tag[1]}")
                    self.on_consumed(conn, msg.consumed)
                else:
                    raise ProtocolError(f"unexpected frame type {f[4]} from task {conn.tag[1]}")
        elif kind == "peer_in":
            for f in frames:
                if f[4] in ROUTED:
                    dest, count = DEST_COUNT.unpack_from(f, HEADER_SIZE)
                    c = self.local.get(dest)
                    if c is not None:
                        self.deliver(dest, c, f, count)
                        self.forwarded_frames += 1
                    else:
                        self.dropped_frames += 1
                else:
                    msg = decode_control(f)
                    if msg.backpressure is not None:
                        bp = msg.backpressure
                        (self.bp_remote.add if bp.on else self.bp_remote.discard)(bp.container)
                        log.info("container %d %s backpressure", bp.container, "started" if bp.on else "ended")
                        self._apply_throttle()
        elif kind == "tmaster":
            for f in frames:
                msg = decode_control(f)
                if msg.physical_plan is not None:
                    self.set_plan(msg.physical_plan, f)
                elif msg.register_response is not None and not msg.register_response.ok:
                    log.error("topology master refused registration: %s", msg.register_response.error)
        else:
            raise ProtocolError(f"unexpected frames on a {kind} connection")

    # routing --------------------------------------------------------------------
    def deliver(self, task: int, conn: Connection, f: bytes, count: int) -> None:
        """A frame to a local instance; its queue may go over its bound."""
        conn.write(f)
        if count and self.queues[task].delivered(count):
            self.congested.add(task)
            self._update_congestion()

    def on_consumed(self, conn: Connection, tuples: int) -> None:
        task = conn.tag[1]
        if self.queues[task].consumed(tuples, time.monotonic()):
            self.congested.discard(task)
            self._update_congestion()

    def route(self, f: bytes) -> None:
        dest, count = DEST_COUNT.unpack_from(f, HEADER_SIZE)
        where = self.task_container.get(dest)
        if where is None:
            # a task that left the plan (senders batched with the old plan) or none known yet
            stale = self.stale.get(dest)
            where = self.container if stale is None else stale[0]
        c = self.local.get(dest) if where == self.container else None
        if c is not None:
            self.deliver(dest, c, f, count)
        else:
            link = self.peers.get(where)
            if link is None:
                self.dropped_frames += 1
                if self.dropped_frames % 1000 == 1:
                    log.warning("no route to task %d (frames dropped so far: %d)", dest, self.dropped_frames)
                return
            link.send(f)
            if link.conn is None and link.buffered > self.high:
                self._update_congestion()
        self.forwarded_frames += 1
        self.forwarded_bytes += len(f)

    def set_plan(self, pplan: Any, raw_frame: Optional[bytes] = None) -> None:
        self.pplan = pplan
        self.pplan_frame = raw_frame or control_frame(physical_plan=pplan)
        now = time.monotonic()
        new = {i.id.task_id: i.container for i in pplan.instances}
        for task, cid in self.task_container.items():
            if task not in new:
                self.stale[task] = (cid, now)
        for task in list(self.stale):
            cid = self.stale[task][0]
            if task in new or (cid == self.container and task not in self.local):
                del self.stale[task]  # back in the plan, or a local task already gone
        self.task_container = new
        wanted = {s.container: s for s in pplan.stmgrs if s.container != self.container}
        still_routed = {cid for cid, _ in self.stale.values()}
        for cid in list(self.peers):
            link = self.peers[cid]
            s = wanted.get(cid)
            if s is None and cid in still_routed and link.conn is not None and not link.conn.closed:
                if not link.retiring:
                    log.info("container %d left the plan; keeping its link while its tasks %s may still "
                             "receive", cid, sorted(t for t, (c, _) in self.stale.items() if c == cid))
                link.retiring = True
            elif s is None or (s.host, s.data_port) != (link.host, link.port):
                self._drop_link(link)
            else:
                link.retiring = False
        for cid, s in wanted.items():
            if cid not in self.peers:
                link = self.peers[cid] = _PeerLink(cid, s.host, s.data_port)
                if self.loop is not None:
                    self._spawn(self.connect_peer(link))
        for conn in list(self.local.values()):
            conn.write(self.pplan_frame)  # retiring local tasks too: they stop routing to removed tasks
        log.info("physical plan %s (%s): %d instances, %d stream managers", pplan.packing_plan_id,
                 schema.TopologyStatus._VALUES_TO_NAMES.get(pplan.status), len(pplan.instances), len(pplan.stmgrs))

    def _drop_link(self, link: _PeerLink) -> None:
        link.closed = True
        if self.peers.get(link.container) is link:
            del self.peers[link.container]
        if link.conn is not None:
            link.conn.close()
        for task in [t for t, (c, _) in self.stale.items() if c == link.container]:
            del self.stale[task]

    def expire_stale(self, now: float) -> None:
        """Forget remote tasks that left the plan ``stale_secs`` ago (local ones go when they disconnect)."""
        for task, (cid, since) in list(self.stale.items()):
            if cid != self.container and now - since >= self.stale_secs:
                del self.stale[task]
        still_routed = {cid for cid, _ in self.stale.values()}
        for link in list(self.peers.values()):
            if link.retiring and link.container not in still_routed:
                self._drop_link(link)

    # backpressure ---------------------------------------------------------------
    def _update_congestion(self) -> None:
        over = bool(self.congested) or any(l.conn is None and l.buffered > self.high for l in self.peers.values())
        if over == self.bp_self:
            return
        if not over and any(l.unsent() > self.low for l in self.peers.values()):
            return
        self.bp_self = over
        if over:
            self.bp_episodes += 1
        # an episode lasts milliseconds at saturation: one line per bucket (periodic), not per episode
        log.debug("backpressure %s", "started" if over else "ended")
        msg = control_frame(backpressure=schema.Backpressure(self.container, over))
        for link in self.peers.values():
            if link.conn is not None and link.conn.authenticated:  # the others get it once ready
                link.conn.write(msg)
        self._apply_throttle()

    def _throttled(self) -> bool:
        return self.bp_self or bool(self.bp_remote)

    def throttle_frame(self, on: bool) -> bytes:
        return control_frame(backpressure=schema.Backpressure(self.container, on))

    def _apply_throttle(self) -> None:
        throttled = self._throttled()
        now = time.monotonic()
        if throttled and self.bp_since is None:
            self.bp_since = now
        elif not throttled and self.bp_since is not None:
            self.bp_time += now - self.bp_since
            self.bp_since = None
        frame = None
        for conn in self.local.values():
            if conn.tag[2] in self.spouts and conn.paused != throttled:
                conn.pause_reading(throttled)
                frame = frame or self.throttle_frame(throttled)
                conn.write(frame)  # the spout stops (or resumes) emitting

    def backpressure_ms(self) -> float:
        """Time throttled since the last call, ms."""
        total = self.bp_time
        now = time.monotonic()
        if self.bp_since is not None:
            total += now - self.bp_since
            self.bp_since = now
        self.bp_time = 0.0
        return total * 1000

    # tmaster ------------------------------------------------------------------------
    def schedule_register(self) -> None:
        if not self._register_pending and self.loop is not None:
            self._register_pending = True
            self.loop.call_later(0.05, self.send_register)

    def registration(self) -> Any:
        instances = [
            schema.InstanceLocation(id=schema.InstanceId(component=c.tag[2], task_id=t, component_index=-1),
                                    container=self.container, pid=c.tag[3])
            for t, c in sorted(self.local.items())
        ]
        loc = schema.StMgrLocation(container=self.container, host=self.host, data_port=self.data_port,
                                   pid=os.getpid())
        return schema.RegisterStMgr(stmgr=loc, instances=instances)

    def send_register(self) -> None:
        self._register_pending = False
        if self.tmaster is not None and self.tmaster.authenticated and not self.tmaster.closed:
            self.tmaster.write(control_frame(register_stmgr=self.registration()))

    async def connect_tmaster(self) -> None:
        while not self.closing and self.tmaster_locator is not None and self.tmaster is None:
            try:
                loc = await asyncio.to_thread(self.tmaster_locator)
            except Exception as e:  # the state manager is unreachable for now
                log.info("cannot read the topology master's location: %s", e)
                loc = None
            if loc is not None and self.tmaster is None:
                try:
                    _, conn = await self.loop.create_connection(
                        lambda: self._conn(False, ("tmaster",), role=schema.Role.STMGR, container=self.container),
                        loc.host, loc.control_port)
                    self.tmaster, self.tmaster_at = conn, loc
                    return
                except OSError as e:
                    log.info("topology master at %s:%d not reachable (%s)", loc.host, loc.control_port, e)
            await asyncio.sleep(RETRY_SECS)

    def on_tmaster_location(self, loc: Any) -> None:
        """The leader changed (state watch): leave the old one, register with the new one."""
        if loc is None or self.closing or loc == self.tmaster_at:
            return
        log.info("topology master is now at %s:%d (pid %d)", loc.host, loc.control_port, loc.pid)
        old = self.tmaster
        self.tmaster = self.tmaster_at = None
        if old is not None:
            old.close()
        self._spawn(self.connect_tmaster())

    async def connect_peer(self, link: _PeerLink) -> None:
        while not self.closing and not link.closed and link.conn is None:
            try:
                _, conn = await self.loop.create_connection(
                    lambda: self._conn(False, ("peer_out", link.container), role=schema.Role.STMGR,
                                       container=self.container),
                    link.host, link.port)
                link.conn = conn
                return
            except OSError as e:
                log.info("stream manager of container %d at %s:%d not reachable (%s)",
                         link.container, link.host, link.port, e)
                await asyncio.sleep(RETRY_SECS)

    async def periodic(self) -> None:
        next_hb = next_metrics = time.monotonic()
        next_metrics += self.bucket_secs
        last_wall = time.time()
        while not self.closing:
            await asyncio.sleep(min(self.heartbeat_secs, self.bucket_secs, 1.0))
            now = time.monotonic()
            if self.stale:
                self.expire_stale(now)
            if now >= next_hb:
                next_hb = now + self.heartbeat_secs
                if self.tmaster is not None and self.tmaster.authenticated:
                    self.tmaster.write(control_frame(heartbeat=schema.Heartbeat(time.time())))
            if now >= next_metrics:
                next_metrics = now + self.bucket_secs
                wall = time.time()
                row = self.metrics_row(wall, wall - last_wall)
                last_wall = wall
                await self.metrics.send(row)

    def metrics_row(self, now: float, interval: float) -> Any:
        import json

        queued = {task: q.queued for task, q in self.queues.items()}
        user = {"frames_forwarded": self.forwarded_frames, "bytes_forwarded": self.forwarded_bytes,
                "queued_tuples": queued,
                "frames_dropped": self.dropped_frames, "backpressure_episodes": self.bp_episodes,
                "unsent_bytes": sum(c.unsent() for c in self.local.values())
                + sum(l.unsent() for l in self.peers.values())}
        bp_ms = self.backpressure_ms()
        if self.bp_episodes:
            log.info("backpressure: %d episodes, %.0f ms throttled in the last %.1f s",
                     self.bp_episodes, bp_ms, interval)
        self.forwarded_frames = self.forwarded_bytes = self.dropped_frames = self.bp_episodes = 0
        return schema.MetricsRow(
            ts=now, interval_secs=interval, process="stmgr", component="__stmgr", task_id=None,
            emit_count=0, execute_count=0, ack_count=0, fail_count=0, queue_depth=sum(queued.values()),
            backpressure_ms=bp_ms, user=json.dumps(user), pid=os.getpid(),
            container=self.container)

    # lifecycle ----------------------------------------------------------------------
    def _spawn(self, coro: Any) -> None:
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_log_failure)

    async def serve(self, listener: socket.socket) -> None:
        self.loop = asyncio.get_running_loop()
        self.data_port = listener.getsockname()[1]
        server = await self.loop.create_server(lambda: self._conn(True), sock=listener)
        for link in self.peers.values():
            self._spawn(self.connect_peer(link))
        if self.tmaster_locator is not None:
            self._spawn(self.connect_tmaster())
        self.metrics = MetricsSender(self.loop, self.topology, self.secret, self.max_frame,
                                     "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host, self.metrics_port,
                                     {"role": schema.Role.STMGR, "container": self.container})
        self._spawn(self.periodic())
        log.info("stream manager of container %d listening on port %d", self.container, self.data_port)
        try:
            await self.stopped.wait()
            await self.flush_before_exit()
        finally:
            self.closing = True
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def flush_before_exit(self, timeout: float = STOP_FLUSH_SECS) -> None:
        """Stop reading, then give frames already buffered for instances and peers up to
        ``timeout`` to leave (bounded, so kill stays quick)."""
        self.closing = True  # no reconnecting from here on
        conns = list(self.local.values()) + [l.conn for l in self.peers.values() if l.conn is not None]
        for c in conns:
            c.pause_reading(True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(c.closed or c.unsent() == 0 for c in conns):
                break
            await asyncio.sleep(0.01)

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.stopped.set)


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", exc_info=task.exception())


def run(env: Any) -> int:
    from squall.state import Kind

    spouts = {c.name for c in env.topology.components if c.kind == schema.ComponentKind.SPOUT}
    mb = 1024 * 1024
    sm = StreamManager(
        env.name, env.secret, env.args.container, env.advertised_host, spouts,
        high_bytes=int(env.config["squall.stmgr.backpressure.high.mb"] * mb),
        low_bytes=int(env.config["squall.stmgr.backpressure.low.mb"] * mb),
        max_frame=env.max_frame,
        tmaster_locator=lambda: env.state.get(Kind.TMASTER, env.name),
        metrics_port=env.launch.get("metricsmgr_port"),
        heartbeat_secs=float(env.config["squall.heartbeat.interval.secs"]),
        bucket_secs=float(env.config["topology.builtin.metrics.bucket.size.secs"]),
        max_queue_secs=float(env.config["squall.stmgr.max.queue.secs"]),
    )
    listener = socket.socket(fileno=int(env.launch["stmgr_fd"]))
    loop = asyncio.new_event_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, sm.stop)
    cancel = env.state.watch(Kind.TMASTER, env.name,
                             lambda loc: loop.call_soon_threadsafe(sm.on_tmaster_location, loc))
    try:
        loop.run_until_complete(sm.serve(listener))
    finally:
        cancel()
        loop.close()
    log.info("stream manager stopped")
    return 0
