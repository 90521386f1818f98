"""The instance process's I/O: one blocking socket to the stream manager, a single thread.

``_Loop`` reads and sends; the instance (``make_instance``) decides. Bolts
block on the socket between frames; spouts poll it between bursts of
``next_tuple`` and send without blocking, so a spout whose stream manager
stops reading it (backpressure) keeps what it emitted (about a batch) and
emits nothing more until the socket takes it: tuples wait in the spout's
source, not in buffers between emit and count.

A lost stream manager (it died; its executor restarts it on the same port)
is rejoined: the instance keeps its user object and its state, drops only what
it had framed for the dead connection (at least once, a spout fails the trees
that crossed it, so they are replayed at once) and reconnects, retrying for
``squall.instance.reconnect.timeout.secs`` before it exits.

SIGTERM: a spout stops emitting at once. A bolt *drains*: it keeps reading and
processing until its connection has been quiet for ``DRAIN_QUIET_SECS`` (or the
stream manager closed it), bounded by half the executor's kill grace; then it
flushes what it emitted and calls ``close()``. So a task retired by ``update``
processes every tuple that was routed to it.
"""
from __future__ import annotations

import fcntl
import gc
import logging
import select
import signal
import socket
import termios
import time
from typing import TYPE_CHECKING, List, Optional, Protocol, Tuple, Union

from squall.idl import schema
from squall.runtime.debugging import DebugSettings, events_path
from squall.runtime.instance.chain import Chain, ChainTimers, ComponentLogFilter
from squall.runtime.instance.edge import UserError
from squall.runtime.instance.make import make_instance
from squall.runtime.instance.sampling import EventsLog, Sampler
from squall.runtime.instance.state import Timers
from squall.runtime.metrics_sender import BlockingMetricsSender
from squall.runtime.protocol import HEADER, BlockingConnection, ProtocolError
from squall.runtime.readiness import signal_ready
from squall.runtime.shipped_files import FilesInForce, start_shipped_files
from squall.runtime.user_errors import CHECKPOINT_STORAGE, UNCAUGHT, UserErrors
from squall.state import StorageError
from squall.supervision import RetryPolicy

if TYPE_CHECKING:
    from squall.runtime.bootstrap import RuntimeEnv

log = logging.getLogger(__name__)

# A bolt sends what it has emitted once this much is waiting (and every flush interval).
OUT_FLUSH_BYTES = 64 * 1024
# On SIGTERM a bolt stops reading once nothing has arrived for this long.
DRAIN_QUIET_SECS = 0.2


class Driven(Protocol):
    """What the loop drives: one task's ``InstanceState``, or the ``Chain`` of the tasks this process runs."""

    is_spout: bool
    task_id: int
    out: bytearray
    out_head: int
    backpressure_time: float

    @property
    def initialized(self) -> bool: ...

    @property
    def may_emit(self) -> bool: ...

    @property
    def timers(self) -> Union[Timers, ChainTimers]: ...

    @property
    def errors(self) -> UserErrors: ...

    def spout_burst(self) -> bool: ...

    def on_frame(self, f: bytes, clock: float) -> None: ...

    def on_timers(self, now: float) -> bool: ...

    def on_disconnected(self, clock: float) -> Tuple[int, int]: ...

    def flush_all(self) -> None: ...

    def on_file_update(self, alias: str, path: str) -> None: ...

    def metrics_rows(self, now: float, interval: float, unread_bytes: int, clock: float) -> list: ...

    def close(self) -> None: ...


def local_host(env: RuntimeEnv) -> str:
    """Where this container's own daemons are reached."""
    return "127.0.0.1" if env.bind_host in ("", "0.0.0.0") else env.bind_host


