"""The stream manager's rules as a state machine: typed events in, actions out, no I/O.

``StreamManagerState.handle(event)`` takes what happened (a connection
finished its handshake or is gone, frames arrived, a write buffer crossed a
water mark, the topology master moved, a timer) and returns what to do (send
bytes, pause or resume reading, close, connect, send a metrics row, wake me
later). Time comes in with the events (``now``, monotonic seconds), so the
rules are tested without sockets or clocks. ``runtime/stmgr.py`` is the
asyncio shell that turns connection callbacks into events and carries out
the actions, in order, one event at a time.

Connections are named by typed identities: ``LocalTask`` (a local
instance, one per task), ``PeerOut`` / ``PeerIn`` (the outbound and inbound
links to another container's stream manager) and ``TMasterLink``.

Routing: a DATA, ACK or MARKER frame is never decoded; its header names the
destination task and the tuples it holds. It goes to the local instance of
that task, or unchanged to the stream manager of the container holding it
(one outbound link per other container; inbound links are only read). While
that link is down its frames wait here (``PeerLink.buffer``) and leave when
it is up again. Frames from another stream manager are delivered locally
only. A frame for a local task of the plan that is not connected (starting,
or restarted) is *held* until it connects, and before this stream manager has
a plan (it restarted, its instances rejoined it) every frame is held until
the plan says where it goes: held bytes count towards backpressure like a
down link's buffer. A frame with no route (a task no plan names) is dropped
and counted.

Retiring tasks: when a task leaves the physical plan (scale down) its route is
kept as a *stale* entry (task -> the container that had it) until the task is
actually gone: a local one until its connection closes, a remote one until the
link to its container is lost or ``stale_secs`` have passed (``Tick``). Frames
that senders batched with the old plan still reach it; the executor stops it
only after a drain period (``squall.executor.drain.secs``). The link to a
container that left the plan stays while stale routes use it.

Backpressure: this stream manager is congested while any of these holds:

- a connection's write buffer is over the high water mark: the shell sets
  the transports' write-buffer limits to ``high_bytes``/``low_bytes`` and
  reports ``WriteBlocked(who, True)`` when one goes over ``high`` and
  ``WriteBlocked(who, False)`` once it is back under ``low``;
- a local instance's queue is over its time bound (``QueueBound``,
  ``squall.stmgr.max.queue.secs``), until its ``consumed`` reports bring it
  back under;
- an outbound link that is down buffers more than ``high_bytes`` here, or
  more than ``high_bytes`` are held for local tasks; this congestion ends only
  once every down link buffers, and the held frames take, at most ``low_bytes``.

For a link that is up only the transport's own signals count (its bytes in
the asyncio buffer are not looked at). While congested, this stream manager
tells its local spouts to stop emitting (CONTROL ``backpressure``), stops
reading them, and tells every other stream manager whose link is up (the
others are told when their link comes up) to do the same; another
container's backpressure throttles the local spouts too, until it ends or its
inbound link is lost. Telling spouts matters: what a spout had written before
its stream manager stopped reading it would otherwise wait in kernel buffers
and flood the queue when reading resumes.

Checkpoints (docs/state.md): MARKER frames are routed as DATA frames are. A
``checkpoint`` step from the topology master goes to the local tasks (START to
the spouts only); one from a task goes to the topology master. On RESTORE
what is held here and buffered for down links is dropped (the old epoch's),
and until RESUME throttled spouts are read: they emit nothing, and their
RESTORED must arrive.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional, Union

from squall.idl import schema
from squall.metrics_schema import STMGR_COMPONENT
from squall.runtime.plan_delta import StalePlan, apply_delta
from squall.runtime.protocol import (ACK, CONTROL, DATA, DEST_COUNT, HEADER_SIZE, MARKER, ProtocolError,
                                     control_frame, decode_control)
from squall.runtime.queue_bound import QueueBound

log = logging.getLogger(__name__)

RETRY_SECS = 0.5  # before reconnecting a lost link
STALE_SECS = 60.0  # longest a remote task that left the plan keeps its route
REGISTER_DELAY_SECS = 0.05  # instances connecting together make one registration

_unpack_dest_count = DEST_COUNT.unpack_from


# ------------------------------------------------------------------ identities
@dataclass(frozen=True, slots=True)
class LocalTask:
    """A local instance's connection, known by its task and process: the same
    process connecting again replaces its earlier connection, and a task
    another process connects for goes to that one (``local``). A process
    running a chain connects once for all its tasks: ``members`` lists them,
    ``(task, component)``, its own first."""

    task: int
    component: str = field(compare=False)
    pid: int
    members: tuple = field(default=(), compare=False)

    @property
    def tasks(self) -> tuple:
        """``(task, component)`` of every task it runs."""
        return self.members or ((self.task, self.component),)


def takes_input(who: LocalTask) -> bool:
    """Whether a spout's connection also carries its chain's bolts (which may take tuples through the
    stream manager too): their ``consumed`` reports come on it, so reading it must not pause with the
    spout (the spout stops on the backpressure frame; pausing would keep its bolts' queue full for ever)."""
    return len(who.members) > 1


@dataclass(frozen=True, slots=True)
class PeerOut:
    """The outbound link to another container's stream manager: frames for its tasks leave by it."""

    container: int


@dataclass(frozen=True, slots=True)
class PeerIn:
    """An inbound link from another container's stream manager: frames for local tasks, its backpressure."""

    container: int


@dataclass(frozen=True, slots=True)
class TMasterLink:
    """The connection to the topology master at ``host:port`` (process ``pid``)."""

    host: str
    port: int
    pid: int

    @classmethod
    def at(cls, location: schema.TMasterLocation) -> "TMasterLink":
        """The link to a ``TMasterLocation``."""
        return cls(location.host, location.control_port, location.pid)


Peer = Union[LocalTask, PeerOut, PeerIn, TMasterLink]


# ------------------------------------------------------------------ events
@dataclass(frozen=True, slots=True)
class Connected:
    """``who``'s connection finished its handshake (an earlier one with the same identity is gone)."""

    who: Peer
    now: float


@dataclass(frozen=True, slots=True)
class Disconnected:
    """``who``'s connection is gone (not reported for connections closed by a ``Close`` action)."""

    who: Peer
    now: float


@dataclass(frozen=True, slots=True)
class FramesArrived:
    """Whole frames read from ``who``'s connection, in order."""

    who: Peer
    frames: list
    now: float


@dataclass(frozen=True, slots=True)
class WriteBlocked:
    """``who``'s write buffer went over the high water mark (True) or back under the low one (False)."""

    who: Peer
    blocked: bool
    now: float


@dataclass(frozen=True, slots=True)
class TMasterMoved:
    """The state manager names a (new) topology master; None when no record exists."""

    location: Optional[schema.TMasterLocation]


@dataclass(frozen=True, slots=True)
class Tick:
    """The periodic timer: ``now`` monotonic, ``wall`` epoch seconds, and the bytes waiting in the
    transports' write buffers (for the metrics row)."""

    now: float
    wall: float
    transport_unsent: int = 0


@dataclass(frozen=True, slots=True)
class RegisterDue:
    """The registration a ``Timer`` put off is due."""


Event = Union[Connected, Disconnected, FramesArrived, WriteBlocked, TMasterMoved, Tick, RegisterDue]


# ------------------------------------------------------------------ actions
class Send(NamedTuple):
    """Write ``data`` (whole frames) to ``who``. One per routed frame: a named tuple, the cheapest
    immutable value to build (a frozen dataclass costs twice as much on the hot path)."""

    who: Peer
    data: bytes


@dataclass(frozen=True, slots=True)
class PauseReading:
    """Stop (``paused``) or resume reading ``who``."""

    who: Peer
    paused: bool


@dataclass(frozen=True, slots=True)
class Close:
    """Close ``who``'s connection (abort it and log ``reason`` when one is given) and stop any attempt
    to connect it. The state has already treated it as gone: no ``Disconnected`` follows."""

    who: Peer
    reason: Optional[str] = None


@dataclass(frozen=True, slots=True)
class Connect:
    """Connect ``who`` to ``host:port`` after ``delay`` seconds, retrying until its handshake is done
    (then ``Connected``) or a ``Close`` of it."""

    who: PeerOut
    host: str
    port: int
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class ConnectTMaster:
    """After ``delay`` seconds, read where the topology master is and connect to it, retrying until
    a handshake is done (then ``Connected(TMasterLink)``); replaces any attempt under way."""

    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class SendMetrics:
    """Send this ``MetricsRow`` to the container's metrics manager."""

    row: schema.MetricsRow


@dataclass(frozen=True, slots=True)
class Timer:
    """Hand ``event`` back to the state machine after ``delay`` seconds."""

    delay: float
    event: Event


Action = Union[Send, PauseReading, Close, Connect, ConnectTMaster, SendMetrics, Timer]


# ------------------------------------------------------------------ state
class PeerLink:
    """What this stream manager knows of its outbound link to another container."""

    __slots__ = ("who", "host", "port", "up", "buffer", "buffered", "retiring")

    def __init__(self, container: int, host: str, port: int):
        self.who = PeerOut(container)
        self.host, self.port = host, port
        self.up = False  # handshake done, not lost: frames go to it; otherwise they wait in ``buffer``
        self.buffer: list = []
        self.buffered = 0  # bytes in ``buffer``
        self.retiring = False  # its container left the plan; kept for stale routes only

    @property
    def container(self) -> int:
        return self.who.container


class StreamManagerState:
    """Routing, retiring, backpressure and registration of one container's stream manager."""

    def __init__(self, container: int, host: str, spouts: set, high_bytes: int, low_bytes: int, *,
                 pid: int = 0, max_queue_secs: float = 1.0, stale_secs: float = STALE_SECS,
                 heartbeat_secs: float = 5.0, bucket_secs: float = 5.0):
        self.container = container
        self.host = host
        self.data_port = 0  # set by the shell once it listens; goes into the registration
        self.pid = pid
        self.spouts = set(spouts)  # component names that are spouts
        self.high, self.low = high_bytes, low_bytes
        self.max_queue_secs = max_queue_secs
        self.stale_secs = stale_secs
        self.heartbeat_secs = heartbeat_secs
        self.bucket_secs = bucket_secs

        self.local: dict = {}  # task -> LocalTask, connected (every task of a chain -> its process's)
        self.queues: dict = {}  # task -> QueueBound of its local instance
        self.task_container: dict = {}  # task -> container, current physical plan
        self.stale: dict = {}  # task -> (container, since): left the plan, maybe still alive
        self.peers: dict = {}  # container -> PeerLink
        self.tmaster: Optional[TMasterLink] = None  # connected
        self.pplan: Optional[schema.PhysicalPlan] = None
        self.pplan_frame: Optional[bytes] = None
        self.plan_stale = False  # a delta did not apply to ``pplan``: the whole plan is asked for again

        self.blocked: set = set()  # identities whose write buffer went over high and not yet under low
        self.full_queues: set = set()  # local tasks whose queue is over its bound
        self.paused: set = set()  # local spout tasks told to stop (their reading paused, unless takes_input)
        self.bp_self = False  # this stream manager is congested (and has told its peers)
        self.bp_remote: set = set()  # containers whose stream manager reports backpressure
        self.bp_since: Optional[float] = None  # throttling local spouts since
        self.bp_time = 0.0  # seconds throttled, not yet reported
        self.bp_episodes = 0

        self.restoring = False  # between a checkpoint's RESTORE and RESUME (docs/state.md)
        self.held: dict = {}  # task -> frames waiting for it to connect (or for a plan naming it)
        self.held_bytes = 0

        self.forwarded_frames = 0
        self.forwarded_bytes = 0
        self.dropped_frames = 0
        self._register_pending = False
        self._next_heartbeat: Optional[float] = None
        self._next_metrics = 0.0
        self._last_wall = 0.0
        self._handlers: dict[type, Callable[..., list]] = {  # event type -> its handler
            FramesArrived: self._frames_arrived, Connected: self._connected, Disconnected: self._disconnected,
            WriteBlocked: self._write_blocked, TMasterMoved: self._tmaster_moved, Tick: self._tick,
            RegisterDue: self._register_due,
        }

    def handle(self, event: Event) -> list:
        """The actions ``event`` calls for, to be carried out in order."""
        return self._handlers[type(event)](event)

    # events ------------------------------------------------------------------------
    def _frames_arrived(self, ev: FramesArrived) -> list:
        who, now, out = ev.who, ev.now, []
        kind = type(who)
        if kind is LocalTask:
            for f in ev.frames:
                ftype = f[4]
                if ftype == DATA or ftype == ACK or ftype == MARKER:
                    self._route(f, out, now)
                elif ftype == CONTROL:
                    try:
                        msg = decode_control(f)
                    except ProtocolError as e:
                        return self._close(who, str(e), out, now)
                    if msg.consumed is not None:
                        self._consumed(who.task, msg.consumed, out, now)
                    elif msg.checkpoint is not None:
                        if self.tmaster is not None:  # lost otherwise: the coordinator times the step out
                            out.append(Send(self.tmaster, f))
                    else:
                        return self._close(who, f"unexpected control message from task {who.task}", out, now)
                else:
                    return self._close(who, f"unexpected frame type {ftype} from task {who.task}", out, now)
        elif kind is PeerIn:
            local = self.local
            for f in ev.frames:
                ftype = f[4]
                if ftype == DATA or ftype == ACK or ftype == MARKER:
                    dest, count = _unpack_dest_count(f, HEADER_SIZE)
                    task = local.get(dest)
                    if task is not None:
                        self._deliver(task, f, count, out, now)
                        self.forwarded_frames += 1
                    elif self.pplan is None or self.task_container.get(dest) == self.container:
                        self._hold(dest, f, out, now)
                    else:
                        self.dropped_frames += 1
                else:
                    try:
                        bp = decode_control(f).backpressure
                    except ProtocolError as e:
                        return self._close(who, str(e), out, now)
                    if bp is not None:
                        (self.bp_remote.add if bp.on else self.bp_remote.discard)(bp.container)
                        log.info("container %d %s backpressure", bp.container, "started" if bp.on else "ended")
                        self._apply_throttle(out, now)
        elif kind is TMasterLink:
            if who != self.tmaster:
                return out  # a topology master this stream manager has left
            for f in ev.frames:
                try:
                    msg = decode_control(f)
                except ProtocolError as e:
                    return self._close(who, str(e), out, now)
                if msg.physical_plan is not None:
                    self._set_plan(msg.physical_plan, f, out, now)
                elif msg.plan_delta is not None:
                    self._apply_delta(msg.plan_delta, out, now)
                elif msg.checkpoint is not None:
                    self._checkpoint(msg.checkpoint, f, out, now)
                elif msg.register_response is not None and not msg.register_response.ok:
                    log.error("topology master refused registration: %s", msg.register_response.error)
        else:
            return self._close(who, "unexpected frames on an outbound link", out, now)
        return out

    def _connected(self, ev: Connected) -> list:
        who, now, out = ev.who, ev.now, []
        kind = type(who)
        if kind is LocalTask:
            task = who.task
            for t, _ in who.tasks:
                old = self.local.get(t)
                if old is not None:
                    log.warning("task %d connected again (pid %d, before pid %d)", t, who.pid, old.pid)
                    self._forget_local(old)
            for t, _ in who.tasks:
                self.local[t] = who
            self.queues[task] = QueueBound(self.max_queue_secs)
            log.info("task %d (%s, pid %d) connected%s", task, who.component, who.pid,
                     f", running the chain {' -> '.join(f'{c}[{t}]' for t, c in who.members)}" if who.members else "")
            if who.component in self.spouts and self.throttled:
                self.paused.add(task)
                if self._pauses_reading(who):
                    out.append(PauseReading(who, True))
                out.append(Send(who, self.backpressure_frame(True)))
            if self.pplan is not None and task in self.task_container:
                out.append(Send(who, self.pplan_frame))
            for t, _ in who.tasks:
                held = self.held.pop(t, None)
                if held:
                    self.held_bytes -= sum(map(len, held))
                    log.info("task %d: delivering %d frames held while it was not connected", t, len(held))
                    for f in held:
                        self._deliver(who, f, _unpack_dest_count(f, HEADER_SIZE)[1], out, now)
            self._schedule_register(out)
            self._update_congestion(out, now)  # a replaced connection's congestion is gone
        elif kind is PeerOut:
            link = self.peers.get(who.container)
            if link is None:  # the link was dropped while this connection was being made
                out.append(Close(who))
                return out
            link.up = True
            flushed = link.buffered
            out.extend(Send(who, data) for data in link.buffer)
            link.buffer, link.buffered = [], 0
            if self.bp_self:
                out.append(Send(who, self.backpressure_frame(True)))
            log.info("connected to the stream manager of container %d", who.container)
            if flushed <= self.high:
                # the transport cannot go over its high mark from these alone; a bigger flush is judged
                # by the transport's signal (WriteBlocked) or, failing that, at the next Tick
                self._update_congestion(out, now)
        elif kind is PeerIn:
            if who.container in self.bp_remote:  # said by its earlier connection: it repeats it if still so
                self.bp_remote.discard(who.container)
                self._apply_throttle(out, now)
        elif kind is TMasterLink:
            if self.tmaster is not None and self.tmaster != who:
                out.append(Close(self.tmaster))
            self.tmaster = who
            log.info("connected to the topology master at %s:%d", who.host, who.port)
            out.append(Send(who, self.registration_frame()))
        return out

    def _disconnected(self, ev: Disconnected) -> list:
        out: list = []
        self._lost(ev.who, out, ev.now)
        return out

    def _write_blocked(self, ev: WriteBlocked) -> list:
        out: list = []
        if ev.blocked:
            self.blocked.add(ev.who)
        else:
            self.blocked.discard(ev.who)
        self._update_congestion(out, ev.now)
        return out

    def _tmaster_moved(self, ev: TMasterMoved) -> list:
        loc = ev.location
        if loc is None or (self.tmaster is not None and self.tmaster == TMasterLink.at(loc)):
            return []
        log.info("topology master is now at %s:%d (pid %d)", loc.host, loc.control_port, loc.pid)
        out: list = []
        if self.tmaster is not None:
            out.append(Close(self.tmaster))
            self.tmaster = None
        out.append(ConnectTMaster())
        return out

    def _tick(self, ev: Tick) -> list:
        now, out = ev.now, []
        if self.stale:
            self._expire_stale(now, out)
        self._update_congestion(out, now)  # a flushed link's congestion, if no signal ended it
        if self._next_heartbeat is None:  # the first tick
            self._next_heartbeat, self._next_metrics, self._last_wall = now, now + self.bucket_secs, ev.wall
        if now >= self._next_heartbeat:
            self._next_heartbeat = now + self.heartbeat_secs
            if self.tmaster is not None:
                out.append(Send(self.tmaster, control_frame(heartbeat=schema.Heartbeat(ev.wall))))
        if now >= self._next_metrics:
            self._next_metrics = now + self.bucket_secs
            out.append(SendMetrics(self.metrics_row(ev.wall, ev.wall - self._last_wall, now,
                                                    ev.transport_unsent)))
            self._last_wall = ev.wall
        return out

    def _register_due(self, ev: RegisterDue) -> list:
        self._register_pending = False
        return [Send(self.tmaster, self.registration_frame())] if self.tmaster is not None else []

    # connections -------------------------------------------------------------------
    def _lost(self, who: Peer, out: list, now: float) -> None:
        """``who``'s connection is gone."""
        self.blocked.discard(who)
        kind = type(who)
        if kind is LocalTask:
            mine = [t for t, _ in who.tasks if self.local.get(t) is who]  # not those a newer connection took
            if not mine:
                return
            if self.local.get(who.task) is who:
                self._forget_local(who)
            for t in mine:
                del self.local[t]
                if self.stale.pop(t, None) is not None:
                    log.info("task %d (retired) disconnected; its route is gone", t)
                else:
                    log.info("task %d disconnected", t)
            self._schedule_register(out)
        elif kind is PeerOut:
            link = self.peers.get(who.container)
            if link is None or not link.up:
                return
            link.up = False
            if link.retiring:
                self._drop_link(link, out)
            else:
                log.warning("lost the stream manager of container %d; reconnecting", who.container)
                out.append(Connect(who, link.host, link.port, RETRY_SECS))
        elif kind is PeerIn:
            if who.container in self.bp_remote:
                self.bp_remote.discard(who.container)
                self._apply_throttle(out, now)
        elif kind is TMasterLink:
            if who == self.tmaster:
                self.tmaster = None
                log.warning("lost the topology master; routing on the last physical plan, reconnecting")
                out.append(ConnectTMaster(RETRY_SECS))
        self._update_congestion(out, now)

    def _close(self, who: Peer, reason: str, out: list, now: float) -> list:
        """Close a connection that broke the protocol (and act as if it was lost)."""
        out.append(Close(who, reason))
        self._lost(who, out, now)
        return out

    def _forget_local(self, who: LocalTask) -> None:
        """A local instance's connection is gone: its queue and its congestion go with it."""
        self.queues.pop(who.task, None)
        self.full_queues.discard(who.task)
        self.paused.discard(who.task)
        self.blocked.discard(who)

    def connections(self) -> list:
        """The local instances' connections, one each (a chain's tasks share theirs)."""
        return [who for task, who in self.local.items() if task == who.task]

    # routing -------------------------------------------------------------------------
    def _route(self, f: bytes, out: list, now: float) -> None:
        """A DATA or ACK frame from a local instance, to its destination task."""
        dest, count = _unpack_dest_count(f, HEADER_SIZE)
        where = self.task_container.get(dest)
        if where is None:
            # a task that left the plan (senders batched with the old plan) or none known yet
            stale = self.stale.get(dest)
            if stale is None and self.pplan is None and dest not in self.local:
                self._hold(dest, f, out, now)  # no plan yet (this stream manager restarted): wait for it
                return
            where = self.container if stale is None else stale[0]
        task = self.local.get(dest) if where == self.container else None
        if task is not None:
            self._deliver(task, f, count, out, now)
        elif where == self.container and dest in self.task_container:
            self._hold(dest, f, out, now)  # a local task of the plan, not connected (yet, or again)
            return
        else:
            link = self.peers.get(where)
            if link is None:
                self.dropped_frames += 1
                if self.dropped_frames % 1000 == 1:
                    log.warning("no route to task %d (frames dropped so far: %d)", dest, self.dropped_frames)
                return
            if link.up:
                out.append(Send(link.who, f))
            else:
                link.buffer.append(f)
                link.buffered += len(f)
                if link.buffered > self.high:
                    self._update_congestion(out, now)
        self.forwarded_frames += 1
        self.forwarded_bytes += len(f)

    def _hold(self, task: int, f: bytes, out: list, now: float) -> None:
        """Keep a frame for ``task`` until it connects, or until a plan says where it is. Held bytes
        count towards backpressure like a down link's buffer, so holding is bounded."""
        self.held.setdefault(task, []).append(f)
        self.held_bytes += len(f)
        if self.held_bytes > self.high:
            self._update_congestion(out, now)

    def _deliver(self, task: LocalTask, f: bytes, count: int, out: list, now: float) -> None:
        """A frame to a local instance; its queue may go over its bound."""
        out.append(Send(task, f))
        if count and self.queues[task.task].delivered(count):
            self.full_queues.add(task.task)
            self._update_congestion(out, now)

    def _consumed(self, task: int, tuples: int, out: list, now: float) -> None:
        if self.queues[task].consumed(tuples, now):
            self.full_queues.discard(task)
            self._update_congestion(out, now)

    # plan and retiring -----------------------------------------------------------------
    def _apply_delta(self, delta: schema.PhysicalPlanDelta, out: list, now: float) -> None:
        """A plan sent as what changed (``runtime/plan_delta.py``): the whole plan rebuilt, and its frame made
        for the local instances, which take whole plans; one for a version this stream manager does not
        hold is dropped and the whole plan asked for (a registration saying it holds none)."""
        try:
            pplan = apply_delta(self.pplan, delta) if self.pplan is not None else None
        except StalePlan as e:
            pplan = None
            log.warning("%s: asking for the whole plan", e)
        if pplan is None:
            self.plan_stale = True
            self._schedule_register(out)
            return
        self._set_plan(pplan, control_frame(physical_plan=pplan), out, now)

    def _set_plan(self, pplan: schema.PhysicalPlan, raw_frame: bytes, out: list, now: float) -> None:
        self.pplan = pplan
        self.pplan_frame = raw_frame
        self.plan_stale = False
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
            if s is None and cid in still_routed and link.up:
                if not link.retiring:
                    log.info("container %d left the plan; keeping its link while its tasks %s may still "
                             "receive", cid, sorted(t for t, (c, _) in self.stale.items() if c == cid))
                link.retiring = True
            elif s is None or (s.host, s.data_port) != (link.host, link.port):
                self._drop_link(link, out)
            else:
                link.retiring = False
        for cid, s in wanted.items():
            if cid not in self.peers:
                link = self.peers[cid] = PeerLink(cid, s.host, s.data_port)
                out.append(Connect(link.who, link.host, link.port))
        for who in self.connections():
            out.append(Send(who, raw_frame))  # retiring local tasks too: they stop routing to removed tasks
        for task in [t for t in self.held if new.get(t) != self.container]:
            frames = self.held.pop(task)  # held without a plan, or for a task that moved or left: route again
            self.held_bytes -= sum(map(len, frames))
            for f in frames:
                self._route(f, out, now)
        self._update_congestion(out, now)  # a dropped link's buffer or blocked transport is gone
        log.info("physical plan %s (%s): %d instances, %d stream managers", pplan.packing_plan_id,
                 schema.TopologyStatus._VALUES_TO_NAMES.get(pplan.status), len(pplan.instances), len(pplan.stmgrs))

    # checkpoints ---------------------------------------------------------------------
    def _checkpoint(self, msg: schema.CheckpointMessage, f: bytes, out: list, now: float) -> None:
        """A checkpoint step from the topology master, for local tasks: START to the spouts, the rest to
        every task. On RESTORE what is held here, or buffered for a down link, is of the old epoch: gone."""
        spouts_only = msg.step == schema.CheckpointStep.START
        for who in self.connections():
            if not spouts_only or who.component in self.spouts:
                out.append(Send(who, f))
        if msg.step in (schema.CheckpointStep.RESTORE, schema.CheckpointStep.RESUME):
            # until RESUME spouts do not emit: their RESTORED must be read, throttled or not
            self.restoring = msg.step == schema.CheckpointStep.RESTORE
            for who in self.connections():
                if who.task in self.paused and not takes_input(who):
                    out.append(PauseReading(who, not self.restoring))
        if msg.step == schema.CheckpointStep.RESTORE:
            dropped = sum(map(len, self.held.values())) + sum(l.buffered for l in self.peers.values())
            self.held.clear()
            self.held_bytes = 0
            for link in self.peers.values():
                link.buffer, link.buffered = [], 0
            if dropped:
                log.info("restore in epoch %d: dropped %d bytes of frames held here", msg.epoch, dropped)
            self._update_congestion(out, now)

    def _pauses_reading(self, who: LocalTask) -> bool:
        """A throttled spout's connection is not read (what it wrote before it stopped stays in kernel
        buffers), unless it carries a chain's bolts (``takes_input``) or a restore is under way (its
        RESTORED must reach the topology master; it emits nothing until RESUME)."""
        return not takes_input(who) and not self.restoring

    def _drop_link(self, link: PeerLink, out: list) -> None:
        if self.peers.get(link.container) is link:
            del self.peers[link.container]
        out.append(Close(link.who))
        self.blocked.discard(link.who)
        for task in [t for t, (c, _) in self.stale.items() if c == link.container]:
            del self.stale[task]

    def _expire_stale(self, now: float, out: list) -> None:
        """Forget remote tasks that left the plan ``stale_secs`` ago (local ones go when they disconnect)."""
        for task, (cid, since) in list(self.stale.items()):
            if cid != self.container and now - since >= self.stale_secs:
                del self.stale[task]
        still_routed = {cid for cid, _ in self.stale.values()}
        for link in list(self.peers.values()):
            if link.retiring and link.container not in still_routed:
                self._drop_link(link, out)

    # backpressure ---------------------------------------------------------------------
    @property
    def throttled(self) -> bool:
        """Local spouts must stop: this or another stream manager is congested."""
        return self.bp_self or bool(self.bp_remote)

    def _update_congestion(self, out: list, now: float) -> None:
        peers = self.peers.values()
        over = (bool(self.blocked) or bool(self.full_queues) or self.held_bytes > self.high
                or any(not l.up and l.buffered > self.high for l in peers))
        if over == self.bp_self:
            return
        if not over and (self.held_bytes > self.low or any(not l.up and l.buffered > self.low for l in peers)):
            return  # a down link's buffer, or held frames, end congestion only under the low mark
        self.bp_self = over
        if over:
            self.bp_episodes += 1
        # an episode lasts milliseconds at saturation: one line per bucket (metrics_row), not per episode
        log.debug("backpressure %s", "started" if over else "ended")
        msg = self.backpressure_frame(over)
        for link in peers:
            if link.up:  # the others are told once they are up
                out.append(Send(link.who, msg))
        self._apply_throttle(out, now)

    def _apply_throttle(self, out: list, now: float) -> None:
        """Pause or resume reading the local spouts, and tell them to stop or go on emitting."""
        throttled = self.throttled
        if throttled and self.bp_since is None:
            self.bp_since = now
        elif not throttled and self.bp_since is not None:
            self.bp_time += now - self.bp_since
            self.bp_since = None
        frame = None
        for who in self.connections():
            task = who.task
            if who.component in self.spouts and (task in self.paused) != throttled:
                (self.paused.add if throttled else self.paused.discard)(task)
                if self._pauses_reading(who):
                    out.append(PauseReading(who, throttled))
                frame = frame or self.backpressure_frame(throttled)
                out.append(Send(who, frame))  # the spout stops (or resumes) emitting

    def backpressure_frame(self, on: bool) -> bytes:
        return control_frame(backpressure=schema.Backpressure(self.container, on))

    def backpressure_ms(self, now: float) -> float:
        """Time throttled since the last call, ms."""
        total = self.bp_time
        if self.bp_since is not None:
            total += now - self.bp_since
            self.bp_since = now
        self.bp_time = 0.0
        return total * 1000

    # tmaster and metrics ------------------------------------------------------------------
    def _schedule_register(self, out: list) -> None:
        if not self._register_pending:
            self._register_pending = True
            out.append(Timer(REGISTER_DELAY_SECS, RegisterDue()))

    def registration(self) -> schema.RegisterStMgr:
        instances = [
            schema.InstanceLocation(id=schema.InstanceId(component=dict(who.tasks)[task], task_id=task,
                                                         component_index=-1),
                                    container=self.container, pid=who.pid)
            for task, who in sorted(self.local.items())
        ]
        loc = schema.StMgrLocation(container=self.container, host=self.host, data_port=self.data_port, pid=self.pid)
        held = None if self.pplan is None or self.plan_stale else self.pplan.version
        return schema.RegisterStMgr(stmgr=loc, instances=instances, plan_version=held)

    def registration_frame(self) -> bytes:
        return control_frame(register_stmgr=self.registration())

    def metrics_row(self, wall: float, interval: float, now: float, transport_unsent: int = 0) -> schema.MetricsRow:
        """This bucket's row (and the counters start again)."""
        queued = {task: q.queued for task, q in self.queues.items()}
        user = {"frames_forwarded": self.forwarded_frames, "bytes_forwarded": self.forwarded_bytes,
                "queued_tuples": queued,
                "frames_dropped": self.dropped_frames, "backpressure_episodes": self.bp_episodes,
                "held_bytes": self.held_bytes,
                "unsent_bytes": transport_unsent + sum(l.buffered for l in self.peers.values())}
        bp_ms = self.backpressure_ms(now)
        if self.bp_episodes:
            log.info("backpressure: %d episodes, %.0f ms throttled in the last %.1f s",
                     self.bp_episodes, bp_ms, interval)
        self.forwarded_frames = self.forwarded_bytes = self.dropped_frames = self.bp_episodes = 0
        return schema.MetricsRow(
            ts=wall, interval_secs=interval, process="stmgr", component=STMGR_COMPONENT, task_id=None,
            emit_count=0, execute_count=0, ack_count=0, fail_count=0, queue_depth=sum(queued.values()),
            backpressure_ms=bp_ms, user=json.dumps(user), pid=self.pid, container=self.container)
