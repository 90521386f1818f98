"""The edge between two members of a chain: a tuple handed to the next member by call.

``Edge`` makes the upstream member's ``emit`` (and ``emit_many``): on the
delivered stream it hands the tuple to the next member at once; anything else
goes the usual way. Two factories make those methods, one per delivery mode:

- ``at_most_once``: the next member's ``process`` (or ``process_batch``) is
  called with a tuple made in place (``tuples.py``'s rule);
- ``at_least_once``: the next member (a ``ReliableBoltInstance``) takes the
  tuple in the span the caller is processing (``ReliableBoltInstance.take``):
  its emits take their shares of it, its fail fails it, and its ack is the
  caller's. A spout head's tuple with an id opens a tree whose value is only
  what leaves the chain (``SpoutInstance.open_tree``, ``trees_back``): a tree
  that never leaves it is complete when the spout's emit returns, without an
  ACK frame.

The rules themselves (making a tuple, auto-fail, starting a tree, counting
acks) are the instances' own; an edge only decides what is delivered, counts
the tuples it hands on (``take_counts``), and times one call in
``SAMPLE_EVERY`` (a batch: every batch). A delivered tuple's cost is the
bytecode of the two ``emit`` closures below, whose state lives in cells.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple, Optional, Sequence, Union

from squall.component import Bolt, Tuple, TupleBatch, TupleSource, column_count, rows_of
from squall.runtime.acking import CallIds, Span, some_untracked
from squall.runtime.instance.tuples import ReceivedTuple, process_columns, run_delivery
from squall.runtime.routing import RoutingError
from squall.runtime.user_errors import UNCAUGHT
from squall.stream import DEFAULT_STREAM

if TYPE_CHECKING:
    from squall.runtime.instance.bolt import BoltInstance
    from squall.runtime.instance.state import InstanceState

log = logging.getLogger(__name__)
SAMPLE_EVERY = 16  # a delivered call's time is measured one call in this many (a power of two)
_SAMPLE_MASK = SAMPLE_EVERY - 1

#: an ``emit`` method with a bolt's signature, plus the spout's ``tup_id``:
#: ``(component, values, stream, anchors, direct_task, tup_id) -> target task ids``
EmitMethod = Callable[[object, Sequence[object], str, Optional[Iterable[Tuple]], Optional[int], object], tuple]
#: ``(component, values_list, stream, anchors, tup_ids)``
EmitManyMethod = Callable[[object, list, str, Optional[Iterable[Tuple]], Optional[Sequence[object]]], None]
#: ``(component, columns, stream, anchors, tup_ids)``: tuples as one list a field
EmitColumnsMethod = Callable[[object, Sequence[Sequence[object]], str, Optional[Iterable[Tuple]],
                              Optional[Sequence[object]]], None]


class UserError(Exception):
    """A member's process() raised (at most once: the process exits and its executor restarts it)."""


class Target(NamedTuple):
    """What an edge hands its stream to, after a plan: the next member and how it takes tuples."""

    stream: Optional[str]  # None: nothing is delivered (the next member is not the stream's one subscriber)
    down: Optional[BoltInstance]
    process: Optional[Callable[[Tuple], None]]
    process_batch: Optional[Callable[[TupleBatch], None]]
    batched: bool  # the next member's class has its own process_batch
    source: Optional[TupleSource]
    fields: int
    targets: tuple  # what a delivered emit returns: the next member's task


NO_TARGET = Target(None, None, None, None, False, None, 0, ())


class DeliveredCounts(NamedTuple):
    """Tuples an edge handed on since the last ``take_counts``, and the time of the timed calls."""

    calls: int
    sampled: float  # seconds the timed calls took, the caller's own time included
    samples: int  # calls timed


