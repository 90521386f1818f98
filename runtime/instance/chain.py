"""A chain: task *i* of each component of a chain (``squall/chaining.py``) in one process.

Each member keeps its own instance (``InstanceState``: its routes, batches,
counters, user object); what changes is the edge between neighbours. A stream
of the upstream member whose one subscriber is the next member is *delivered*:
``emit`` calls the next member's ``process`` on the spot, with a tuple made in
place, no batch, no msgpack, no stream manager. Everything else (other streams,
other subscribers, tuples from outside the chain) goes the usual way, through
the stream manager: frames for any member arrive on the chain's one
connection and go to the member they name.

Nothing is hidden in a chain:

- every member reports its own metrics row: its tuples executed (delivered
  or received), emitted, acked and failed exactly; its execute time is its own
  (a delivered call's time, sampled one call in ``SAMPLE_EVERY``, is taken out
  of the caller's and counted as the callee's); the process's CPU and memory
  are shared among the rows (``user.__chain``: the member's share of the busy
  time, and the number of members);
- a user error names the member it happened in (the log line, the failed tuple);
- backpressure throttles the chain's head (the stream manager stops a spout
  head; a bolt head's queue is the chain's);
- at least once, a delivered tuple belongs to the span the caller is
  processing: the callee's emits take their shares of it, its fail fails it,
  and its ack is the caller's. A tree that never leaves the chain is complete
  when the spout head's emit returns, without an ACK frame or a random value.
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Any, Optional

from squall.runtime.acking import Span
from squall.runtime.instance.tuples import IDLE, AutoAckedTuple, ReceivedTuple
from squall.runtime.protocol import CONTROL, DEST_COUNT, HEADER_SIZE
from squall.runtime.routing import RoutingError

log = logging.getLogger("squall.runtime.instance")
SAMPLE_EVERY = 16  # a delivered call's time is measured one call in this many (a power of two)
_SAMPLE_MASK = SAMPLE_EVERY - 1
_unpack_dest = DEST_COUNT.unpack_from


class UserError(Exception):
    """A member's process() raised (at most once: the process exits and its executor restarts it)."""


def link(up: Any, down: Any) -> None:
    """Make ``down`` the next member after ``up`` (made with ``chained={down's component: down's
    task}``: it routes every tuple for ``down``'s component to ``down``'s task, and its emit asks
    ``up.delivered`` first)."""
    up.next_member = down


def refresh(up: Any) -> None:
    """After a plan: ``up.delivered`` maps each stream whose one subscriber is the next member to the
    function that hands a tuple to it."""
    down = up.next_member
    up.delivered.clear()
    subscribers: dict = {}
    for c in up.topology.components:
        for i in c.inputs:
            if i.component == up.component_name:
                subscribers.setdefault(i.stream, set()).add(c.name)
    for stream, names in subscribers.items():
        if names == {down.component_name} and stream in up.routes and not up.routes[stream].direct:
            up.delivered[stream] = _deliver(up, down, stream)


def _deliver(up: Any, down: Any, stream: str) -> Any:
    """``deliver(values, tup_id) -> targets``: ``values`` processed by ``down`` now."""
    source = down.source(up.task_id, up.component_name, stream)
    fields = len(source.fields)
    targets = (down.task_id,)
    emits = up._emits
    clock = time.perf_counter

    def wrong_fields(values: Any) -> RoutingError:
        return RoutingError(f"stream {up.component_name}/{stream} has fields {list(source.fields)}, got "
                            f"{len(values)} values {list(values)!r}")

    process = down.component.process
    if not up.reliable:
        make = ReceivedTuple

        def deliver(values: Any, tup_id: Any) -> tuple:
            if len(values) != fields:
                raise wrong_fields(values)
            emits[0] += 1
            tup = make()
            tup.values = values
            tup.source = source
            n = down.chained_count = down.chained_count + 1
            try:
                if n & _SAMPLE_MASK:
                    process(tup)
                else:
                    t0 = clock()
                    process(tup)
                    down.sampled_time += clock() - t0
                    down.sampled_calls += 1
            except UserError:
                raise
            except Exception as e:
                log.exception("task %d (%s): process() raised on a tuple from task %d (%s)", down.task_id,
                              down.component_name, up.task_id, up.component_name)
                raise UserError(f"task {down.task_id} ({down.component_name}) raised") from e
            return targets

        return deliver

    make_tracked = AutoAckedTuple
    tracker = up.tracker if up.is_spout else None
    auto_fail = down.auto_fail

    def deliver_tracked(values: Any, tup_id: Any) -> tuple:
        if len(values) != fields:
            raise wrong_fields(values)
        emits[0] += 1
        root = span = None
        if tracker is not None:
            if tup_id is not None:
                root = tracker.fresh_root(up.task_id)
                span = Span(root, 0)  # its value is what the tuples leaving the chain take
        elif up.auto_anchor:
            span = up.anchor_span or up.anchor() if up.auto_ack else up.current.span
        tup = make_tracked()
        tup.values = values
        tup.source = source
        tup.roots = down.span_roots = None if span is None else span.roots
        down.span = span
        down.anchor_span = None
        down.current = tup
        handled = down.handled
        n = down.chained_count = down.chained_count + 1
        t0 = clock()
        try:
            process(tup)
        except Exception:
            if not auto_fail:
                raise
            down._raised(tup)
        if not n & _SAMPLE_MASK:
            down.sampled_time += clock() - t0
            down.sampled_calls += 1
        down.current = IDLE
        down.span = down.span_roots = down.anchor_span = None
        down.ack_count += 1 - (down.handled - handled)
        if root is not None:
            if span.failed:
                up._failed(tup_id)
            elif span.delta:
                tracker.start(root, tup_id, span.delta, time.monotonic())
            else:
                up.complete(tup_id, clock() - t0)  # the whole tree was processed in the chain
        return targets

    return deliver_tracked