def _connect_stmgr(env: RuntimeEnv, task: int, component: str,
                   chain: Optional[List[schema.InstanceId]] = None) -> BlockingConnection:
    """A connection to this container's stream manager, retried (it may be starting, or restarting)
    for ``squall.instance.reconnect.timeout.secs``; ProtocolError past that. ``chain``: the
    ``InstanceId`` of every task this process runs."""
    port = env.launch["stmgr_port"]
    policy = RetryPolicy(deadline=float(env.config["squall.instance.reconnect.timeout.secs"]))
    return policy.run(
        lambda: BlockingConnection.connect(local_host(env), port, env.secret, schema.Role.INSTANCE,
                                           env.args.container, task_id=task, component=component,
                                           max_frame=env.max_frame, chain=chain),
        ProtocolError, f"task {task}: connecting to the stream manager on port {port}")


def _instance(env: RuntimeEnv, component: str, task: int,
              files: Optional[FilesInForce]) -> Tuple[Driven, Optional[List[schema.InstanceId]]]:
    """(what the loop drives: the task's instance, or the ``Chain`` it heads; the ``InstanceId`` of each
    task it runs when that is a chain, else None). Each task's context reads the paths of ``files``."""
    from squall.chaining import chain_instances, chains

    batch_size = int(env.config["squall.instance.batch.size"])
    cplan = env.container_plan()
    members = chain_instances(chains(env.topology), [i.id for i in cplan.instances]).get(task)
    if members is None:
        inst = make_instance(env.topology, component, task, env.args.container, env.config, batch_size=batch_size)
        if inst.checkpoint is not None:
            inst.checkpoint.storage = env.checkpoint_storage()
        if files is not None:
            inst.files = files.paths
        return inst, None
    instances = []
    for k, (name, t) in enumerate(members):
        after = {members[k + 1][0]: members[k + 1][1]} if k + 1 < len(members) else None
        instances.append(make_instance(env.topology, name, t, env.args.container, env.config,
                                       batch_size=batch_size, chained=after))
        if files is not None:
            instances[-1].files = files.paths
    chain = Chain(instances)
    for handler in logging.getLogger().handlers:
        handler.addFilter(ComponentLogFilter(instances))
    index = {i.id.task_id: i.id for i in cplan.instances}
    log.info("task %d runs the chain %s", task, chain.names)
    return chain, [index[t] for _, t in members]


def _debug_settings(env: RuntimeEnv, inst: Driven, events: EventsLog) -> DebugSettings:
    """The task's (or chain's) log levels and sampling from ``debug/<topology>``; every emit sampled with
    ``topology.debug``."""
    members = inst.members if isinstance(inst, Chain) else [inst]
    samplers = {m.component_name: Sampler(m, events) for m in members}

    def on_sampling(percents: dict[str, float]) -> None:
        for name, percent in percents.items():
            samplers[name].set_percent(percent)

    return DebugSettings(env.state, env.name, list(samplers), on_sampling,
                         default_percent=100.0 if env.config["topology.debug"] else 0.0)


def rest_of_frame(out: bytearray, head: int, sent: int) -> int:
    """Bytes of ``out`` left of a frame partly sent once its first ``sent`` bytes are: ``out`` is the
    ``head`` bytes that end a frame, then whole frames."""
    pos = head
    while pos < sent:
        pos += 4 + HEADER.unpack_from(out, pos)[0]
    return pos - sent