class Edge:
    """The edge from a chain member (``up``) to the next (``down``, named by ``retarget`` after each
    plan, with the stream delivered)."""

    def __init__(self, up: InstanceState) -> None:
        self.up = up
        self.down: Optional[BoltInstance] = None
        self.stream: Optional[str] = None  # the stream delivered, once a plan has named the next member
        # set by ``wrap``: the generated emit, and the closures that retarget and count it
        self.emit: EmitMethod = _unmade
        self._columns_over: Callable[[EmitColumnsMethod], EmitColumnsMethod] = _unmade
        self._retarget: Callable[[Target], None] = _unmade
        self.take_counts: Callable[[], DeliveredCounts] = _unmade

    def wrap(self, inner: EmitMethod) -> tuple[EmitMethod, EmitManyMethod]:
        """``(emit, emit_many)``: the delivered stream handed on, the rest through ``inner`` (an emit
        method)."""
        make = at_least_once if self.up.reliable else at_most_once
        emit, emit_many, self._columns_over, self._retarget, self.take_counts = make(self.up, inner)
        self.emit = emit
        return emit, emit_many

    def wrap_columns(self, inner: EmitColumnsMethod) -> EmitColumnsMethod:
        """``emit_columns``: the delivered stream's columns handed on as they are, the rest through
        ``inner`` (after ``wrap``)."""
        return self._columns_over(inner)

    def retarget(self, down: BoltInstance, stream: Optional[str]) -> None:
        """After a plan: ``down`` takes ``stream`` by call (None: nothing is delivered)."""
        self.down, self.stream = down, stream
        if stream is None:
            self._retarget(NO_TARGET)
            return
        source = down.source(self.up.task_id, self.up.component_name, stream)
        self._retarget(Target(stream, down, down.component.process, down.component.process_batch, down.batched,
                              source, len(source.fields), (down.task_id,)))

    def takes(self, stream: str, anchors: Optional[Iterable[Tuple]], direct_task: Optional[int]) -> bool:
        """Whether ``emit`` hands this emit to the next member (the collector's generic emit asks:
        a class with its own ``emit`` comes through it)."""
        up = self.up
        return (stream == self.stream and direct_task is None
                and (anchors is None or not up.reliable or all(a is up.current for a in anchors)))


def _unmade(*args: object) -> None:
    raise RuntimeError("the edge's emit is not made yet (Edge.wrap)")


Made = tuple[EmitMethod, EmitManyMethod, Callable[[EmitColumnsMethod], EmitColumnsMethod], Callable[[Target], None],
             Callable[[], DeliveredCounts]]


