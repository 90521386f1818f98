"""The edge between two members of a chain: a tuple handed to the next member by call.

``Delivery.wrap`` makes the upstream member's ``emit`` (and ``emit_many``):
on the delivered stream it calls the next member's ``process`` (or
``process_batch``) at once, with a tuple made in place; anything else goes the
usual way. This is every delivered tuple's cost, written once: the state lives
in the closure's cells, a delivered tuple is counted, and what the calls take
is timed one call in ``SAMPLE_EVERY`` (a batch: every batch).

At least once, a delivered tuple belongs to the span the caller is
processing: the callee's emits take their shares of it, its fail fails it,
and its ack is the caller's. A spout head's tuple with an id opens a tree
whose value is only what leaves the chain: a tree that never leaves it is
complete when the spout's emit returns, without an ACK frame.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Optional

from squall.component import TupleBatch
from squall.runtime.acking import Span
from squall.runtime.instance.tuples import IDLE, AutoAckedTuple, ReceivedTuple, process_run
from squall.runtime.routing import RoutingError
from squall.runtime.user_errors import UNCAUGHT
from squall.stream import DEFAULT_STREAM

log = logging.getLogger("squall.runtime.instance")
SAMPLE_EVERY = 16  # a delivered call's time is measured one call in this many (a power of two)
_SAMPLE_MASK = SAMPLE_EVERY - 1


class UserError(Exception):
    """A member's process() raised (at most once: the process exits and its executor restarts it)."""


