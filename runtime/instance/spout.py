"""The spout's driver: bursts of ``next_tuple``, backpressure, and (at least once) its trees.

At least once a spout task tracks the trees of the tuples it emitted with an
id (``AckTracker``: no acker process), caps them at
``topology.max.spout.pending``, and calls ``ack``/``fail`` when they
complete, fail or time out.
"""
from __future__ import annotations

import time
from typing import Iterable, Optional, Sequence

import msgpack

from squall.component import Tuple
from squall.idl import schema
from squall.metrics_schema import PENDING, TIMEOUT_COUNT
from squall.runtime.acking import AckTracker, Span, ids_of, new_value
from squall.runtime.instance.compiled import compiled
from squall.runtime.instance.state import InstanceState
from squall.runtime.protocol import DATA_HEADER_SIZE

SPOUT_BURST = 64  # next_tuple calls in one burst at most


class SpoutInstance(InstanceState):
    is_spout = True

    def init_role(self) -> None:
        self.tracker = AckTracker(self.message_timeout, compiled("ack_all"))
        self.max_pending = self.config["topology.max.spout.pending"] if self.reliable else None
        self.throttled = False  # the stream manager asked this spout to stop emitting
        self.throttled_at = 0.0

    def on_physical_plan(self, pplan: schema.PhysicalPlan) -> None:
        super().on_physical_plan(pplan)
        if self.reliable and pplan.max_spout_pending is not None:  # changed while running (squall health)
            self.max_pending = pplan.max_spout_pending

    @property
    def may_emit(self) -> bool:
        """Its turn to call ``next_tuple``: initialized, active and not told to stop."""
        return (self.active and self.initialized and not self.throttled
                and (self.checkpoint is None or not self.checkpoint.restoring))

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
        tracker = self.tracker
        cap = self.max_pending if self.max_pending is not None else float("inf")
        for n in range(1, calls + 1):
            if len(tracker) >= cap:
                break  # topology.max.spout.pending tuples in flight: wait for acks
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

    # backpressure and activation ------------------------------------------------------
    def on_throttle(self, on: bool, clock: float) -> None:
        """The stream manager's word: stop emitting, or go on; the time told to stop is backpressure
        time."""
        if on and not self.throttled:
            self.throttled_at = clock
        elif self.throttled and not on:
            self.backpressure_time += clock - self.throttled_at
        if on != self.throttled and self.initialized:
            self.component.on_backpressure(on)
        self.throttled = on

    def on_active(self, active: bool) -> None:
        if active:
            self.component.activate()
        else:
            self.flush_all()
            self.component.deactivate()

    def on_restored(self) -> None:
        """At least once, the open trees of the old epoch fail now (their tuples were dropped): the
        spout replays them from where it was restored."""
        if self.reliable:
            for root in list(self.tracker.trees):
                for tup_id in self.tracker.fail(root):
                    self.tree_failed(tup_id)

    def role_metrics(self, clock: float) -> dict:
        if self.throttled:  # time throttled so far counts in this bucket
            self.backpressure_time += clock - self.throttled_at
            self.throttled_at = clock
        return {TIMEOUT_COUNT: self.timeouts, PENDING: len(self.tracker)} if self.reliable else {}

    def on_disconnected(self, clock: float) -> tuple:
        """Besides what was framed for the dead connection, the word to stop emitting went with it.
        At least once it fails its open trees now but those with tuples still in its batches: the
        others crossed the dead stream manager (tuples or acks), and waiting for
        ``topology.message.timeout.secs`` would only delay their replay."""
        lost, _ = super().on_disconnected(clock)
        self.on_throttle(False, clock)
        failed = 0
        if self.reliable:
            unsent = set().union(*(batch.roots() for batch in self.batches.values()))
            for root in [r for r in self.tracker.trees if r not in unsent]:
                for tup_id in self.tracker.fail(root):
                    failed += 1
                    self.tree_failed(tup_id)
        return lost, failed

    # trees (at least once) -------------------------------------------------------------
    def emit_to(self, values: Sequence[object], stream: str, targets: Sequence[int], tup_id: object,
                anchors: Optional[Iterable[Tuple]]) -> None:
        """At least once, a tuple with an id starts a tree: one span per copy, each with a random value
        (the fast path in ``emit.py`` does the same for one target)."""
        if not self.reliable:
            return super().emit_to(values, stream, targets, tup_id, anchors)
        root = None if tup_id is None else self.open_tree()
        xor = 0
        for t in targets:
            batch = self.batch_for(t)
            if root is None:
                batch.join(stream, values, None)
            else:
                value = new_value()
                xor ^= value
                batch.add_span(stream, values, root, value)
            if batch.full:
                self.send_batch(batch)
        if root is not None:
            self.start_tree(root, tup_id, xor, 0.0)  # no subscriber: nothing to wait for

    def on_acks(self, frame_bytes: bytes) -> None:
        """Acks and fails of its trees (an ACK frame)."""
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
            for tup_id in self.tracker.fail(root):
                self.tree_failed(tup_id)

    def open_tree(self) -> int:
        """A root for a new tree of this task (``start_tree`` starts it once its first spans are out)."""
        return self.tracker.fresh_root(self.task_id)

    def start_tree(self, root: int, tup_id: object, xor: int, latency: float) -> None:
        """The tree ``root`` of the tuple emitted with ``tup_id`` (or of a call's tuples: ``CallIds``) is
        open with spans whose values XOR to ``xor``; with none (0: nothing subscribes, or the whole tree
        was processed in a chain) it is complete now, ``latency`` seconds after its emit."""
        if not self.tracker.start(root, tup_id, xor, time.monotonic()):
            self.complete(tup_id, latency)

    def trees_back(self, span: Span, tup_id: object, latency: float) -> None:
        """The tuple (or the call's tuples: ``CallIds``) this chain head handed on by call in ``span``
        (their tree: ``span.roots``) came back ``latency`` seconds after the call: the tree failed in
        the chain, or goes on with what the tuples leaving the chain took of the span
        (``span.delta``), or is complete."""
        if span.failed:
            for one in ids_of(tup_id):
                self.tree_failed(one)
        else:
            self.start_tree(span.roots, tup_id, span.delta, latency)  # type: ignore[arg-type]

    def complete(self, tup_id: object, latency: float) -> None:
        """The tree of ``tup_id`` (or of a call's tuples: ``CallIds``) completed ``latency`` seconds
        after its emit."""
        ack = self.component.ack
        for one in ids_of(tup_id):
            self.ack_count += 1
            self.completed += 1
            self.complete_time += latency
            ack(one)

    def tree_failed(self, tup_id: object) -> None:
        """The tree of ``tup_id`` failed (a bolt failed a tuple in it, it timed out, or crossed a lost
        stream manager): the spout's ``fail``."""
        self.fail_count += 1
        self.component.fail(tup_id)

    def expire(self, now: float) -> None:
        """Trees open past ``topology.message.timeout.secs`` fail and are handed back."""
        for tup_id in self.tracker.expire(now):
            self.timeouts += 1
            self.tree_failed(tup_id)
