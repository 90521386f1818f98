"""The instance: one process per task, running one spout or bolt.

``Instance`` is the state machine and is driven without sockets. Events come
in as calls: ``on_frame`` (a frame from the stream manager: tuples, acks,
the physical plan, backpressure), ``on_timers`` (flush, tick, expire trees,
end a metrics bucket), ``spout_burst`` (a spout's turn to emit). Actions go
out as state: the frames to send accumulate in ``out``, ``may_emit`` says
whether a spout may call ``next_tuple``, ``metrics_row`` is the bucket's row. ``_Loop`` is
the I/O around it, single-threaded like Heron's Python instance: it polls the
stream manager's connection between bursts of ``next_tuple`` calls (spouts)
or blocks on it (bolts), and sends what ``out`` holds.

Delivery (``topology.reliability.mode``): at most once, a bolt's
``ack``/``fail`` only count and a spout's are never called. At least once,
tuples carry their trees in spans (``runtime/acking.py``): a spout task tracks the
trees of the tuples it emitted with an id, caps them at
``topology.max.spout.pending``, and calls ``ack``/``fail`` when they complete,
fail or time out; bolts anchor, ack and fail (automatically by default:
``auto_anchor``, ``auto_ack``, ``auto_fail``, streamparse's defaults) and send
their acks to the spout tasks in ACK frames.

Backpressure: a spout stops calling ``next_tuple`` while its stream manager
says so (CONTROL ``backpressure``); a bolt reports the tuples it processed
(CONTROL ``consumed``) so its stream manager bounds its queue in time.

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
import json
import logging
import os
import select
import signal
import socket
import termios
import time
from itertools import chain
from typing import Any, Optional

import msgpack

from squall.component import SYSTEM_COMPONENT, TICK_STREAM, Tuple, TupleSource
from squall.idl import schema
from squall.runtime.acking import (ROOT_BITS, TASK_SHIFT, AckTracker, Roots, Span, new_value, random_bits, root_task,
                                   roots_of, shared_span)
from squall.runtime.metrics_sender import BlockingMetricsSender
from squall.runtime.protocol import (ACK, CONTROL, DATA, DATA_HEADER_SIZE, BlockingConnection, ProtocolError,
                                     RateLimitedLog, control_frame, data_frame, decode_control, frame_count)
from squall.runtime.routing import RoutingError, build_routes, str_key_cache
from squall.stream import DEFAULT_STREAM
from squall.supervision import RetryPolicy

log = logging.getLogger(__name__)

# A bolt sends what it has emitted once this much is waiting (and every flush interval).
OUT_FLUSH_BYTES = 64 * 1024
SPOUT_BURST = 64
# On SIGTERM a bolt stops reading once nothing has arrived for this long.
DRAIN_QUIET_SECS = 0.2
FAILED_TUPLES = RateLimitedLog(log)  # a bolt that raises on every tuple writes one line per 10 s


class _ReceivedTuple(Tuple):
    """A ``Tuple`` filled in slot by slot by ``Instance.on_data``.

    ``object.__init__`` takes no arguments, so ``_ReceivedTuple()`` plus two
    slot stores is the cheapest way to make a tuple (a third less than
    ``object.__new__(Tuple)``): it is a per-tuple cost of every bolt. At most
    once, tuples have no id and no tree: the class answers None for both.
    """

    __slots__ = ()
    __init__ = object.__init__  # type: ignore[assignment]
    id = None
    roots = None


class _AutoAckedTuple(Tuple):
    """A received tuple at least once, under ``auto_ack``: its ``roots`` (its tree's root, a list of
    roots, or None: not tracked). Only the
    tuple being processed can still be acked, failed or anchored to (``Instance.current``), so its
    span is the instance's (``Instance.open_span``). Tuples have no id of their own on the wire.
    """

    __slots__ = ()
    __init__ = object.__init__  # type: ignore[assignment]
    id = None


class _TrackedTuple(Tuple):
    """A received tuple at least once, for a bolt that acks itself (``auto_ack`` off): ``span``, the
    ``Span`` it came in (None when it is not tracked, or once the bolt acked or failed it: a second
    ack or fail is ignored). ``roots`` names its trees.
    """

    __slots__ = ("span",)
    __init__ = object.__init__  # type: ignore[assignment]
    id = None

    @property  # type: ignore[override]
    def roots(self) -> Optional[Roots]:
        return None if self.span is None else self.span.roots


IDLE = _TrackedTuple()  # ``Instance.current`` outside process(), or once the bolt acked or failed it
IDLE.span = None
INT = {int}
_END = object()  # appended to a received run: its last span ends there
NO_ANCHOR = object()  # a batch's open span takes no more tuples (a spout's, one anchored to several inputs)


class _Batch:
    """Tuples waiting for one destination task: runs of [stream, values] in emit order.

    At least once a run is ``[stream, values, spans]``; ``spans`` is a flat ``[start, roots,
    value, start, roots, value, ...]``: the tuples from index ``start`` on belong to the trees
    ``roots`` (one root, a list, or None: not tracked) with the span's ``value``
    (``runtime/acking.py``). ``anchor``
    is the received ``Span`` the open span's tuples are anchored to: the next tuple anchored to
    it joins that span (a sentence's words), any other starts one.

    ``vals`` is the open (last) run; the batch is full once it holds ``limit``
    values, which is the batch size less what earlier runs hold. A batch
    lives as long as its destination: sending it clears it.
    """

    __slots__ = ("dest", "targets", "size", "runs", "stream", "vals", "limit", "spans", "anchor")

    def __init__(self, dest: int, size: int) -> None:
        self.dest = dest
        self.targets = (dest,)  # what an emit to this destination alone returns
        self.size = size
        self.clear()

    def clear(self) -> None:
        self.runs: list = []
        self.stream: Optional[str] = None
        self.vals: list = []
        self.spans: list = []
        self.anchor: Any = NO_ANCHOR
        self.limit = self.size

    def open_run(self, stream: str, tracked: bool) -> None:
        self.limit -= len(self.vals)
        self.stream = stream
        self.vals = []
        if tracked:
            self.spans = []
            self.anchor = NO_ANCHOR
            self.runs.append([stream, self.vals, self.spans])
        else:
            self.runs.append([stream, self.vals])

    def add(self, stream: str, values: Any) -> None:
        if stream != self.stream:
            self.open_run(stream, False)
        self.vals.append(values)

    def add_span(self, stream: str, values: Any, roots: Optional[Roots], value: Any) -> None:
        """At least once: ``values`` starts a span of its own in the trees ``roots`` (None and 0: not
        tracked); the next tuple starts another."""
        if stream != self.stream:
            self.open_run(stream, True)
        self.spans += (len(self.vals), roots, value)
        self.anchor = NO_ANCHOR
        self.vals.append(values)

    @property
    def full(self) -> bool:
        return len(self.vals) >= self.limit

    def count(self) -> int:
        return sum(len(run[1]) for run in self.runs)


class _Timers:
    """When an instance next flushes its batches, reports metrics, ticks and expires trees (monotonic)."""

    def __init__(self, config: Any, ticks: bool, expires: bool, message_timeout: float) -> None:
        self.flush_every = float(config["squall.instance.flush.interval.ms"]) / 1000
        self.bucket = float(config["topology.builtin.metrics.bucket.size.secs"])
        self.tick_every = config["topology.tick.tuple.freq.secs"] if ticks else None
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


def _untouched_acks(spans: list, touched: list) -> list:
    """``[root, value, ...]``: the acks of a received run's spans that never got a ``Span`` (acked
    whole: each sends its value as it came), leaving out those that start at an index in
    ``touched``. At C speed when every span has one root, the common case."""
    if len(touched) * 3 == len(spans):
        return []
    roots, values = spans[1::3], spans[2::3]
    if not touched and set(map(type, roots)) <= INT and set(map(type, values)) <= INT:
        return list(chain.from_iterable(zip(roots, values)))
    pairs: list = []
    skip = set(touched)
    for k in range(0, len(spans), 3):
        if spans[k + 1] is None or k in skip:
            continue
        value = spans[k + 2]
        for i, root in enumerate(roots_of(spans[k + 1])):
            pairs += (root, value if value.__class__ is int else value[i])
    return pairs


class Instance:
    """One task's state: its component, routes, batches and counters."""

    def __init__(self, topology: Any, component_name: str, task_id: int, container: int,
                 config: Any, batch_size: int = 1000, component_obj: Any = None):
        from squall.logical import find_component, topology_config

        config = config or topology_config(topology)
        self.topology = topology
        self.component_name = component_name
        self.task_id = task_id
        self.container = container
        self.config = config
        self.batch_size = batch_size
        spec = find_component(topology, component_name)
        self.is_spout = spec.kind == schema.ComponentKind.SPOUT
        self.reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
        self.tracker = AckTracker(float(config["topology.message.timeout.secs"]))
        self.max_pending = config["topology.max.spout.pending"] if self.reliable else None
        self.acks_out: dict = {}  # spout task -> [[root, value, root, value, ...], [failed root, ...]]
        self.current: Any = IDLE  # the tuple process() is running on (auto_anchor)
        self.handled = 0  # tuples a bolt acked or failed itself under auto_ack (not acked again)
        # under auto_ack, the received span being processed: its roots and value, its Span once
        # something needed one (an anchored emit, a fail), and the Span auto_anchor emits join now
        self.span_roots: Optional[Roots] = None
        self.span_value: Any = 0
        self.span: Optional[Span] = None
        self.anchor_span: Optional[Span] = None
        self.spout_task: Optional[int] = None  # the plan's only spout task, if it has one
        self.auto_anchor = self.auto_ack = self.auto_fail = False  # a bolt's class says, at least once
        self.throttled = False  # the stream manager asked this spout to stop emitting
        self.throttled_at = 0.0
        self.consumed = 0  # tuples processed since the last report to the stream manager
        self.waiting: list = []  # DATA frames from senders newer than the plan: handled once a plan names them
        self.in_bytes = self.in_tuples = 0  # DATA read this bucket: the size of a queued tuple
        self.timers = _Timers(config, ticks=not self.is_spout, expires=self.is_spout and self.reliable,
                              message_timeout=self.tracker.timeout)
        self.fields_of = {(c.name, s.name): list(s.fields) for c in topology.components for s in c.outputs}
        self.task_component: dict = {}
        self.routes: dict = {}
        self.context: Any = None
        self.initialized = False
        self.active = False
        self.plan: Any = None
        self.out = bytearray()
        self.batches: dict = {}  # destination task -> _Batch, for every task of the plan
        self.fast_routes: dict = {}  # stream -> (fields, key index, key batches, key miss, next_task, chooser)
        self.sources: dict = {}  # (source task, stream) -> TupleSource
        self._packb = msgpack.Packer(use_bin_type=True).pack
        self._emits = [0]
        self.reset_metrics()
        if component_obj is None:
            from squall.importing import import_object

            component_obj = self._runtime_class(import_object(spec.class_name))()
        else:
            component_obj.__class__ = self._runtime_class(type(component_obj))
        component_obj._collector = self
        self.component = component_obj

    # metrics -----------------------------------------------------------------
    @property
    def emit_count(self) -> int:
        """Emits since the last metrics bucket (a one-item list the fast emit path can bump cheaply)."""
        return self._emits[0]

    @emit_count.setter
    def emit_count(self, value: int) -> None:
        self._emits[0] = value

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

    def metrics_row(self, now: float, interval: float, unread_bytes: int = 0, clock: float = 0.0) -> Any:
        """The bucket's row: ``now`` is the wall time, ``clock`` the ``perf_counter`` (backpressure
        time so far counts in this bucket), ``unread_bytes`` what waits in the socket and reader."""
        if self.throttled:
            self.backpressure_time += clock - self.throttled_at
            self.throttled_at = clock
        queue_depth = self.queue_depth(unread_bytes)
        user: dict = {"__timeout-count": self.timeouts, "__pending": len(self.tracker)} if self.reliable else {}
        if self.context is not None:
            for name, (metric, _bucket) in self.context.metrics.items():
                try:
                    user[name] = metric.get_value_and_reset()
                except Exception:
                    log.exception("user metric %r failed", name)
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
        elif ftype == ACK and self.is_spout:
            self.on_acks(f)
        elif ftype == CONTROL:
            msg = decode_control(f)
            if msg.backpressure is not None:
                self.on_throttle(msg.backpressure.on, clock)
            elif msg.physical_plan is not None:
                self.on_plan(msg.physical_plan)
                waiting, self.waiting = self.waiting, []
                for w in waiting:
                    if self.on_data(w, clock) is None:
                        self.waiting.append(w)
        else:
            raise ProtocolError(f"unexpected frame type {ftype} from the stream manager")

    def on_throttle(self, on: bool, clock: float) -> None:
        """The stream manager's word: stop emitting (a spout), or go on; the time told to stop is
        backpressure time."""
        if on and not self.throttled:
            self.throttled_at = clock
        elif self.throttled and not on:
            self.backpressure_time += clock - self.throttled_at
        self.throttled = on

    def on_disconnected(self, clock: float) -> tuple:
        """The stream manager's connection is gone (it died; the executor restarts it). What was framed
        for it and not sent is lost, and the word to stop emitting went with it; batches not yet
        framed stay and leave on the next connection. A spout fails its open trees now but those with
        tuples still in its batches: the others crossed the dead stream manager (tuples or acks), and
        waiting for ``topology.message.timeout.secs`` would only delay their replay. Returns (bytes
        lost, trees failed)."""
        lost = len(self.out)
        self.out.clear()
        self.on_throttle(False, clock)
        failed = 0
        if self.is_spout and self.reliable:
            unsent = {root for batch in self.batches.values() for run in batch.runs
                      for root in run[2][1::3]}
            for root in [r for r in self.tracker.trees if r not in unsent]:
                tup_id = self.tracker.fail(root)
                self.fail_count += 1
                failed += 1
                self.component.fail(tup_id)
        return lost, failed

    @property
    def may_emit(self) -> bool:
        """A spout's turn to call ``next_tuple``: initialized, active and not told to stop."""
        return self.is_spout and self.active and self.initialized and not self.throttled

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

    # plan ------------------------------------------------------------------------
    def on_plan(self, pplan: Any) -> None:
        from squall.component import TopologyContext
        from squall.logical import component_config

        component_tasks: dict = {c.name: [] for c in self.topology.components}
        task_container = {}
        for loc in pplan.instances:
            component_tasks.setdefault(loc.id.component, []).append(loc.id.task_id)
            task_container[loc.id.task_id] = loc.container
            self.task_component[loc.id.task_id] = loc.id.component
        if not self.initialized:
            config = component_config(self.topology, self.component_name)
            self.context = TopologyContext(self.topology.name, self.task_id, self.component_name,
                                           component_tasks, config)
        else:
            self.context._component_tasks = {c: sorted(t) for c, t in component_tasks.items()}
            # batches built with the old routes leave now (the stream managers still route to
            # tasks that just left the plan, for a while), not a flush interval later
            self.flush_all()
        self.routes = build_routes(self.topology, self.component_name, component_tasks, task_container,
                                   self.container, self.context)
        for task in self.task_component:
            self._batch(task)
        self.fast_routes.clear()
        for name, route in self.routes.items():
            fast = route.fast()
            if fast is not None:
                choose, fields, next_task, key_index, key_task = fast
                key_batches = key_miss = None
                if key_task is not None:
                    key_batches, key_miss = str_key_cache(
                        lambda key, key_task=key_task: self.batches[key_task(key)])
                self.fast_routes[name] = (fields, key_index, key_batches, key_miss, next_task, choose)
        self.sources.clear()
        spout_tasks = [t for c in self.topology.components if c.kind == schema.ComponentKind.SPOUT
                       for t in component_tasks.get(c.name, ())]
        self.spout_task = spout_tasks[0] if len(spout_tasks) == 1 else None  # then every root is its
        self.plan = pplan
        active = pplan.status == schema.TopologyStatus.RUNNING
        if not self.initialized:
            self.component.initialize(self.context.get_cluster_config(), self.context)
            self.initialized = True
            self.active = active
            log.info("task %d (%s) initialized; %s", self.task_id, self.component_name,
                     "active" if active else "deactivated")
        elif active != self.active:
            self.active = active
            if self.is_spout:
                if active:
                    self.component.activate()
                else:
                    self.flush_all()
                    self.component.deactivate()
            log.info("task %d %s", self.task_id, "activated" if active else "deactivated")

    # collector -------------------------------------------------------------------
    def emit(self, values: Any, stream: str, tup_id: Any, anchors: Any, direct_task: Optional[int]) -> tuple:
        route = self.routes.get(stream)
        if route is None:
            raise RoutingError(f"component {self.component_name!r} has no output stream {stream!r} "
                               f"(declared: {sorted(self.routes)})")
        if len(values) != len(route.fields):
            raise RoutingError(f"stream {self.component_name}/{stream} has fields {route.fields}, "
                               f"got {len(values)} values {list(values)!r}")
        targets = route.targets(values, direct_task)
        if self.reliable:
            self._emit_tracked(values, stream, targets, tup_id, anchors)
        else:
            for t in targets:
                self._append(self._batch(t), stream, values)
        self.emit_count += 1
        return tuple(targets)

    def _emit_tracked(self, values: Any, stream: str, targets: Any, tup_id: Any, anchors: Any) -> None:
        """A spout's tuple with an id starts a tree: one span per copy, each with a random value. A
        bolt's joins a span of its anchors' trees.

        Anchors already acked or failed anchor nothing (Storm's rule: anchor before you ack).
        """
        if self.is_spout:
            root = None if tup_id is None else self.tracker.fresh_root(self.task_id)
            xor = 0
            for t in targets:
                batch = self._batch(t)
                if root is None:
                    self._join(batch, stream, values, None)
                else:
                    value = new_value()
                    xor ^= value
                    batch.add_span(stream, values, root, value)
                if batch.full:
                    self._send(batch)
            if root is not None and not self.tracker.start(root, tup_id, xor, time.monotonic()):
                self._complete(tup_id, 0.0)  # no subscriber: nothing to wait for
            return
        if anchors is None:
            anchors = (self.current,) if self.auto_anchor else ()
        spans: list = []
        for a in anchors:
            if self.auto_ack:
                span = self.open_span() if a is self.current and a is not IDLE else None
            else:
                span = a.span if a.__class__ is _TrackedTuple else None
            if span is not None and span not in spans:
                spans.append(span)
        for t in targets:
            batch = self._batch(t)
            if len(spans) > 1:
                batch.add_span(stream, values, *shared_span(spans))
            else:
                self._join(batch, stream, values, spans[0] if spans else None)
            if batch.full:
                self._send(batch)

    def _join(self, batch: _Batch, stream: str, values: Any, anchor: Optional[Span]) -> None:
        """At least once: ``values`` into ``batch``, anchored to the received span ``anchor`` (None: not
        tracked). It joins the batch's open span if that is ``anchor``'s; else it starts one that
        takes a share of ``anchor``'s value, and ``anchor``'s ack may ride on it."""
        if stream != batch.stream:
            batch.open_run(stream, True)
        if anchor is not batch.anchor:
            spans = batch.spans
            if anchor is None:
                spans += (len(batch.vals), None, 0)
            else:
                share = new_value()
                anchor.delta ^= share
                spans += (len(batch.vals), anchor.roots, share)
                anchor.carried = spans
                anchor.at = len(spans) - 1
            batch.anchor = anchor
        batch.vals.append(values)

    # acking (at least once) ----------------------------------------------------------
    def open_span(self) -> Optional[Span]:
        """Under ``auto_ack``: the ``Span`` of the received span being processed (None: not tracked),
        made the first time something needs it (most spans never do: a sink's)."""
        if self.span is None and self.span_roots is not None:
            self.span = Span(self.span_roots, self.span_value)
        return self.span

    def anchor(self) -> Optional[Span]:
        """Under ``auto_ack``: the span auto_anchor emits join, while the tuple being processed has
        not been acked or failed (Storm's rule: anchor before you ack)."""
        if self.current is IDLE:
            return None
        self.anchor_span = self.open_span()
        return self.anchor_span

    def ack_tuple(self, tup: Any) -> None:
        """A bolt acks ``tup``, once. Under ``auto_ack`` only the tuple being processed counts (the
        others are acked already), and its span is acked as a whole once process() returns."""
        if self.auto_ack:
            if tup is self.current and tup is not IDLE:
                self.current = IDLE
                self.anchor_span = None
                self.ack_count += 1
                self.handled += 1
            return
        if tup.__class__ is not _TrackedTuple or tup.span is None:
            return
        span = tup.span
        tup.span = None
        self.ack_count += 1
        span.open -= 1
        if not span.open and not span.failed:
            self._span_acked(span)

    def _span_acked(self, span: Span) -> None:
        """Every tuple of ``span`` is acked: its ack rides on its last child span, or is queued for
        the ACK frames of its roots' spout tasks."""
        if span.ride():
            return
        rest = span.rest()
        if rest.__class__ is int:
            self._queue_acks([x for root in roots_of(span.roots) for x in (root, rest)])
        else:
            self._queue_acks([x for pair in zip(span.roots, rest) for x in pair])

    def _queue_acks(self, pairs: list) -> None:
        """Acks ``[root, value, ...]`` into the ACK batches of their roots' spout tasks (with one spout
        task in the plan, every root is its; one whose task left the plan is ignored there)."""
        if self.spout_task is not None:
            self._ack_batch(self.spout_task)[0].extend(pairs)
            return
        for i in range(0, len(pairs), 2):
            acks = self._ack_batch(pairs[i] >> TASK_SHIFT)[0]
            if acks and acks[-2] == pairs[i]:
                acks[-1] ^= pairs[i + 1]
            else:
                acks += (pairs[i], pairs[i + 1])

    def fail_tuple(self, tup: Any) -> None:
        """A bolt fails ``tup``: its trees fail at their spouts, which replay them (once; under
        ``auto_ack`` only the tuple being processed can fail)."""
        if self.auto_ack:
            if tup is not self.current or tup is IDLE:
                return
            self.current = IDLE
            self.anchor_span = None
            self.handled += 1
            self.fail_count += 1
            span = self.open_span()
        elif tup.__class__ is not _TrackedTuple:
            return
        else:
            span = tup.span
            tup.span = None
        if span is None:
            return
        if not self.auto_ack:
            self.fail_count += 1
        if not span.failed:
            span.failed = True
            for root in roots_of(span.roots):
                self._ack_batch(root_task(root))[1].append(root)

    def _ack_batch(self, spout_task: int) -> list:
        batch = self.acks_out.get(spout_task)
        if batch is None:
            batch = self.acks_out[spout_task] = [[], []]
        return batch

    def on_acks(self, frame_bytes: bytes) -> None:
        """A spout gets acks and fails of its trees (an ACK frame)."""
        _src, acks, fails = msgpack.unpackb(memoryview(frame_bytes)[DATA_HEADER_SIZE:], raw=False)
        completed, latency = self.tracker.ack_all(acks, time.monotonic())
        if completed:
            self.ack_count += len(completed)
            self.completed += len(completed)
            self.complete_time += latency
            ack = self.component.ack
            for tup_id in completed:
                ack(tup_id)
        for root in fails:
            tup_id = self.tracker.fail(root)
            if tup_id is not None:
                self.fail_count += 1
                self.component.fail(tup_id)

    def _complete(self, tup_id: Any, latency: float) -> None:
        self.ack_count += 1
        self.completed += 1
        self.complete_time += latency
        self.component.ack(tup_id)

    def expire(self, now: float) -> None:
        """Trees open past ``topology.message.timeout.secs`` fail and are handed back."""
        for tup_id in self.tracker.expire(now):
            self.timeouts += 1
            self.fail_count += 1
            self.component.fail(tup_id)


    def _batch(self, dest: int) -> _Batch:
        batch = self.batches.get(dest)
        if batch is None:
            self.batches[dest] = batch = _Batch(dest, self.batch_size)
        return batch

    def _append(self, batch: _Batch, stream: str, values: Any) -> None:
        batch.add(stream, values)
        if batch.full:
            self._send(batch)

    def ack(self, tup: Any) -> None:
        if self.reliable:
            self.ack_tuple(tup)
        else:
            self.ack_count += 1

    def fail(self, tup: Any) -> None:
        if self.reliable:
            self.fail_tuple(tup)
        else:
            self.fail_count += 1

    def _runtime_class(self, cls: type) -> type:
        if self.reliable:  # acks and fails go through the collector; emit keeps a fast path
            from squall.component import Bolt, Spout

            self.auto_anchor = bool(getattr(cls, "auto_anchor", True))
            self.auto_ack = bool(getattr(cls, "auto_ack", True))
            self.auto_fail = bool(getattr(cls, "auto_fail", True))
            base = Spout if self.is_spout else Bolt
            if getattr(cls, "emit", None) is not base.emit:
                return cls
            fast_emit = self._fast_emit(True)
            method = fast_emit
            if self.is_spout:
                def spout_emit(spout: Any, values: Any, tup_id: Any = None, stream: str = DEFAULT_STREAM,
                               direct_task: Optional[int] = None) -> tuple:
                    return fast_emit(spout, values, stream, None, direct_task, tup_id)

                method = spout_emit
            return type(cls.__name__, (cls,), {"__slots__": (), "__module__": cls.__module__,
                                               "__qualname__": cls.__qualname__, "emit": method})
        return self._fast_runtime_class(cls)

    def _fast_runtime_class(self, cls: type) -> type:
        """``cls`` with this instance's fast paths, where it does not override them.

        ``emit`` on a stream with no subscriber or one that picks one task (all
        but all, custom and direct) skips the generic route walk: one chooser
        call and an append to the destination's open run. ``ack``/``fail`` go
        to the instance's counters directly. A class that overrides ``emit``,
        ``ack`` or ``fail`` keeps its own, which goes through the collector.

        The fast methods go on a subclass made here (same name and module),
        and the component is made from it, not patched afterwards: an instance
        attribute that shadows a class method, or a class swapped under an
        object, defeats CPython's attribute specialisation, which costs more
        than the layers it saves. (A component object handed in, as unit tests
        do, gets the subclass as its class: right, if slower.)
        """
        from squall.component import Bolt, Spout

        base = Spout if self.is_spout else Bolt
        methods: dict = {}
        if getattr(cls, "emit", None) is base.emit:
            emit = self._fast_emit()
            if self.is_spout:
                def spout_emit(spout: Any, values: Any, tup_id: Any = None, stream: str = DEFAULT_STREAM,
                               direct_task: Optional[int] = None) -> tuple:
                    return emit(spout, values, stream, None, direct_task)

                methods["emit"] = spout_emit
            else:
                methods["emit"] = emit
        if not self.is_spout:
            inst = self

            def ack(bolt: Any, tup: Any) -> None:
                inst.ack_count += 1

            def fail(bolt: Any, tup: Any) -> None:
                inst.fail_count += 1

            if getattr(cls, "ack", None) is Bolt.ack:
                methods["ack"] = ack
            if getattr(cls, "fail", None) is Bolt.fail:
                methods["fail"] = fail
        if not methods:
            return cls
        return type(cls.__name__, (cls,), {"__slots__": (), "__module__": cls.__module__,
                                           "__qualname__": cls.__qualname__, **methods})

    def _fast_emit(self, tracked: bool = False) -> Any:
        """A bolt-signature ``emit`` method with the fast path; ``self.fast_routes`` is refreshed per plan.

        ``tracked`` (at least once): a spout's tuple emitted with an id starts a tree; a bolt's is
        anchored to the one being processed (when ``auto_anchor``); explicit anchors take the
        generic path.
        """
        fast = self.fast_routes
        batches = self.batches
        slow = self.emit
        send = self._send
        append = self._append
        emits = self._emits
        inst = self
        bits = random_bits
        auto_anchor = tracked and self.auto_anchor and not self.is_spout
        auto_ack = self.auto_ack
        join = self._join
        spout = self.is_spout
        trees = self.tracker.trees
        task_id = self.task_id
        task_bits = task_id << TASK_SHIFT
        clock = time.monotonic

        def emit(component: Any, values: Any, stream: str = DEFAULT_STREAM, anchors: Any = None,
                 direct_task: Optional[int] = None, tup_id: Any = None) -> tuple:
            try:
                fields, key_index, key_batches, key_miss, next_task, choose = fast[stream]
            except KeyError:
                return slow(values, stream, tup_id, anchors, direct_task)
            if len(values) != fields or direct_task is not None or (tracked and anchors is not None):
                return slow(values, stream, tup_id, anchors, direct_task)
            emits[0] += 1
            if key_batches is not None:
                try:
                    batch = key_batches[values[key_index]]
                except KeyError:
                    batch = key_miss(values[key_index])
                except TypeError:  # an unhashable key
                    batch = batches[choose(values)]
            elif next_task is not None:
                batch = batches[next_task()]
            elif choose is None:  # nothing subscribes to this stream
                if tracked and spout and tup_id is not None:
                    inst._complete(tup_id, 0.0)  # a tree without spans is complete at once
                return ()
            else:
                batch = batches[choose(values)]
            if tracked:
                if spout and tup_id is not None:  # new_value(), fresh_root() and start() inlined
                    value = bits(64) or 1
                    root = task_bits | (value & ROOT_BITS)  # the span value's random bits serve the root too
                    entry = [tup_id, value, clock()]
                    if trees.setdefault(root, entry) is not entry:  # an open tree has this root
                        root = inst.tracker.open_root(task_id, tup_id, value, entry[2])
                    if batch.stream != stream:
                        batch.open_run(stream, True)
                    vals = batch.vals
                    spans = batch.spans
                    spans += (len(vals), root, value)  # _Batch.add_span inlined
                    batch.anchor = NO_ANCHOR
                    vals.append(values)
                    if len(vals) >= batch.limit:
                        send(batch)
                    return batch.targets
                if not auto_anchor:
                    anchor = None
                elif auto_ack:
                    anchor = inst.anchor_span or inst.anchor()
                else:
                    anchor = inst.current.span
                if batch.stream != stream:
                    join(batch, stream, values, anchor)
                    if batch.full:
                        send(batch)
                    return batch.targets
                vals = batch.vals
                if anchor is not batch.anchor:  # a new span (_join inlined): a sentence's first word
                    spans = batch.spans
                    if anchor is None:
                        spans += (len(vals), None, 0)
                    else:
                        share = bits(64) or 1
                        anchor.delta ^= share
                        spans += (len(vals), anchor.roots, share)
                        anchor.carried = spans
                        anchor.at = len(spans) - 1
                    batch.anchor = anchor
                vals.append(values)
                if len(vals) >= batch.limit:
                    send(batch)
            elif batch.stream == stream:
                vals = batch.vals
                vals.append(values)
                if len(vals) >= batch.limit:
                    send(batch)
            else:
                append(batch, stream, values)
            return batch.targets

        return emit

    # batches ---------------------------------------------------------------------
    def _send(self, batch: _Batch) -> None:
        """The batch leaves as one DATA frame (into ``self.out``).

        At least once, its runs' span lists are emptied once packed: a ``Span`` whose last child
        span was in them sees that its ack can no longer ride (``Span.ride``)."""
        self.out += data_frame(batch.dest, self._packb([self.task_id, batch.runs]), batch.count())
        if self.reliable:
            for run in batch.runs:
                run[2].clear()
        batch.clear()

    def flush_all(self) -> None:
        for batch in self.batches.values():
            if batch.runs:
                self._send(batch)
        if self.acks_out:
            for spout_task, (acks, fails) in self.acks_out.items():
                self.out += data_frame(spout_task, self._packb([self.task_id, acks, fails]), 0, ACK)
            self.acks_out.clear()
        if self.consumed:
            self.out += control_frame(consumed=self.consumed)
            self.consumed = 0

    # tuples in ----------------------------------------------------------------------
    def on_data(self, frame_bytes: bytes, arrived: float) -> Optional[int]:
        """Run the bolt over one DATA frame; returns the tuples executed.

        None when the sending task is newer than this instance's physical plan
        (a scale-up reached the sender first): the caller keeps the frame until
        a plan names its sender, so every tuple gets its component and fields.
        """
        src, runs = msgpack.unpackb(memoryview(frame_bytes)[DATA_HEADER_SIZE:], raw=False)
        comp = self.task_component.get(src)
        if comp is None:
            return None
        if self.reliable:
            return self._on_tracked(src, comp, runs, arrived)
        process = self.component.process
        make = _ReceivedTuple
        clock = time.perf_counter
        done = 0
        t_start = clock()
        for stream, vals in runs:
            source = self.sources.get((src, stream))
            if source is None:
                source = self.sources[src, stream] = TupleSource(comp, stream, src,
                                                                 self.fields_of.get((comp, stream), ()))
            for v in vals:
                tup = make()
                tup.values = v
                tup.source = source
                process(tup)
            done += len(vals)
        self._account(done, t_start, clock(), arrived)
        return done

    def _account(self, done: int, t_start: float, t_end: float, arrived: float) -> None:
        """Counters of one frame's ``done`` tuples, processed from ``t_start`` to ``t_end``."""
        self.execute_count += done
        self.execute_calls += done
        self.execute_time += t_end - t_start
        # process latency: arrival of the batch to the end of each tuple, averaged
        self.process_calls += done
        self.process_time += done * ((t_end - t_start) / 2 + (t_start - arrived))
        self.consumed += done

    def _on_tracked(self, src: int, comp: str, runs: list, arrived: float) -> int:
        """``on_data`` at least once: each tuple in its span, anchored, acked and failed as the bolt says."""
        t_start = time.perf_counter()
        handled = self.handled
        done = 0
        for stream, vals, spans in runs:
            source = self.sources.get((src, stream))
            if source is None:
                source = self.sources[src, stream] = TupleSource(comp, stream, src,
                                                                 self.fields_of.get((comp, stream), ()))
            done += len(vals)
            if self.auto_ack:
                self._run_auto_acked(source, vals, spans)
            else:
                self._run_acked_by_bolt(source, vals, spans)
        if self.auto_ack:
            self.ack_count += done - (self.handled - handled)
        self._account(done, t_start, time.perf_counter(), arrived)
        return done

    def _run_auto_acked(self, source: TupleSource, vals: list, spans: list) -> None:
        """One received run under ``auto_ack``: a span is acked as a whole once process() has returned
        for its last tuple, its value sent once, not once per tuple.

        Only the tuple being processed can be acked, failed or anchored to, so a span needs a
        ``Span`` only when the bolt does one of these (``open_span``): a sink's spans never do,
        and their acks are gathered after the run at C speed (``_untouched_acks``). A span that has
        one is acked at its end, where its ack can still ride on its last child span. This loop is
        every tuple's cost.
        """
        process = self.component.process
        make = _AutoAckedTuple
        auto_fail = self.auto_fail
        n = len(vals)
        vals.append(_END)
        k = span_end = 0  # spans[k:k + 3]: the next span's start, roots and value
        roots = None
        touched: list = []  # where in ``spans`` the spans that got a Span start (acked here)
        for i, v in enumerate(vals):  # one loop over the run; spans end by index
            if i == span_end:
                span = self.span
                if span is not None:
                    touched.append(k - 3)
                    if not span.failed:
                        value, carried = span.value, span.carried
                        if carried is not None and len(carried) > span.at and value.__class__ is int:
                            carried[span.at] ^= value ^ span.delta  # Span.ride inlined: a split's every input
                        else:
                            self._span_acked(span)
                if v is _END:
                    break
                roots = self.span_roots = spans[k + 1]
                self.span_value = spans[k + 2]
                self.span = self.anchor_span = None
                k += 3
                span_end = spans[k] if k < len(spans) else n
            tup = make()
            tup.values = v
            tup.source = source
            tup.roots = roots
            self.current = tup  # _execute(tup) inlined: this loop is every tuple's cost
            try:
                process(tup)
            except Exception:
                if not auto_fail:
                    raise
                self._raised(tup)
        self.current = IDLE
        self.span_roots = self.span = self.anchor_span = None
        pairs = _untouched_acks(spans, touched)
        if pairs:
            self._queue_acks(pairs)

    def _run_acked_by_bolt(self, source: TupleSource, vals: list, spans: list) -> None:
        """One received run for a bolt that acks itself: each tuple holds its ``Span``, which is
        acked once the bolt has acked every tuple in it."""
        for k in range(0, len(spans), 3):
            start, roots = spans[k], spans[k + 1]
            end = spans[k + 3] if k + 3 < len(spans) else len(vals)
            span = None if roots is None else Span(roots, spans[k + 2], end - start)
            for v in vals[start:end]:
                tup = _TrackedTuple()
                tup.values = v
                tup.source = source
                tup.span = span
                self._execute(tup)
        self.current = IDLE

    def _execute(self, tup: Any) -> None:
        """process() one tuple; under ``auto_fail`` a raise fails it (its trees are replayed)."""
        self.current = tup
        try:
            self.component.process(tup)
        except Exception:
            if not self.auto_fail:
                raise
            self._raised(tup)

    def _raised(self, tup: Any) -> None:
        """``auto_fail``: process() raised on ``tup``, which fails (its trees are replayed)."""
        FAILED_TUPLES.warning("task %d: process() raised; the tuple fails and its tree is replayed",
                              self.task_id, exc_info=True)
        self.fail_tuple(tup)

    def tick(self) -> None:
        self.component.process_tick(Tuple(None, SYSTEM_COMPONENT, TICK_STREAM, -1, [], ()))

    def spout_burst(self, calls: int = SPOUT_BURST) -> bool:
        """Call next_tuple up to ``calls`` times; True if anything was emitted.

        The burst ends early as soon as a batch is complete (``self.out`` is not
        empty): the run loop must hand it to the socket before the spout emits
        more, so a spout never runs ahead of what the stream manager accepts.
        It also ends on time, once it has run for a flush interval (Heron's
        ``produceTuple`` rule): the loop then flushes what was emitted and reads
        its socket (a new physical plan is applied before the next emit), however
        slow ``next_tuple`` is (a blocking poll of a queue or a broker).
        """
        before = self.emit_count
        next_tuple = self.component.next_tuple
        clock = time.perf_counter
        out = self.out
        t0 = clock()
        ends = t0 + self.timers.flush_every
        n = 0
        emitted = 0
        trees = self.tracker.trees
        cap = self.max_pending if self.max_pending is not None else float("inf")
        for n in range(1, calls + 1):
            if len(trees) >= cap:
                break  # topology.max.spout.pending trees in flight: wait for acks
            e0 = self.emit_count
            next_tuple()
            if self.emit_count != e0:
                emitted += 1
                if out:
                    break
            elif n > 1 and self.emit_count == before:
                break
            if clock() >= ends:
                break
        self.execute_time += clock() - t0
        self.execute_calls += n
        self.execute_count += emitted
        return self.emit_count != before