def at_most_once(up: InstanceState, inner: EmitMethod) -> Made:
    """The edge's methods at most once: a delivered tuple is the next member's ``process`` call."""
    emits = up.emit_cell
    clock = time.perf_counter
    stream0, down, process, process_batch, batched, source, fields, targets = NO_TARGET
    calls = samples = 0
    sampled = 0.0
    make = ReceivedTuple
    process_run = run_delivery()

    def retarget(target: Target) -> None:
        nonlocal stream0, down, process, process_batch, batched, source, fields, targets
        stream0, down, process, process_batch, batched, source, fields, targets = target

    def take_counts() -> DeliveredCounts:
        nonlocal calls, sampled, samples
        out = DeliveredCounts(calls, sampled, samples)
        calls = samples = 0
        sampled = 0.0
        return out

    def emit(component: object, values: Sequence[object], stream: str = DEFAULT_STREAM,
             anchors: Optional[Iterable[Tuple]] = None, direct_task: Optional[int] = None,
             tup_id: object = None) -> tuple:
        nonlocal calls, sampled, samples
        if stream != stream0 or direct_task is not None:  # anchors mean nothing at most once
            return inner(component, values, stream, anchors, direct_task, tup_id)
        if len(values) != fields:
            raise _wrong_fields(up, stream, source, values)
        emits[0] += 1  # (a spout's burst watches it)
        if batched:
            tup: Union[Tuple, TupleBatch] = TupleBatch([values], source)
            call = process_batch
        else:
            tup = make()  # tuples.py: the cheapest way to make a tuple
            tup.values = values
            tup.source = source
            call = process
        calls += 1
        try:
            if calls & _SAMPLE_MASK:
                call(tup)
            else:
                t0 = clock()
                call(tup)
                sampled += clock() - t0
                samples += 1
        except UserError:
            raise
        except Exception as e:
            raise _user_error(up, down) from e
        return targets

    def emit_many(component: object, values_list: list, stream: str = DEFAULT_STREAM,
                  anchors: Optional[Iterable[Tuple]] = None, tup_ids: Optional[Sequence[object]] = None) -> None:
        if stream != stream0 or not values_list:
            for values in values_list:
                emit(component, values, stream, anchors)
            return
        _check_fields(up, stream, source, values_list)
        hand_on(process_run, values_list, len(values_list))

    def hand_on(deliver: Callable[[Bolt, bool, list, TupleSource], None], tuples: list, n: int) -> None:
        """``n`` tuples (rows for ``process_run``, columns for ``process_columns``) to the next member in one
        call, timed."""
        nonlocal calls, sampled, samples
        emits[0] += n
        calls += n
        t0 = clock()
        try:
            deliver(down.component, batched, tuples, source)
        except UserError:
            raise
        except Exception as e:
            raise _user_error(up, down) from e
        sampled += clock() - t0
        samples += n

    def columns_over(inner_columns: EmitColumnsMethod) -> EmitColumnsMethod:
        def emit_columns(component: object, columns: Sequence[Sequence[object]], stream: str = DEFAULT_STREAM,
                         anchors: Optional[Iterable[Tuple]] = None,
                         tup_ids: Optional[Sequence[object]] = None) -> None:
            if stream != stream0:
                inner_columns(component, columns, stream, anchors, tup_ids)
                return
            n = column_count(columns, stream, fields)
            if n:
                hand_on(process_columns, list(columns), n)

        return emit_columns

    return emit, emit_many, columns_over, retarget, take_counts


