"""A chain: task *i* of each component of a chain (``squall/chaining.py``) in one process.

Each member keeps its own instance (``InstanceState``: its routes, batches,
counters, user object); what changes is the edge between neighbours. A stream
of the upstream member whose one subscriber is the next member is *delivered*
(``edge.py``): ``emit`` calls the next member's ``process`` on the spot,
with a tuple made in place, no batch, no msgpack, no stream manager.
Everything else (other streams, other subscribers, tuples from outside the
chain) goes the usual way, through the stream manager: frames for any member
arrive on the chain's one connection and go to the member they name.

Nothing is hidden in a chain:

- every member reports its own metrics row: its tuples executed (delivered
  or received), emitted, acked and failed exactly; its execute time is its own
  (a delivered call's time, sampled, is taken out of the caller's and counted
  as the callee's); the process's CPU and memory
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
from types import FrameType
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from squall.idl import schema
from squall.runtime.instance.state import InstanceState, Timers
from squall.runtime.protocol import CONTROL, DEST_COUNT, HEADER_SIZE
from squall.runtime.user_errors import UserErrors

if TYPE_CHECKING:
    from squall.runtime.instance.bolt import BoltInstance

log = logging.getLogger(__name__)
_unpack_dest = DEST_COUNT.unpack_from


def delivered_stream(up: InstanceState, down: InstanceState) -> Optional[str]:
    """The stream of ``up`` that ``down`` takes by call: the first (by name) whose one subscriber is
    ``down``'s component, not direct (None: none, after this plan). A stream with other subscribers
    goes through the stream manager."""
    subscribers: Dict[str, set] = {}
    for c in up.topology.components:
        for i in c.inputs:
            if i.component == up.component_name:
                subscribers.setdefault(i.stream, set()).add(c.name)
    streams = sorted(s for s, names in subscribers.items()
                     if names == {down.component_name} and s in up.routes and not up.routes[s].direct)
    return streams[0] if streams else None


class Chain:
    """The members of one chain instance, driven by the I/O loop as one instance is: frames in (each
    to the member it names), timers, bursts of the head (a spout), one ``out`` for all.

    Each member but the last was made with ``chained={next member's component: its task}`` (it
    routes every tuple for that component to that task, and has an ``Edge``); after each plan the
    chain points every edge at the next member (``delivered_stream``)."""

    def __init__(self, members: Sequence[InstanceState]) -> None:
        for up in members[:-1]:
            if up.edge is None:
                raise ValueError(f"task {up.task_id} ({up.component_name}) was not made as a chain member "
                                 f"(make_instance(..., chained=...))")
        for down in members[1:]:
            if down.reliable and not getattr(down, "auto_ack", True):
                raise ValueError(f"task {down.task_id} ({down.component_name}) acks its tuples itself (auto_ack "
                                 f"off): at least once it cannot take tuples by call (squall/chaining.py)")
        self.members = list(members)
        self.head = head = members[0]
        self.by_task = {m.task_id: m for m in members}
        self.is_spout = head.is_spout
        self.out = head.out
        for m in members[1:]:
            m.out = self.out  # one connection: everything leaves in order through one buffer
        self.task_id = head.task_id
        self.timers = ChainTimers([m.timers for m in members])
        self.names = " -> ".join(f"{m.component_name} task {m.task_id}" for m in members)

    def links(self) -> List[Tuple[InstanceState, BoltInstance]]:
        """Each member but the last with the next one."""
        return list(zip(self.members, self.members[1:]))

    @property
    def initialized(self) -> bool:
        return self.head.initialized

    @property
    def may_emit(self) -> bool:
        return self.head.may_emit

    @property
    def out_head(self) -> int:
        return self.head.out_head

    @out_head.setter
    def out_head(self, value: int) -> None:
        self.head.out_head = value

    @property
    def backpressure_time(self) -> float:
        return self.head.backpressure_time

    @backpressure_time.setter
    def backpressure_time(self, value: float) -> None:
        self.head.backpressure_time = value

    @property
    def errors(self) -> UserErrors:
        """Where an error outside any member's code is recorded: the head's."""
        return self.head.errors

    def spout_burst(self) -> bool:
        return self.head.spout_burst()

    def on_frame(self, f: bytes, clock: float) -> None:
        """DATA and ACK frames to the member they name; CONTROL frames (plan, backpressure) to all."""
        if f[4] == CONTROL:
            for m in self.members:
                m.on_frame(f, clock)
            for up, down in self.links():
                if up.initialized:
                    up.edge.retarget(down, delivered_stream(up, down))
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

    def on_file_update(self, alias: str, path: str) -> None:
        """Every member's component is told of the new version (each may read the file)."""
        for m in self.members:
            m.on_file_update(alias, path)

    def on_disconnected(self, clock: float) -> Tuple[int, int]:
        lost = failed = 0
        for m in self.members:
            a, b = m.on_disconnected(clock)
            lost, failed = lost + a, failed + b
        return lost, failed

    def metrics_rows(self, now: float, interval: float, unread_bytes: int, clock: float) -> List[schema.MetricsRow]:
        """One row per member, each with its own time: a delivered call's estimated time moves from
        the caller's execute time to the callee's; the process's CPU is shared by busy time."""
        for up, down in self.links():
            calls, sampled, samples = up.edge.take_counts()
            seconds = sampled / samples * calls if samples else 0.0
            down.account_delivered(calls, seconds)
            up.account_handed_on(seconds)
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


class ChainTimers:
    """The members' timers as one: due when any is; all started together (flushes stay aligned)."""

    def __init__(self, timers: List[Timers]) -> None:
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

    def __init__(self, members: Sequence[InstanceState]) -> None:
        super().__init__()
        self.by_object = {id(m.component): m.component_name for m in members}
        self.head = members[0].component_name

    def filter(self, record: logging.LogRecord) -> bool:
        frame: Optional[FrameType] = sys._getframe(1)
        name = self.head
        while frame is not None:
            found = self.by_object.get(id(frame.f_locals.get("self")))
            if found is not None:
                name = found
                break
            frame = frame.f_back
        record.name = f"{record.name} [{name}]"
        return True