class _Loop:
    """The instance process's I/O: one blocking socket to the stream manager, a single thread.

    It reads and sends; ``Instance`` decides. Bolts block on the socket between
    frames; spouts poll it between bursts of ``next_tuple`` and send without
    blocking, so a spout whose stream manager stops reading it (backpressure)
    keeps what it emitted (about a batch) and emits nothing more until the
    socket takes it: tuples wait in the spout's source, not in buffers between
    emit and count.
    """

    def __init__(self, inst: Driven, conn: BlockingConnection, metrics: BlockingMetricsSender,
                 drain_max: float, gc_threshold: int, events: EventsLog,
                 files: Optional[FilesInForce] = None) -> None:
        self.inst = inst
        self.events = events  # sampled emits, written at each flush
        self.files = files  # new versions of shipped files, taken at flush ticks
        self.attach(conn)
        self.metrics = metrics
        self.drain_max = drain_max
        self.gc_threshold = gc_threshold
        self.send_out = self.send_some if inst.is_spout else self.send_all
        self.last_metrics_wall = time.time()

    def attach(self, conn: BlockingConnection) -> None:
        """Read and send on ``conn`` from now on (a new connection to a restarted stream manager)."""
        self.conn = conn
        self.sock = conn.sock
        self.reader = conn.reader
        self.inst.out_head = 0  # nothing of ``out`` is on this connection yet

    def send_all(self) -> None:
        """Blocking send of everything emitted (bolts: the stream manager always reads them)."""
        inst = self.inst
        if inst.out:
            t0 = time.perf_counter()
            try:
                self.sock.sendall(inst.out)  # the buffer itself: no copy (a failure leaves it to on_disconnected)
            except OSError as e:
                raise ProtocolError(f"send to the stream manager failed: {e}") from e
            inst.out.clear()
            inst.out_head = 0
            waited = time.perf_counter() - t0
            if waited > 0.001:
                inst.backpressure_time += waited

    def send_some(self) -> bool:
        """Non-blocking send (spouts); True when nothing is left unsent. When the socket takes part of
        a frame, ``inst.out_head`` says how much of ``out`` is its end (a rollback keeps it)."""
        inst = self.inst
        out = inst.out
        if out:
            try:
                n = self.sock.send(out, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError as e:
                raise ProtocolError(f"send to the stream manager failed: {e}") from e
            inst.out_head = rest_of_frame(out, inst.out_head, n)
            del out[:n]
        return not out

    def read(self, timeout: float) -> bool:
        """Read and handle what arrived within ``timeout``; True if anything did."""
        if timeout > 0:
            r, _, _ = select.select([self.sock], [], [], timeout)
            if not r:
                return False
        try:
            data = self.sock.recv(1 << 20, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as e:  # reset by a stream manager that died: the same as closed
            raise ProtocolError(f"receive from the stream manager failed: {e}") from e
        if not data:
            raise ProtocolError("stream manager closed the connection")
        inst = self.inst
        for f in self.reader.feed(data):
            was_initialized = inst.initialized
            inst.on_frame(f, time.perf_counter())
            if inst.initialized and not was_initialized:
                if self.gc_threshold:
                    gc.freeze()  # the component as initialize() left it: never garbage
                signal_ready()
            if len(inst.out) >= OUT_FLUSH_BYTES:
                self.send_out()
        return True

    def unread_bytes(self) -> int:
        return self.reader.pending + int.from_bytes(fcntl.ioctl(self.sock, termios.FIONREAD, b"\0\0\0\0"), "little")

    def serve(self, stop: list) -> None:
        """Until ``stop`` is not empty."""
        inst = self.inst
        timers = inst.timers
        timers.start(time.monotonic())
        while not stop:
            if inst.is_spout and inst.out and not self.send_some():
                # blocked: wait until the socket takes more, a frame arrives or a timer is due
                t0 = time.perf_counter()
                r, _, _ = select.select([self.sock], [self.sock], [], max(0.0, timers.next_due() - time.monotonic()))
                inst.backpressure_time += time.perf_counter() - t0
                if r:
                    self.read(0)
            elif inst.may_emit:
                emitted = inst.spout_burst()
                self.send_some()
                self.read(0.001 if not emitted else 0)
            else:
                self.read(max(0.0, timers.next_due() - time.monotonic()))
            now = time.monotonic()
            flush_due = now >= timers.next_flush
            if inst.on_timers(now):
                self.send_metrics()
            if flush_due:
                self.send_out()
                self.events.flush()
                if self.files is not None:
                    for alias, path in self.files.take():
                        inst.on_file_update(alias, path)

    def send_metrics(self) -> None:
        """The bucket's rows, to the container's metrics manager."""
        wall = time.time()
        self.metrics.send(self.inst.metrics_rows(wall, wall - self.last_metrics_wall, self.unread_bytes(),
                                                 time.perf_counter()))
        self.last_metrics_wall = wall

    def drain(self) -> None:
        """After SIGTERM (bolts): handle what is still in, or on its way to, the socket, until it has
        been quiet for ``DRAIN_QUIET_SECS`` or ``drain_max`` has passed."""
        start = quiet_since = time.monotonic()
        deadline = start + self.drain_max
        reads = 0
        while True:
            now = time.monotonic()
            if now - quiet_since >= DRAIN_QUIET_SECS:
                break
            if now >= deadline:
                log.warning("task %d: input still arriving after %.1fs of draining; stopping",
                            self.inst.task_id, self.drain_max)
                break
            try:
                got = self.read(min(DRAIN_QUIET_SECS - (now - quiet_since), deadline - now))
            except ProtocolError:
                break  # the stream manager is gone (kill): nothing more can arrive
            if got:
                quiet_since = time.monotonic()
                reads += 1
        log.info("task %d drained its input (%d reads) in %.2fs", self.inst.task_id, reads, time.monotonic() - start)

    def finish(self) -> None:
        """Send what is left (a spout's stream manager may not be reading it: bounded)."""
        self.inst.flush_all()
        if self.inst.out:
            self.sock.settimeout(self.drain_max)
            try:
                self.send_all()
            except ProtocolError as e:
                log.warning("task %d: its last output was not sent: %s", self.inst.task_id, e)


def run(env: RuntimeEnv) -> int:
    """The instance process: ``env.args.task`` in ``env.args.container``."""
    task = env.args.task
    cplan = env.container_plan()
    mine = [i for i in (cplan.instances if cplan else []) if i.id.task_id == task]
    if not mine:
        log.error("task %s is not in container %d of the packing plan", task, env.args.container)
        return 2
    component = mine[0].id.component
    files = start_shipped_files(env)
    inst, chain = _instance(env, component, task, files)
    events = EventsLog(events_path(env.log_dir))
    debug = _debug_settings(env, inst, events).start()
    stop: list = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    conn = _connect_stmgr(env, task, component, chain)
    gc_threshold = int(env.config["squall.instance.gc.threshold"])
    if gc_threshold:
        gc.set_threshold(gc_threshold, *gc.get_threshold()[1:])
    # draining after SIGTERM ends well before the executor's SIGKILL
    drain_max = max(0.5, float(env.config["squall.executor.kill.grace.secs"]) / 2)
    loop = _Loop(inst, conn, BlockingMetricsSender(env, local_host(env), task, component), drain_max, gc_threshold,
                 events, files)
    log.info("task %d (%s) connected to its stream manager", task, component)
    try:
        while True:
            try:
                loop.serve(stop)
                break
            except ProtocolError as e:
                if stop:
                    raise
                lost, failed = inst.on_disconnected(time.perf_counter())
                log.warning("task %d: lost the stream manager (%s): %d bytes unsent are lost%s; reconnecting",
                            task, e, lost, f", {failed} tuples of open trees failed (replayed)" if failed else "")
                loop.conn.close()
                loop.attach(_connect_stmgr(env, task, component, chain))
                log.info("task %d reconnected to its stream manager", task)
        if not inst.is_spout:
            loop.drain()
        loop.finish()
    except ProtocolError as e:
        log.error("task %d: %s; exiting so the executor restarts it", task, e)
        return 1
    except Exception as e:  # from user code (next_tuple, initialize, process without auto_fail): the task exits
        if isinstance(e, StorageError):  # a checkpoint that cannot be loaded: the runtime's failure
            inst.errors.runtime_failure(CHECKPOINT_STORAGE, str(e))
        elif not isinstance(e, UserError):  # a chain member's is recorded where it was raised
            inst.errors.record(UNCAUGHT)
        try:
            loop.send_metrics()  # the error reaches the topology master before the executor restarts the task
        except OSError as lost:
            log.warning("task %d: the row with its error was not sent: %s", task, lost)
        if isinstance(e, UserError):  # logged with its traceback where it was raised
            log.error("%s; exiting so the executor restarts the chain", e)
            return 1
        raise
    finally:
        debug.close()
        events.flush()
        inst.close()
        loop.conn.close()
    log.info("task %d stopped", task)
    return 0
