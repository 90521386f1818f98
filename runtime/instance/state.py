"""What every task's instance knows and does, whatever its role: the state machine's common core.

``InstanceState`` is driven without sockets. Events come in as calls:
``on_frame`` (a frame from the stream manager: tuples, acks, the physical
plan, backpressure), ``on_timers`` (flush, tick, expire trees, end a metrics
bucket), ``on_disconnected`` (the stream manager is gone). Actions go out as
state: the frames to send accumulate in ``out``, ``metrics_row`` is the
bucket's row. The roles add their own events: ``SpoutInstance.spout_burst``
(its turn to emit), ``BoltInstance.on_data`` (tuples to process).
"""
from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING, Dict, Iterable, Mapping, Optional, Sequence

from squall.component import TICK_FREQ_KEY, Component, Tuple, TopologyContext
from squall.conf import Config
from squall.idl import schema
from squall.importing import import_object
from squall.metrics_schema import CHAIN
from squall.runtime.instance.batch import Batch
from squall.runtime.instance.combine import Combining, plan_combining
from squall.runtime.instance.emit import ColumnRoute, FastEmit
from squall.runtime.instance.tuples import Received
from squall.runtime.protocol import (ACK, CONTROL, DATA, HEADER, MARKER, ProtocolError, data_header,
                                     decode_control, frame_count, payload_packer)
from squall.runtime.routing import RoutingError, StreamRoute, build_routes, str_key_cache
from squall.runtime.user_errors import UserErrors

if TYPE_CHECKING:
    from squall.runtime.instance.checkpointing import Checkpointing
    from squall.runtime.instance.edge import Edge

log = logging.getLogger(__name__)


class Timers:
    """When an instance next flushes its batches, reports metrics, ticks and expires trees (monotonic)."""

    def __init__(self, config: Config, ticks: bool, expires: bool, message_timeout: float,
                 tick_every: Optional[float] = None) -> None:
        self.flush_every = float(config["squall.instance.flush.interval.ms"]) / 1000
        self.bucket = float(config["topology.builtin.metrics.bucket.size.secs"])
        self.tick_every = tick_every if ticks else None
        # spouts at least once: trees past topology.message.timeout.secs fail, checked ten times per timeout
        self.expire_every = min(1.0, message_timeout / 10)
        self.expires = expires
        self.start(0.0)

    def start(self, now: float) -> None:
        self.next_flush = now + self.flush_every
        self.next_metrics = now + self.bucket
        self.next_tick = now + self.tick_every if self.tick_every else float("inf")
        self.next_expire = now + self.expire_every if self.expires else float("inf")

    def next_due(self) -> float:
        return min(self.next_flush, self.next_metrics, self.next_tick, self.next_expire)


def _own_tick(topology: schema.Topology, component_name: str, config: Config) -> Optional[float]:
    """The component's ``topology.tick.tuple.freq.secs``: its own config's when it sets one (Storm's
    per-component tick frequency; a windowed bolt's build() sets it), else ``config``'s."""
    from squall.logical import component_config, find_component

    if TICK_FREQ_KEY in find_component(topology, component_name).config:
        return component_config(topology, component_name)[TICK_FREQ_KEY]
    return config[TICK_FREQ_KEY]