# ------------------------------------------------------------------------ I/O loop
def local_host(env: Any) -> str:
    """Where this container's own daemons are reached."""
    return "127.0.0.1" if env.bind_host in ("", "0.0.0.0") else env.bind_host


def _connect_stmgr(env: Any, task: int, component: str) -> BlockingConnection:
    """A connection to this container's stream manager, retried (it may be starting, or restarting)
    for ``squall.instance.reconnect.timeout.secs``; ProtocolError past that."""
    port = env.launch["stmgr_port"]
    policy = RetryPolicy(deadline=float(env.config["squall.instance.reconnect.timeout.secs"]))
    return policy.run(
        lambda: BlockingConnection.connect(local_host(env), port, env.secret, schema.Role.INSTANCE,
                                           env.args.container, task_id=task, component=component,
                                           max_frame=env.max_frame),
        ProtocolError, f"task {task}: connecting to the stream manager on port {port}")


class _Loop:
    """The instance process's I/O: one blocking socket to the stream manager, a single thread.

    It reads and sends; ``Instance`` decides. Bolts block on the socket between
    frames; spouts poll it between bursts of ``next_tuple`` and send without
    blocking, so a spout whose stream manager stops reading it (backpressure)
    keeps what it emitted (about a batch) and emits nothing more until the
    socket takes it: tuples wait in the spout's source, not in buffers between
    emit and count.
    """

    def __init__(self, inst: Instance, conn: BlockingConnection, metrics: BlockingMetricsSender,
                 drain_max: float, gc_threshold: int) -> None:
        self.inst = inst
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

    def send_all(self) -> None:
        """Blocking send of everything emitted (bolts: the stream manager always reads them)."""
        inst = self.inst
        if inst.out:
            data = bytes(inst.out)
            inst.out.clear()
            t0 = time.perf_counter()
            try:
                self.sock.sendall(data)
            except OSError as e:
                raise ProtocolError(f"send to the stream manager failed: {e}") from e
            waited = time.perf_counter() - t0
            if waited > 0.001:
                inst.backpressure_time += waited

    def send_some(self) -> bool:
        """Non-blocking send (spouts); True when nothing is left unsent."""
        out = self.inst.out
        if out:
            try:
                n = self.sock.send(out, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError as e:
                raise ProtocolError(f"send to the stream manager failed: {e}") from e
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
            if self.gc_threshold and inst.initialized and not was_initialized:
                gc.freeze()  # the component as initialize() left it: never garbage
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
                wall = time.time()
                self.metrics.send(inst.metrics_row(wall, wall - self.last_metrics_wall, self.unread_bytes(),
                                                   time.perf_counter()))
                self.last_metrics_wall = wall
            if flush_due:
                self.send_out()

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


def run(env: Any) -> int:
    """The instance process: ``env.args.task`` in ``env.args.container``."""
    task = env.args.task
    cplan = env.container_plan()
    mine = [i for i in (cplan.instances if cplan else []) if i.id.task_id == task]
    if not mine:
        log.error("task %s is not in container %d of the packing plan", task, env.args.container)
        return 2
    component = mine[0].id.component
    inst = Instance(env.topology, component, task, env.args.container, env.config,
                    batch_size=int(env.config["squall.instance.batch.size"]))
    stop: list = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    conn = _connect_stmgr(env, task, component)
    gc_threshold = int(env.config["squall.instance.gc.threshold"])
    if gc_threshold:
        gc.set_threshold(gc_threshold, *gc.get_threshold()[1:])
    # draining after SIGTERM ends well before the executor's SIGKILL
    drain_max = max(0.5, float(env.config["squall.executor.kill.grace.secs"]) / 2)
    loop = _Loop(inst, conn, BlockingMetricsSender(env, local_host(env), task, component), drain_max, gc_threshold)
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
                            task, e, lost, f", {failed} open trees failed (replayed)" if failed else "")
                loop.conn.close()
                loop.attach(_connect_stmgr(env, task, component))
                log.info("task %d reconnected to its stream manager", task)
        if not inst.is_spout:
            loop.drain()
        loop.finish()
    except ProtocolError as e:
        log.error("task %d: %s; exiting so the executor restarts it", task, e)
        return 1
    finally:
        if inst.initialized:
            try:
                inst.component.close()
            except Exception:
                log.exception("close() of task %d failed", task)
        loop.conn.close()
    log.info("task %d stopped", task)
    return 0