class Chain:
    """The members of one chain instance, driven by the I/O loop as one instance is: frames in (each
    to the member it names), timers, bursts of the head (a spout), one ``out`` for all."""

    def __init__(self, members: list) -> None:
        self.members = members
        self.head = head = members[0]
        self.by_task = {m.task_id: m for m in members}
        self.is_spout = head.is_spout
        self.out = head.out
        for m in members[1:]:
            m.out = self.out  # one connection: everything leaves in order through one buffer
        self.task_id = head.task_id
        self.timers = _ChainTimers([m.timers for m in members])
        self.names = " -> ".join(f"{m.component_name} task {m.task_id}" for m in members)

    @property
    def initialized(self) -> bool:
        return self.head.initialized

    @property
    def may_emit(self) -> bool:
        return self.head.may_emit

    @property
    def backpressure_time(self) -> float:
        return self.head.backpressure_time

    @backpressure_time.setter
    def backpressure_time(self, value: float) -> None:
        self.head.backpressure_time = value

    def spout_burst(self) -> bool:
        return self.head.spout_burst()

    def on_frame(self, f: bytes, clock: float) -> None:
        """DATA and ACK frames to the member they name; CONTROL frames (plan, backpressure) to all."""
        if f[4] == CONTROL:
            for m in self.members:
                m.on_frame(f, clock)
                if m.next_member is not None and m.initialized:
                    refresh(m)
            return
        member = self.by_task.get(_unpack_dest(f, HEADER_SIZE)[0])
        if member is None:
            raise ValueError(f"a frame for task {_unpack_dest(f, HEADER_SIZE)[0]}, not one of {self.names}")
        member.on_frame(f, clock)

    def on_timers(self, now: float) -> bool:
        ends = False
        for m in self.members:
            ends = m.on_timers(now) or ends
        return ends

    def flush_all(self) -> None:
        for m in self.members:
            m.flush_all()

    def on_disconnected(self, clock: float) -> tuple:
        lost = failed = 0
        for m in self.members:
            a, b = m.on_disconnected(clock)
            lost, failed = lost + a, failed + b
        return lost, failed

    def metrics_rows(self, now: float, interval: float, unread_bytes: int, clock: float) -> list:
        """One row per member, each with its own time: a delivered call's estimated time moves from
        the caller's execute time to the callee's; the process's CPU is shared by busy time."""
        inclusive = {}
        for m in self.members:
            calls = m.chained_count
            inclusive[m.task_id] = m.sampled_time / m.sampled_calls * calls if m.sampled_calls else 0.0
            m.execute_calls += calls
            m.process_calls += calls
            m.process_time += inclusive[m.task_id]
            m.execute_count += calls
            m.chained_count = 0
            m.sampled_time, m.sampled_calls = 0.0, 0
        for m in self.members:
            m.execute_time += inclusive[m.task_id]
            if m.next_member is not None:
                m.execute_time = max(0.0, m.execute_time - inclusive[m.next_member.task_id])
        busy = sum(m.execute_time for m in self.members) or 1.0
        rows = []
        for m in self.members:
            share = {"members": len(self.members), "share": round(m.execute_time / busy, 4)}
            rows.extend(m.metrics_rows(now, interval, unread_bytes if m is self.head else 0, clock,
                                       chain=share))
        return rows

    def close(self) -> None:
        for m in self.members:
            m.close()


class _ChainTimers:
    """The members' timers as one: due when any is; all started together (flushes stay aligned)."""

    def __init__(self, timers: list) -> None:
        self.timers = timers

    @property
    def next_flush(self) -> float:
        return self.timers[0].next_flush

    def start(self, now: float) -> None:
        for t in self.timers:
            t.start(now)

    def next_due(self) -> float:
        return min(t.next_due() for t in self.timers)


class ComponentLogFilter(logging.Filter):
    """Names the member whose code logged (in the logger's name), found on the stack only when a
    line is logged: the hot path pays nothing."""

    def __init__(self, members: list) -> None:
        super().__init__()
        self.by_object = {id(m.component): m.component_name for m in members}
        self.head = members[0].component_name

    def filter(self, record: logging.LogRecord) -> bool:
        frame: Optional[Any] = sys._getframe(1)
        name = self.head
        while frame is not None:
            found = self.by_object.get(id(frame.f_locals.get("self")))
            if found is not None:
                name = found
                break
            frame = frame.f_back
        record.name = f"{record.name} [{name}]"
        return True
