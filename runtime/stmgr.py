"""The stream manager's asyncio shell: one per container.

The rules (routing by frame header, stale routes of retiring tasks, links
buffering while down, backpressure, registration, metrics) are
``runtime/stmgr_state.py``'s ``StreamManagerState``; this module does the
I/O around it. It owns the connections (identity -> ``Connection``), turns
their callbacks into events (handshake done -> ``Connected``, frames ->
``FramesArrived``, lost -> ``Disconnected``, pause_writing/resume_writing ->
``WriteBlocked``), feeds the state machine one event at a time (an event
raised while actions are carried out, e.g. ``pause_writing`` during a write,
waits until they are all done, so the state's view matches what was done),
and carries out the actions: writes, pausing reading, closing, connecting
with retries, timers, and the metrics sender.

The topology master: the stream manager connects to the one the state names
(``tmasters/<topology>``, read in a worker thread: the loop never waits on the
state manager) and follows that record (``TMasterMoved``): when another
candidate takes over it drops its old connection and registers with the new
leader. Routing never waits for a topology master: it runs on the last
physical plan.

On SIGTERM it stops reading and gives what is still buffered for instances
and peers up to ``STOP_FLUSH_SECS`` to leave. Its background tasks (the
tick, connecting to peers and to the topology master) are critical
(``runtime/lifecycle.py``): one that dies stops the process with exit status
1, and its executor restarts it.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import time
from typing import TYPE_CHECKING, Callable, Coroutine, Dict, Optional, Type, Union

from squall.idl import schema
from squall.runtime.lifecycle import Lifecycle, serve_role
from squall.runtime.metrics_sender import MetricsSender
from squall.runtime.protocol import HANDSHAKE_SECS, Connection, HandshakeGate
from squall.runtime.stmgr_state import (RETRY_SECS, STALE_SECS, Close, Connect, Connected, ConnectTMaster,
                                        Disconnected, Event, FramesArrived, LocalTask, PauseReading, Peer, PeerIn,
                                        PeerOut, Send, SendMetrics, StreamManagerState, Tick, Timer, TMasterLink,
                                        TMasterMoved, WriteBlocked)
from squall.state import StateError

if TYPE_CHECKING:
    from squall.runtime.bootstrap import RuntimeEnv

log = logging.getLogger(__name__)

STOP_FLUSH_SECS = 1.0  # on SIGTERM, how long buffered frames may take to leave
TICK_SECS = 1.0  # the longest between two Ticks


class StreamManager:
    """Connections, timers and the topology master's record around a ``StreamManagerState``."""

    def __init__(self, topology: str, secret: str, container: int, host: str, spouts: set,
                 high_bytes: int, low_bytes: int, max_frame: int,
                 tmaster_locator: Optional[Callable[[], Optional[schema.TMasterLocation]]] = None,
                 metrics_port: Optional[int] = None, heartbeat_secs: float = 5.0,
                 bucket_secs: float = 5.0, stale_secs: float = STALE_SECS, max_queue_secs: float = 1.0):
        self.topology = topology
        self.secret = secret
        self.container = container
        self.host = host
        self.high, self.low = high_bytes, low_bytes
        self.max_frame = max_frame
        self.tmaster_locator = tmaster_locator
        self.metrics_port = metrics_port
        self.tick_secs = min(heartbeat_secs, bucket_secs, TICK_SECS)
        self.state = StreamManagerState(container, host, spouts, high_bytes, low_bytes, pid=os.getpid(),
                                        max_queue_secs=max_queue_secs, stale_secs=stale_secs,
                                        heartbeat_secs=heartbeat_secs, bucket_secs=bucket_secs)
        self.conns: dict = {}  # identity -> Connection, handshake done
        self.gate = HandshakeGate()
        self.metrics: Optional[MetricsSender] = None
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.lifecycle = Lifecycle("stream manager")
        self._events: collections.deque = collections.deque()
        self._handling = False
        # PeerOut, or TMasterLink (the class) for the topology master -> its task
        self._dials: Dict[Union[PeerOut, Type[TMasterLink]], asyncio.Task] = {}
        self._handshakes: Dict[Connection, asyncio.Future] = {}  # outbound -> its handshake finished (True) or not

    # events in -------------------------------------------------------------------------
    def _handle(self, event: Event) -> None:
        """Hand ``event`` to the state and carry out its actions; events raised meanwhile wait their turn."""
        self._events.append(event)
        if self._handling:
            return
        self._handling = True
        try:
            while self._events:
                self._execute(self.state.handle(self._events.popleft()))
        finally:
            self._handling = False

    def _attached(self, conn: Connection) -> Optional[Peer]:
        """``conn``'s identity if it is the connection the state knows by it."""
        who = conn.peer
        return who if who is not None and self.conns.get(who) is conn else None

    # Connection handler
    def accept(self, conn: Connection, hello: schema.Hello) -> bool:
        if hello.role == schema.Role.INSTANCE:
            if hello.container != self.container or hello.task_id is None:
                log.warning("refusing instance %s of container %s", hello.task_id, hello.container)
                return False
            members = tuple((i.task_id, i.component) for i in hello.chain or ())
            conn.peer = LocalTask(hello.task_id, hello.component, hello.pid, members)
            return True
        if hello.role == schema.Role.STMGR:
            conn.peer = PeerIn(hello.container)
            return True
        log.warning("refusing a %s connection on the data port", schema.Role._VALUES_TO_NAMES.get(hello.role))
        return False

    def ready(self, conn: Connection) -> None:
        conn.transport.set_write_buffer_limits(high=self.high, low=self.low)
        done = self._handshakes.get(conn)
        if done is not None and not done.done():
            done.set_result(True)
        who = conn.peer
        old = self.conns.get(who)
        if old is not None:  # the same peer connected again: the state replaces the old connection
            old.peer = None
            old.close()
        self.conns[who] = conn
        self._handle(Connected(who, time.monotonic()))

    def frames(self, conn: Connection, frames: list) -> None:
        who = self._attached(conn)
        if who is not None:
            self._handle(FramesArrived(who, frames, time.monotonic()))

    def lost(self, conn: Connection) -> None:
        done = self._handshakes.get(conn)
        if done is not None and not done.done():
            done.set_result(False)
        who = self._attached(conn)
        if who is None:
            return
        del self.conns[who]
        if not self.lifecycle.stopping:
            self._handle(Disconnected(who, time.monotonic()))

    def write_paused(self, conn: Connection, paused: bool) -> None:
        who = self._attached(conn)
        if who is not None:
            self._handle(WriteBlocked(who, paused, time.monotonic()))

    def on_tmaster_location(self, loc: Optional[schema.TMasterLocation]) -> None:
        """The state manager's ``tmasters`` record changed."""
        if not self.lifecycle.stopping:
            self._handle(TMasterMoved(loc))

    # actions out -----------------------------------------------------------------------
    def _execute(self, actions: list) -> None:
        conns = self.conns
        out: dict = {}  # connection -> the frames for it, in order: each leaves in one write (one syscall)
        for a in actions:
            if type(a) is Send:
                conn = conns.get(a.who)
                if conn is not None:
                    frames = out.get(conn)
                    if frames is None:
                        out[conn] = [a.data]
                    else:
                        frames.append(a.data)
                continue
            if out:  # what was sent before the action leaves before it (it may change the connections)
                self._write(out)
            if type(a) is PauseReading:
                spout = conns.get(a.who)
                if spout is not None and not self.lifecycle.stopping:  # flush_before_exit keeps reading paused
                    spout.pause_reading(a.paused)
            elif type(a) is Close:
                self._close(a.who, a.reason)
            elif type(a) is Connect:
                if not self.lifecycle.stopping:
                    self._dial(a.who, self._connect_peer(a.who, a.host, a.port, a.delay))
            elif type(a) is ConnectTMaster:
                if not self.lifecycle.stopping and self.tmaster_locator is not None:
                    self._dial(TMasterLink, self._connect_tmaster(a.delay))
            elif type(a) is SendMetrics:
                if self.metrics is not None:
                    self.lifecycle.spawn(self.metrics.send(a.row), "metrics send", critical=False)
            elif type(a) is Timer:
                self.loop.call_later(a.delay, self._handle, a.event)
            else:
                raise TypeError(f"unknown stream manager action {a!r}")
        if out:
            self._write(out)

    @staticmethod
    def _write(out: dict) -> None:
        for conn, frames in out.items():
            conn.write(frames[0] if len(frames) == 1 else b"".join(frames))
        out.clear()

    def _close(self, who: Peer, reason: Optional[str]) -> None:
        """Close ``who``'s connection without reporting it back, and stop connecting it."""
        dial = self._dials.pop(who, None)
        if dial is not None:
            dial.cancel()
        conn = self.conns.pop(who, None)
        if conn is not None:
            conn.peer = None
            if reason is None:
                conn.close()
            else:
                conn.abort(reason)

    def _dial(self, key: Union[PeerOut, Type[TMasterLink]], coro: Coroutine[object, object, None]) -> None:
        """Run one connection attempt per key: a new one replaces the one under way."""
        old = self._dials.pop(key, None)
        if old is not None:
            old.cancel()
        name = "connect to the topology master" if key is TMasterLink else f"connect to container {key.container}"
        task = self.lifecycle.spawn(coro, name)
        self._dials[key] = task
        task.add_done_callback(lambda t: self._dials.get(key) is t and self._dials.pop(key))

    def _client(self, who: Peer) -> Connection:
        conn = Connection(self, self.topology, self.secret, False, self.max_frame,
                          hello_args={"role": schema.Role.STMGR, "container": self.container})
        conn.peer = who
        return conn

    async def _open(self, who: Peer, host: str, port: int) -> bool:
        """One attempt: connect and wait for the handshake (``ready`` then reports ``Connected``)."""
        _, conn = await self.loop.create_connection(lambda: self._client(who), host, port)
        if conn.authenticated or conn.closed:  # the handshake was over before this resumed
            return conn.authenticated and self._attached(conn) is not None
        done = self._handshakes[conn] = self.loop.create_future()
        ok = False
        try:
            ok = await asyncio.wait_for(done, 2 * HANDSHAKE_SECS)
        except asyncio.TimeoutError:
            log.info("no handshake with %s:%d within %.0fs", host, port, 2 * HANDSHAKE_SECS)
        finally:
            del self._handshakes[conn]
            if not ok and self._attached(conn) is None:
                conn.peer = None
                conn.close()
        return ok

    async def _connect_peer(self, who: PeerOut, host: str, port: int, delay: float) -> None:
        await asyncio.sleep(delay)
        while not self.lifecycle.stopping:
            try:
                if await self._open(who, host, port):
                    return
            except OSError as e:
                log.info("stream manager of container %d at %s:%d not reachable (%s)", who.container, host, port, e)
            await asyncio.sleep(RETRY_SECS)

    async def _connect_tmaster(self, delay: float) -> None:
        await asyncio.sleep(delay)
        while not self.lifecycle.stopping:
            try:
                loc = await asyncio.to_thread(self.tmaster_locator)
            except StateError as e:  # the state manager is unreachable for now
                log.info("cannot read the topology master's location: %s", e)
                loc = None
            if loc is not None:
                try:
                    if await self._open(TMasterLink.at(loc), loc.host, loc.control_port):
                        return
                except OSError as e:
                    log.info("topology master at %s:%d not reachable (%s)", loc.host, loc.control_port, e)
            await asyncio.sleep(RETRY_SECS)

    # timers and lifecycle ------------------------------------------------------------------
    def _transport_unsent(self) -> int:
        return sum(c.unsent() for who, c in self.conns.items() if type(who) in (LocalTask, PeerOut))

    async def periodic(self) -> None:
        while not self.lifecycle.stopping:
            self._handle(Tick(time.monotonic(), time.time(), self._transport_unsent()))
            await asyncio.sleep(self.tick_secs)

    async def serve(self, listener: socket.socket) -> None:
        self.loop = asyncio.get_running_loop()
        self.lifecycle.bind(self.loop)
        self.state.data_port = listener.getsockname()[1]
        server = await self.loop.create_server(
            lambda: Connection(self, self.topology, self.secret, True, self.max_frame, gate=self.gate),
            sock=listener)
        self._execute([ConnectTMaster()])
        self.metrics = MetricsSender(self.loop, self.topology, self.secret, self.max_frame,
                                     "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host, self.metrics_port,
                                     {"role": schema.Role.STMGR, "container": self.container})
        self.lifecycle.spawn(self.periodic(), "tick")
        log.info("stream manager of container %d listening on port %d", self.container, self.state.data_port)
        try:
            await self.lifecycle.wait_stopping()
            await self.flush_before_exit()
        finally:
            server.close()
            await self.lifecycle.close()

    async def flush_before_exit(self, timeout: float = STOP_FLUSH_SECS) -> None:
        """Stop reading, then give frames already buffered for instances and peers up to
        ``timeout`` to leave (bounded, so kill stays quick). The role is stopping: no reconnecting."""
        conns = [c for who, c in self.conns.items() if type(who) in (LocalTask, PeerOut)]
        for c in conns:
            c.pause_reading(True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(c.closed or c.unsent() == 0 for c in conns):
                break
            await asyncio.sleep(0.01)

    def stop(self) -> None:
        """Stop (SIGTERM): from any thread."""
        self.lifecycle.stop()


def run(env: "RuntimeEnv") -> int:
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

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        # registering a ZooKeeper watch reads the node: not on the loop
        cancel = await asyncio.to_thread(env.state.watch, Kind.TMASTER, env.name,
                                         lambda loc: loop.call_soon_threadsafe(sm.on_tmaster_location, loc))
        try:
            await sm.serve(listener)
        finally:
            cancel()

    return serve_role(sm.lifecycle, serve)