class Delivery:
    """The edge from a chain member (``up``) to the next (``down``, named by ``retarget`` after each
    plan, with the stream delivered)."""

    def __init__(self, up: Any) -> None:
        self.up = up
        self.down: Any = None
        self.stream: Optional[str] = None  # the stream delivered, once a plan has named the next member
        self.emit: Any = None  # the generated emit (``wrap``)

    def takes(self, stream: str, anchors: Any, direct_task: Optional[int]) -> bool:
        """Whether ``emit`` hands this emit to the next member (the collector's generic emit asks:
        a class with its own ``emit`` comes through it)."""
        return (stream == self.stream and direct_task is None
                and (anchors is None or not self.up.reliable or all(a is self.up.current for a in anchors)))

    def wrap(self, inner: Any) -> tuple:
        """``(emit, emit_many)``: the delivered stream handed on, the rest through ``inner`` (an emit
        method). Delivered tuples are counted in ``take``'s calls (the callee's executes; at least
        once its acks)."""
        up = self.up
        emits = up._emits
        clock = time.perf_counter
        stream0: Optional[str] = None
        down: Any = None
        process: Any = None
        process_batch: Any = None
        batched = False
        source: Any = None
        fields = 0
        targets: tuple = ()
        calls = samples = 0
        sampled = 0.0

        def retarget(new_down: Any, stream: Optional[str]) -> None:
            nonlocal stream0, down, process, process_batch, batched, source, fields, targets
            down = self.down = new_down
            stream0 = self.stream = stream
            if stream is not None:
                process = down.component.process
                process_batch = down.component.process_batch
                batched = down.batched
                source = down.source(up.task_id, up.component_name, stream)
                fields = len(source.fields)
                targets = (down.task_id,)

        def take() -> tuple:
            """(tuples delivered, seconds the timed ones took, tuples timed) since the last take."""
            nonlocal calls, sampled, samples
            out = (calls, sampled, samples)
            calls = samples = 0
            sampled = 0.0
            return out

        def check(values_list: list) -> None:
            if set(map(len, values_list)) - {fields}:
                bad = next(v for v in values_list if len(v) != fields)
                raise _wrong_fields(up, stream0, source, bad)

        self.retarget, self.take = retarget, take
        if not up.reliable:
            make = ReceivedTuple

            def emit(component: Any, values: Any, stream: str = DEFAULT_STREAM, anchors: Any = None,
                     direct_task: Optional[int] = None, tup_id: Any = None) -> tuple:
                nonlocal calls, sampled, samples
                if stream != stream0 or direct_task is not None:  # anchors mean nothing at most once
                    return inner(component, values, stream, anchors, direct_task, tup_id)
                if len(values) != fields:
                    raise _wrong_fields(up, stream, source, values)
                emits[0] += 1  # (a spout's burst watches it)
                if batched:
                    tup = TupleBatch([values], source)
                    call = process_batch
                else:
                    tup = make()
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

            def emit_many(component: Any, values_list: list, stream: str = DEFAULT_STREAM, anchors: Any = None,
                          tup_ids: Any = None) -> None:
                nonlocal calls, sampled, samples
                if stream != stream0 or not values_list:
                    for values in values_list:
                        emit(component, values, stream, anchors)
                    return
                check(values_list)
                n = len(values_list)
                emits[0] += n
                calls += n
                t0 = clock()
                try:
                    process_run(down.component, batched, values_list, source)
                except UserError:
                    raise
                except Exception as e:
                    raise _user_error(up, down) from e
                sampled += clock() - t0
                samples += n

            self.emit = emit
            return emit, emit_many

        make_tracked = AutoAckedTuple
        tracker = up.tracker if up.is_spout else None
        auto_anchor = not up.is_spout and up.auto_anchor
        auto_ack = not up.is_spout and up.auto_ack

        def callers_span(anchors: Any) -> Any:
            """The span a bolt's delivered tuple belongs to: the caller's, if it anchors to it."""
            if tracker is None and (anchors is not None or auto_anchor):
                return (up.anchor_span or up.anchor()) if auto_ack else up.current.span
            return None

        def emit_tracked(component: Any, values: Any, stream: str = DEFAULT_STREAM, anchors: Any = None,
                         direct_task: Optional[int] = None, tup_id: Any = None) -> tuple:
            nonlocal calls, sampled, samples
            if stream != stream0 or direct_task is not None or (
                    anchors is not None and any(a is not up.current for a in anchors)):
                return inner(component, values, stream, anchors, direct_task, tup_id)
            if len(values) != fields:
                raise _wrong_fields(up, stream, source, values)
            emits[0] += 1
            root = None
            if tracker is not None:
                span = None
                if tup_id is not None:
                    root = tracker.fresh_root(up.task_id)
                    span = Span(root, 0)  # its value: what the tuples leaving the chain take of it
            else:
                span = callers_span(anchors)
            if batched:
                tup = TupleBatch([values], source, None if span is None else span.roots)
                call = process_batch
            else:
                tup = make_tracked()
                tup.values = values
                tup.source = source
                tup.roots = None if span is None else span.roots
                call = process
            # the callee's tuple is in the caller's span: its emits take shares of it (its anchor_span
            # is None between calls), its fail fails it
            down.span = span
            down.current = tup
            handled = down.handled
            calls += 1
            timed = not calls & _SAMPLE_MASK or root is not None
            if timed:
                t0 = clock()
            try:
                call(tup)
            except Exception:
                if not down.auto_fail:
                    raise
                down._raised(tup)
            if not calls & _SAMPLE_MASK:
                sampled += clock() - t0
                samples += 1
            down.current = IDLE
            down.span = down.anchor_span = None  # (span_roots goes unused while span is set)
            if down.handled != handled:  # it acked or failed it itself
                down.ack_count -= down.handled - handled
            if root is not None:
                _trees_done(up, tracker, [root], span, [tup_id], clock() - t0)
            return targets

        def emit_many_tracked(component: Any, values_list: list, stream: str = DEFAULT_STREAM,
                              anchors: Any = None, tup_ids: Any = None) -> None:
            nonlocal calls, sampled, samples
            if stream != stream0 or not values_list or (
                    anchors is not None and any(a is not up.current for a in anchors)):
                for k, values in enumerate(values_list):  # not delivered
                    emit_tracked(component, values, stream, anchors, None, None if tup_ids is None else tup_ids[k])
                return
            check(values_list)
            n = len(values_list)
            emits[0] += n
            calls += n
            if tracker is not None:
                # a spout's tuples with ids: one tree each, one span for them all (a child span's share
                # goes to every tree; failing the batch fails every tree)
                tree_roots = None if tup_ids is None else [tracker.fresh_root(up.task_id) for _ in tup_ids]
                span = None if tree_roots is None else Span(tree_roots, 0)
            else:
                span = callers_span(anchors)
            roots = None if span is None else span.roots
            down.span = span
            handled = down.handled
            t0 = clock()
            if batched:
                batch = down.current = TupleBatch(values_list, source, roots)
                try:
                    process_batch(batch)
                except Exception:
                    if not down.auto_fail:
                        raise
                    down._raised(batch)
                if span is not None and span.failed and down.handled != handled:
                    down.fail_count += n - 1  # each tuple of the batch failed; fail_tuple counted one
                    down.handled += n - 1
            else:
                for values in values_list:
                    tup = down.current = make_tracked()
                    tup.values = values
                    tup.source = source
                    tup.roots = roots
                    try:
                        process(tup)
                    except Exception:
                        if not down.auto_fail:
                            raise
                        down._raised(tup)
                    down.anchor_span = None
            sampled += clock() - t0
            samples += n
            down.current = IDLE
            down.span = down.anchor_span = None
            if down.handled != handled:
                down.ack_count -= down.handled - handled
            if tracker is not None and span is not None:
                _trees_done(up, tracker, span.roots, span, tup_ids, clock() - t0)

        self.emit = emit_tracked
        return emit_tracked, emit_many_tracked


def _trees_done(up: Any, tracker: Any, roots: list, span: Any, tup_ids: list, latency: float) -> None:
    """A spout head's tuples came back from the chain: their trees failed, go on outside the chain
    (each tree's value: the shares its tuples leaving the chain took), or are complete."""
    now = time.monotonic()
    for root, tup_id in zip(roots, tup_ids):
        if span.failed:
            up._failed(tup_id)
        elif span.delta:
            tracker.start(root, tup_id, span.delta, now)
        else:
            up.complete(tup_id, latency)  # the whole tree was processed in the chain


def _wrong_fields(up: Any, stream: Optional[str], source: Any, values: Any) -> RoutingError:
    return RoutingError(f"stream {up.component_name}/{stream} has fields {list(source.fields)}, got "
                        f"{len(values)} values {list(values)!r}")


def _user_error(up: Any, down: Any) -> UserError:
    log.exception("task %d (%s): process() raised on a tuple from task %d (%s)", down.task_id, down.component_name,
                  up.task_id, up.component_name)
    down.errors.record(UNCAUGHT)  # as an unchained task's: the chain exits
    return UserError(f"task {down.task_id} ({down.component_name}) raised")