class InstanceState:
    """One task's state: its component, routes, batches and counters. Subclassed by role
    (``SpoutInstance``, ``BoltInstance``, ``ReliableBoltInstance``): make one with
    ``make_instance``."""

    is_spout = False
    may_emit = False  # a spout's turn to call next_tuple (SpoutInstance)
    # in a chain (chain.py): the edge to the next member (edge.py)
    edge: Optional[Edge] = None

    def __init__(self, topology: schema.Topology, component_name: str, task_id: int, container: int,
                 config: Optional[Config], batch_size: int = 1000, component_obj: Optional[Component] = None,
                 chained: Optional[Mapping[str, int]] = None, fast_path: bool = True):
        from squall.logical import find_component, topology_config

        config = config or topology_config(topology)
        self.topology = topology
        self.component_name = component_name
        self.task_id = task_id
        self.container = container
        self.config = config
        self.batch_size = batch_size
        self.fast_path = fast_path  # emit, ack and fail by generated methods (emit.py); off: the generic ones
        self.reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
        self.message_timeout = float(config["topology.message.timeout.secs"])
        self.waiting: list = []  # DATA frames from senders newer than the plan: handled once a plan names them
        self.in_bytes = self.in_tuples = 0  # DATA read this bucket: the size of a queued tuple
        self.timers = Timers(config, ticks=not self.is_spout, expires=self.is_spout and self.reliable,
                             message_timeout=self.message_timeout,
                             tick_every=_own_tick(topology, component_name, config))
        self.fields_of = {(c.name, s.name): list(s.fields) for c in topology.components for s in c.outputs}
        self.task_component: Dict[int, str] = {}
        self.routes: Dict[str, StreamRoute] = {}
        self.context: Optional[TopologyContext] = None
        self.files: Mapping[str, str] = {}  # shipped files: alias -> local path, kept current by the loop
        self.initialized = False
        self.active = False
        self.plan: Optional[schema.PhysicalPlan] = None
        self.out = bytearray()
        self.out_head = 0  # bytes at the start of ``out`` that end a frame the socket took the start of (loop.py)
        self.batches: Dict[int, Batch] = {}  # destination task -> Batch, for every task of the plan
        self.fast_routes: Dict[str, tuple] = {}  # stream -> what the fast emit path needs of it (``FastEmit``)
        self.column_routes: Dict[str, ColumnRoute] = {}  # stream -> what ``emit_columns`` needs of it
        self.combining: Optional[Combining] = None  # map-side combining into the consumers that declare it
        self.packb = payload_packer()
        self.emit_cell = [0]  # emits since the last metrics bucket (``emit_count``), bumped by the fast paths
        self.chained = chained  # consumer -> its task in this process (a chain): every tuple for it goes there
        self.errors = UserErrors()  # raised in user code this bucket: reported in the metrics row
        self.epoch = 0  # checkpoints: tuples and markers of another epoch are dropped (docs/state.md)
        self.reset_metrics()
        spec = find_component(topology, component_name)
        self.checkpoint = self._checkpointing(spec)
        self.init_role()
        if component_obj is None:
            component_obj = self.runtime_class(import_object(spec.class_name))()
        else:
            component_obj.__class__ = self.runtime_class(type(component_obj))
        component_obj.attach(self)
        self.component = component_obj

    def _checkpointing(self, spec: schema.Component) -> Optional[Checkpointing]:
        """The task's part in checkpoints, when its topology runs them (``checkpointing.py``)."""
        from squall.logical import component_config
        from squall.stateful import checkpointing

        if not checkpointing(self.topology, self.config):
            return None
        from squall.runtime.instance.checkpointing import Checkpointing

        config = component_config(self.topology, self.component_name)
        return Checkpointing(self, bool(spec.stateful), int(config["squall.state.key.groups"]),
                             float(config["squall.state.alignment.buffer.mb"]) * 1024 * 1024)

    def init_role(self) -> None:
        """The role's own state, set before the component is made (its class depends on it)."""

    def runtime_class(self, cls: type) -> type:
        """The component's class with this instance's fast paths (``runtime/instance/emit.py``)."""
        from squall.runtime.instance.emit import runtime_class

        return runtime_class(self, cls)

    # metrics -----------------------------------------------------------------
    @property
    def emit_count(self) -> int:
        """Emits since the last metrics bucket (a one-item list the fast emit path can bump cheaply)."""
        return self.emit_cell[0]

    @emit_count.setter
    def emit_count(self, value: int) -> None:
        self.emit_cell[0] = value

    def reset_metrics(self) -> None:
        self.emit_count = 0
        self.execute_count = 0
        self.ack_count = 0
        self.fail_count = 0
        self.execute_time = 0.0
        self.execute_calls = 0
        self.process_time = 0.0
        self.process_calls = 0
        self.backpressure_time = 0.0
        self.complete_time = 0.0
        self.completed = 0
        self.timeouts = 0

    def metrics_row(self, now: float, interval: float, unread_bytes: int = 0, clock: float = 0.0) -> schema.MetricsRow:
        """The bucket's row: ``now`` is the wall time, ``clock`` the ``perf_counter`` (backpressure
        time so far counts in this bucket), ``unread_bytes`` what waits in the socket and reader."""
        queue_depth = self.queue_depth(unread_bytes)
        user = self.role_metrics(clock)
        if self.checkpoint is not None:
            user.update(self.checkpoint.metrics())
        if self.combining is not None:
            user.update(self.combining.metrics())
        self.errors.report(user)
        if self.context is not None:
            for name, (metric, _bucket) in self.context.metrics.items():
                try:
                    user[name] = metric.get_value_and_reset()
                except Exception:
                    log.exception("user metric %r failed", name)
                    self.errors.record(f"metric {name!r}")
        try:
            user_json = json.dumps(user, default=str)
        except (TypeError, ValueError):
            user_json = "{}"
        row = schema.MetricsRow(
            ts=now, interval_secs=interval, process="instance", component=self.component_name,
            task_id=self.task_id, emit_count=self.emit_count, execute_count=self.execute_count,
            ack_count=self.ack_count, fail_count=self.fail_count,
            execute_latency_ms=(self.execute_time / self.execute_calls * 1000) if self.execute_calls else None,
            process_latency_ms=(self.process_time / self.process_calls * 1000) if self.process_calls else None,
            complete_latency_ms=(self.complete_time / self.completed * 1000) if self.completed else None,
            queue_depth=queue_depth,
            backpressure_ms=self.backpressure_time * 1000, user=user_json, pid=os.getpid(),
            container=self.container,
        )
        self.reset_metrics()
        return row

    def metrics_rows(self, now: float, interval: float, unread_bytes: int = 0, clock: float = 0.0,
                     chain: Optional[dict] = None) -> list:
        """The bucket's rows: this task's (``chain``: its share of a chain's process, in ``user``)."""
        row = self.metrics_row(now, interval, unread_bytes, clock)
        if chain is not None:
            row.user = json.dumps({**json.loads(row.user), CHAIN: chain})
        return [row]

    def close(self) -> None:
        """The component's ``close()``, once it was initialized; an error in it is logged."""
        if self.initialized:
            try:
                self.component.close()
            except Exception:
                log.exception("close() of task %d (%s) failed", self.task_id, self.component_name)

    def account_handed_on(self, seconds: float) -> None:
        """``seconds`` of this task's execute time were the next chain member's, in calls its edge made
        (``Chain.metrics_rows`` counts them as the callee's)."""
        self.execute_time = max(0.0, self.execute_time - seconds)

    def role_metrics(self, clock: float) -> dict:
        """The role's own figures for the bucket's ``user`` metrics (and its backpressure time so far)."""
        return {}

    def queue_depth(self, unread_bytes: int) -> int:
        """Tuples received and not processed: frames waiting for a plan, and ``unread_bytes`` (socket
        and reader) in tuples of this bucket's average size."""
        depth = sum(frame_count(f) for f in self.waiting)
        if unread_bytes and self.in_tuples:
            depth += round(unread_bytes * self.in_tuples / self.in_bytes)
        self.in_bytes = self.in_tuples = 0
        return depth

    # events from the I/O loop ------------------------------------------------------
    def on_frame(self, f: bytes, clock: float) -> None:
        """One frame from the stream manager (``clock``: its ``perf_counter`` arrival)."""
        ftype = f[4]
        if ftype == DATA:
            self.in_bytes += len(f)
            self.in_tuples += frame_count(f)
            if not self.initialized or self.on_data(f, clock) is None:
                self.waiting.append(f)
        elif ftype == ACK:
            self.on_acks(f)
        elif ftype == MARKER and self.checkpoint is not None:
            self.checkpoint.on_marker(f)
        elif ftype == CONTROL:
            msg = decode_control(f)
            if msg.backpressure is not None:
                self.on_throttle(msg.backpressure.on, clock)
            elif msg.checkpoint is not None and self.checkpoint is not None:
                self.checkpoint.on_step(msg.checkpoint)
            elif msg.physical_plan is not None:
                self.on_physical_plan(msg.physical_plan)
                waiting, self.waiting = self.waiting, []
                for w in waiting:
                    if self.on_data(w, clock) is None:
                        self.waiting.append(w)
        else:
            raise ProtocolError(f"unexpected frame type {ftype} from the stream manager")

    def on_data(self, frame_bytes: bytes, arrived: float) -> Optional[int]:
        """Tuples for this task (bolts); None to keep the frame until a plan names its sender."""
        raise ProtocolError(f"task {self.task_id} ({self.component_name}) takes no tuples")

    def on_acks(self, frame_bytes: bytes) -> None:
        """Acks of trees (spouts at least once)."""
        raise ProtocolError(f"task {self.task_id} ({self.component_name}) tracks no trees: unexpected ACK frame")

    def on_throttle(self, on: bool, clock: float) -> None:
        """The stream manager's word to stop emitting (spouts)."""

    # checkpoints (checkpointing.py) ---------------------------------------------------
    def drop_unsent(self, held: list) -> None:
        """A rollback: the tuples and markers emitted and not sent, what waits for a plan and the frames
        ``held`` for an alignment are of the old epoch. The rest of what waits in ``out`` is sent: the
        end of a frame partly sent (the stream manager has its start and would read whatever came next
        as its rest), and reports (``consumed``: without them the stream manager's bound on this task's
        queue would stay full for ever; acks)."""
        out, pos, kept = self.out, self.out_head, bytearray(self.out[:self.out_head])
        while pos < len(out):
            end = pos + 4 + HEADER.unpack_from(out, pos)[0]
            if out[pos + 4] not in (DATA, MARKER):
                kept += out[pos:end]
            pos = end
        self.out[:] = kept
        for batch in self.batches.values():
            batch.clear()
        self.discarded(self.waiting + [f for f in held if f[4] == DATA])
        self.waiting.clear()

    def discarded(self, frames: list) -> None:
        """DATA frames dropped unprocessed (bolts count them consumed)."""

    def on_restored(self) -> None:
        """The role's own part in a rollback."""

    def on_checkpoint_saved(self, checkpoint_id: int) -> None:
        """This task saved ``checkpoint_id`` (its markers go next)."""

    def on_checkpoint_done(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` is complete."""

    def on_disconnected(self, clock: float) -> tuple:
        """The stream manager's connection is gone (it died; the executor restarts it). What was framed
        for it and not sent is lost; batches not yet framed stay and leave on the next connection.
        Returns (bytes lost, tuples of open trees failed)."""
        lost = len(self.out)
        self.out.clear()
        return lost, 0

    def on_timers(self, now: float) -> bool:
        """Flush, tick and expire what is due at ``now`` (monotonic); True when a metrics bucket ends."""
        t = self.timers
        if now >= t.next_flush:
            self.flush_all()
            t.next_flush = now + t.flush_every
        if now >= t.next_tick and self.initialized:
            self.tick()
            t.next_tick = now + t.tick_every
        if now >= t.next_expire:
            self.expire(now)
            t.next_expire = now + t.expire_every
        if now >= t.next_metrics:
            t.next_metrics = now + t.bucket
            return True
        return False

    def on_file_update(self, alias: str, path: str) -> None:
        """A new version of shipped file ``alias`` is at ``path`` (the loop switched ``files`` to it): the
        component's ``on_file_update``; an error in it is the task's, and the task goes on. Before
        ``initialize`` there is nothing to tell: the context already gives the new path."""
        if not self.initialized:
            return
        try:
            self.component.on_file_update(alias, path)
        except Exception:
            log.exception("on_file_update(%r) of task %d (%s) failed", alias, self.task_id, self.component_name)
            self.errors.record("on_file_update()")

    def tick(self) -> None:
        """A tick is due (bolts with ``topology.tick.tuple.freq.secs``)."""

    def expire(self, now: float) -> None:
        """Trees may have timed out (spouts at least once)."""

    # plan ------------------------------------------------------------------------
    def on_physical_plan(self, pplan: schema.PhysicalPlan) -> None:
        """A physical plan (the first: the component is initialized): routes, batches, activation."""
        from squall.component import TopologyContext
        from squall.logical import component_config, find_component

        component_tasks: dict = {c.name: [] for c in self.topology.components}
        task_container = {}
        for loc in pplan.instances:
            component_tasks.setdefault(loc.id.component, []).append(loc.id.task_id)
            task_container[loc.id.task_id] = loc.container
            self.task_component[loc.id.task_id] = loc.id.component
        if not self.initialized:
            config = component_config(self.topology, self.component_name)
            sources = [(i.component, i.stream) for i in find_component(self.topology, self.component_name).inputs]
            self.context = TopologyContext(self.topology.name, self.task_id, self.component_name,
                                           component_tasks, config, sources, files=self.files)
        else:
            self.context.set_component_tasks(component_tasks)
            # batches built with the old routes leave now (the stream managers still route to
            # tasks that just left the plan, for a while), not a flush interval later
            self.flush_all()
        self.routes = build_routes(self.topology, self.component_name, component_tasks, task_container,
                                   self.container, self.context, self.chained)
        for task in self.task_component:
            self.batch_for(task)
        self.combining = plan_combining(self.topology, self.component_name, self.task_component, import_object)
        self.fast_routes.clear()
        self.column_routes.clear()
        for name, route in self.routes.items():
            fast = route.fast()
            if fast is not None:
                self.column_routes[name] = ColumnRoute.of(fast)
                key_batches = key_miss = None
                if fast.key_task is not None:
                    key_batches, key_miss = str_key_cache(
                        lambda key, key_task=fast.key_task: self.batches[key_task(key)])
                # kept as an exact tuple: CPython specialises unpacking one (fast_emit unpacks it every emit),
                # not a NamedTuple (~500 instructions more an emit: bench/instructions.py, split)
                self.fast_routes[name] = tuple(FastEmit(fast.fields, fast.key_index, key_batches, key_miss,
                                                        fast.next_task, fast.choose))
        self.on_tasks(component_tasks)
        if self.checkpoint is not None:
            self.checkpoint.on_tasks(component_tasks)
        self.plan = pplan
        active = pplan.status == schema.TopologyStatus.RUNNING
        if not self.initialized:
            self.component.initialize(self.context.get_cluster_config(), self.context)
            if self.checkpoint is not None:
                self.checkpoint.init_state()
            self.initialized = True
            self.active = active
            log.info("task %d (%s) initialized; %s", self.task_id, self.component_name,
                     "active" if active else "deactivated")
        elif active != self.active:
            self.active = active
            self.on_active(active)
            log.info("task %d %s", self.task_id, "activated" if active else "deactivated")

    def on_tasks(self, component_tasks: dict) -> None:
        """A plan named these tasks (component -> task ids): the role's own routing state."""

    def on_active(self, active: bool) -> None:
        """The topology was activated or deactivated (spouts stop or resume)."""

    # collector: emits ------------------------------------------------------------------
    def emit(self, values: Sequence[object], stream: str, tup_id: object, anchors: Optional[Iterable[Tuple]],
             direct_task: Optional[int]) -> tuple:
        """An emit the fast path (``emit.py``) does not take: checked, routed, batched (or, in a chain,
        delivered to the next member: a class's own ``emit`` comes here)."""
        if self.edge is not None and self.edge.takes(stream, anchors, direct_task):
            return self.edge.emit(self.component, values, stream, anchors, direct_task, tup_id)
        route = self.routes.get(stream)
        if route is None:
            raise RoutingError(f"component {self.component_name!r} has no output stream {stream!r} "
                               f"(declared: {sorted(self.routes)})")
        if len(values) != len(route.fields):
            raise RoutingError(f"stream {self.component_name}/{stream} has fields {route.fields}, "
                               f"got {len(values)} values {list(values)!r}")
        targets = route.targets(values, direct_task)
        self.emit_to(values, stream, targets, tup_id, anchors)
        self.emit_count += 1
        return tuple(targets)

    def emit_to(self, values: Sequence[object], stream: str, targets: Sequence[int], tup_id: object,
                anchors: Optional[Iterable[Tuple]]) -> None:
        """``values`` into the batch of each of ``targets`` (at most once)."""
        for t in targets:
            self.append(self.batch_for(t), stream, values)

    def report_error(self, where: str, error: str) -> None:
        """The component's own report of a problem it handled: shown as its task's error."""
        self.errors.problem(where, error)

    def ack(self, tup: Received) -> None:
        """A bolt acks ``tup``: at most once, only counted."""
        self.ack_count += 1

    def fail(self, tup: Received) -> None:
        """A bolt fails ``tup``: at most once, only counted."""
        self.fail_count += 1

    # batches ---------------------------------------------------------------------
    def batch_for(self, dest: int) -> Batch:
        batch = self.batches.get(dest)
        if batch is None:
            self.batches[dest] = batch = Batch(dest, self.batch_size)
        return batch

    def append(self, batch: Batch, stream: str, values: Sequence[object]) -> None:
        batch.add(stream, values)
        if batch.full:
            self.send_batch(batch)

    def send_batch(self, batch: Batch) -> None:
        """The batch leaves as one DATA frame (into ``self.out``).

        At least once, its runs' span lists are emptied once packed: a ``Span`` whose last child
        span was in them sees that its ack can no longer ride (``Span.ride``)."""
        if self.combining is not None:
            self.combining.combine(batch)
        payload = self.packb([self.task_id, batch.runs, self.epoch])
        self.out += data_header(batch.dest, len(payload), batch.count())
        self.out += payload
        if self.reliable:
            for run in batch.runs:
                run[2].clear()
        batch.clear()

    def flush_all(self) -> None:
        for batch in self.batches.values():
            if batch.runs:
                self.send_batch(batch)
        self.flush_role()

    def flush_role(self) -> None:
        """What the role sends besides batches at a flush (a bolt's acks and consumed count)."""