def at_least_once(up: InstanceState, inner: EmitMethod) -> Made:
    """The edge's methods at least once: the next member takes a delivered tuple in the caller's span
    (a bolt head's: the span of the tuple it is processing; a spout head's: a new tree's)."""
    emits = up.emit_cell
    clock = time.perf_counter
    stream0, down, process, process_batch, batched, source, fields, targets = NO_TARGET
    take = take_batch = _unmade
    calls = samples = 0
    sampled = 0.0
    spout = up if up.is_spout else None
    auto_anchor = spout is None and up.auto_anchor
    anchor = None if spout is not None else up.anchor

    def retarget(target: Target) -> None:
        nonlocal stream0, down, process, process_batch, batched, source, fields, targets, take, take_batch
        stream0, down, process, process_batch, batched, source, fields, targets = target
        if down is not None:
            take, take_batch = down.take, down.take_batch

    def take_counts() -> DeliveredCounts:
        nonlocal calls, sampled, samples
        out = DeliveredCounts(calls, sampled, samples)
        calls = samples = 0
        sampled = 0.0
        return out

    def other_anchors(anchors: Iterable[Tuple]) -> bool:
        """Anchored to a tuple the caller is not processing: not delivered (rare: explicit anchors)."""
        return any(a is not up.current for a in anchors)

    def emit(component: object, values: Sequence[object], stream: str = DEFAULT_STREAM,
             anchors: Optional[Iterable[Tuple]] = None, direct_task: Optional[int] = None,
             tup_id: object = None) -> tuple:
        nonlocal calls, sampled, samples
        if stream != stream0 or direct_task is not None or (anchors is not None and other_anchors(anchors)):
            return inner(component, values, stream, anchors, direct_task, tup_id)
        if len(values) != fields:
            raise _wrong_fields(up, stream, source, values)
        emits[0] += 1
        calls += 1
        if spout is None:
            span = (up.anchor_span or anchor()) if (anchors is not None or auto_anchor) else None
        elif tup_id is not None:
            span = Span(spout.open_tree(), 0)  # its value: what the tuples leaving the chain take of it
            t0 = clock()
            take(values, source, span)
            spout.trees_back(span, tup_id, clock() - t0)
            return targets
        else:
            span = None
        if calls & _SAMPLE_MASK:
            take(values, source, span)
        else:
            t0 = clock()
            take(values, source, span)
            sampled += clock() - t0
            samples += 1
        return targets

    def emit_many(component: object, values_list: list, stream: str = DEFAULT_STREAM,
                  anchors: Optional[Iterable[Tuple]] = None, tup_ids: Optional[Sequence[object]] = None) -> None:
        nonlocal calls
        if (stream != stream0 or not values_list or (anchors is not None and other_anchors(anchors))
                or partly_tracked(tup_ids)):
            for k, values in enumerate(values_list):
                emit(component, values, stream, anchors, None, None if tup_ids is None else tup_ids[k])
            return
        _check_fields(up, stream, source, values_list)
        n = len(values_list)
        emits[0] += n
        calls += n
        hand_on(TupleBatch(values_list, source), n, span_of(anchors, tup_ids), tup_ids)

    def partly_tracked(tup_ids: Optional[Sequence[object]]) -> bool:
        return spout is not None and tup_ids is not None and some_untracked(tup_ids)

    def span_of(anchors: Optional[Iterable[Tuple]], tup_ids: Optional[Sequence[object]]) -> Optional[Span]:
        """The span a batch handed on is processed in."""
        if spout is not None:
            # a spout's tuples with ids: one tree for them all, and one span (failing the batch fails it)
            return None if tup_ids is None else Span(spout.open_tree(), 0)
        return (up.anchor_span or anchor()) if (anchors is not None or auto_anchor) else None

    def hand_on(batch: TupleBatch, n: int, span: Optional[Span], tup_ids: Optional[Sequence[object]]) -> None:
        nonlocal sampled, samples
        t0 = clock()
        take_batch(batch, span)
        latency = clock() - t0
        sampled += latency
        samples += n
        if spout is not None and span is not None:
            spout.trees_back(span, CallIds(tup_ids), latency)

    def columns_over(inner_columns: EmitColumnsMethod) -> EmitColumnsMethod:
        def emit_columns(component: object, columns: Sequence[Sequence[object]], stream: str = DEFAULT_STREAM,
                         anchors: Optional[Iterable[Tuple]] = None,
                         tup_ids: Optional[Sequence[object]] = None) -> None:
            nonlocal calls
            if stream != stream0 or (anchors is not None and other_anchors(anchors)):
                inner_columns(component, columns, stream, anchors, tup_ids)
                return
            n = column_count(columns, stream, fields)
            if not n:
                return
            if tup_ids is not None and len(tup_ids) != n:
                raise ValueError(f"emit_columns: {n} tuples but {len(tup_ids)} tup_ids")
            if partly_tracked(tup_ids):
                emit_many(component, rows_of(columns), stream, anchors, tup_ids)
                return
            emits[0] += n
            calls += n
            hand_on(TupleBatch.of_columns(list(columns), source), n, span_of(anchors, tup_ids), tup_ids)

        return emit_columns

    return emit, emit_many, columns_over, retarget, take_counts


def _check_fields(up: InstanceState, stream: str, source: TupleSource, values_list: list) -> None:
    if set(map(len, values_list)) - {len(source.fields)}:
        bad = next(v for v in values_list if len(v) != len(source.fields))
        raise _wrong_fields(up, stream, source, bad)


def _wrong_fields(up: InstanceState, stream: Optional[str], source: TupleSource,
                  values: Sequence[object]) -> RoutingError:
    return RoutingError(f"stream {up.component_name}/{stream} has fields {list(source.fields)}, got "
                        f"{len(values)} values {list(values)!r}")


def _user_error(up: InstanceState, down: BoltInstance) -> UserError:
    log.exception("task %d (%s): process() raised on a tuple from task %d (%s)", down.task_id, down.component_name,
                  up.task_id, up.component_name)
    down.errors.record(UNCAUGHT)  # as an unchained task's: the chain exits
    return UserError(f"task {down.task_id} ({down.component_name}) raised")
