"""The bolt's driver at least once: tuples in their spans, anchoring, acking, failing, ACK frames.

Tuples carry their trees in spans (``runtime/acking.py``). A bolt anchors,
acks and fails (automatically by default: ``auto_anchor``, ``auto_ack``,
``auto_fail``, streamparse's defaults) and sends its acks to the spout tasks
in ACK frames; an ack rides on the last tuple the bolt emitted in the same
trees while that tuple is unsent.
"""
from __future__ import annotations

import logging
import time
from typing import Iterable, Optional, Sequence

from squall.component import Tuple, TupleBatch, TupleSource
from squall.idl import schema
from squall.runtime.acking import TASK_SHIFT, Roots, Span, SpanValue, root_task, roots_of, shared_span
from squall.runtime.instance.batch import as_row_run, untouched_acks
from squall.runtime.instance.bolt import BoltInstance
from squall.runtime.instance.compiled import compiled
from squall.runtime.instance.tuples import IDLE, AutoAckedTuple, Received, TrackedTuple
from squall.runtime.protocol import ACK, RateLimitedLog, data_frame

log = logging.getLogger(__name__)
FAILED_TUPLES = RateLimitedLog(log)  # a bolt that raises on every tuple writes one line per 10 s


class ReliableBoltInstance(BoltInstance):
    # what every tuple sets and its anchored emits read, in slots: the C loop and emit (``_emit.c``) read and
    # write them at their offsets, without a hash and a dict probe (~130-200 instructions each, ~3 a word)
    __slots__ = ("current", "span_roots", "span_value", "span", "anchor_span")

    def init_role(self) -> None:
        super().init_role()
        self.acks_out: dict = {}  # spout task -> [[root, value, root, value, ...], [failed root, ...]]
        self.current: Received = IDLE  # the tuple process() is running on (auto_anchor)
        # under auto_ack, the received span being processed: its roots and value, its Span once
        # something needed one (an anchored emit, a fail), and the Span auto_anchor emits join now
        self.span_roots: Optional[Roots] = None
        self.span_value: SpanValue = 0
        self.span: Optional[Span] = None
        self.anchor_span: Optional[Span] = None
        self.spout_task: Optional[int] = None  # the plan's only spout task, if it has one
        # a stateful bolt holds its acks until the checkpoint after them is complete (Storm's rule), so a
        # rollback replays every tuple whose effect it undid: acks never ride on its emits
        self.holding: Optional[list] = [] if self.checkpoint is not None and self.checkpoint.stateful else None
        self.rides = self.holding is None
        self.saved_acks: dict = {}  # checkpoint id -> acks held until it is complete
        loop = compiled("AutoAckedLoop")  # _run_auto_acked's loops in C
        self.auto_acked_loop = None if loop is None else loop(self, AutoAckedTuple, Span, IDLE, self.rides)

    def runtime_class(self, cls: type) -> type:
        self.auto_anchor = bool(getattr(cls, "auto_anchor", True))
        self.auto_ack = bool(getattr(cls, "auto_ack", True))
        self.auto_fail = bool(getattr(cls, "auto_fail", True))
        return super().runtime_class(cls)

    def on_tasks(self, component_tasks: dict) -> None:
        super().on_tasks(component_tasks)

        spout_tasks = [t for c in self.topology.components if c.kind == schema.ComponentKind.SPOUT
                       for t in component_tasks.get(c.name, ())]
        self.spout_task = spout_tasks[0] if len(spout_tasks) == 1 else None  # then every root is its

    # tuples in ----------------------------------------------------------------------
    def on_runs(self, src: int, comp: str, runs: list, arrived: float) -> int:
        """The runs ``[stream, values, spans]`` (or columnar, ``[stream, columns, spans, n]``) of one
        frame: each tuple in its span, anchored, acked and failed as the bolt says."""
        t_start = time.perf_counter()
        done = 0
        for run in runs:
            source = self.source(src, comp, run[0])
            if len(run) == 4:  # columnar: as they came to a process_batch, else as rows
                if self.batched:
                    done += run[3]
                    self._run_batched(source, run[1], run[2], run[3], True)
                    continue
                as_row_run(run)
            stream, vals, spans = run
            done += len(vals)
            if self.batched:
                self._run_batched(source, vals, spans, len(vals), False)
            elif self.auto_ack:
                self._run_auto_acked(source, vals, spans)
            else:
                self._run_acked_by_bolt(source, vals, spans)
        self.account(done, t_start, time.perf_counter(), arrived)
        return done

    def _run_auto_acked(self, source: TupleSource, vals: list, spans: list) -> None:
        """One received run under ``auto_ack``: a span is acked as a whole once process() has returned
        for its last tuple, its value sent once, not once per tuple.

        Only the tuple being processed can be acked, failed or anchored to, so a span needs a
        ``Span`` only when the bolt does one of these (``open_span``): a sink's spans never do,
        and their acks are gathered after the run at C speed (``untouched_acks``). A span that has
        one is acked at its end, where its ack can still ride on its last child span. The inner
        loop is every tuple's cost.
        """
        touched: list = []  # where in ``spans`` the spans that got a Span start (acked here)
        if self.auto_acked_loop is not None:
            self._loop_auto_acked(source, vals, spans, touched)
        else:
            self._python_auto_acked(source, vals, spans, touched)
        self.current = IDLE
        self.span_roots = self.span = self.anchor_span = None
        pairs = untouched_acks(spans, touched)
        if pairs:
            self._queue_acks(pairs)

    def _loop_auto_acked(self, source: TupleSource, vals: list, spans: list, touched: list) -> None:
        """The loops in C (``AutoAckedLoop``): where process() raised, the tuple is ``raised`` here,
        and the loop goes on from the next one."""
        at: list = [0, 0]  # span index, tuple index; and the tuple, where process() raised
        process = self.component.process
        while True:
            try:
                self.auto_acked_loop.run(process, source, vals, spans, at, touched)
                return
            except Exception:
                if len(at) < 3:
                    raise  # the loop's own error, not process()'s
                self.raised(at.pop())
                at[1] += 1

    def _python_auto_acked(self, source: TupleSource, vals: list, spans: list, touched: list) -> None:
        """The loops in Python: the reference the C loops follow line for line."""
        process = self.component.process
        make = AutoAckedTuple
        rides = self.rides
        ends = spans[3::3]
        ends.append(len(vals))
        for k, end in zip(range(0, len(spans), 3), ends):
            roots = self.span_roots = spans[k + 1]
            self.span_value = spans[k + 2]
            self.span = self.anchor_span = None
            for v in vals[spans[k]:end]:
                tup = make()
                tup.values = v
                tup.source = source
                tup.roots = roots
                self.current = tup  # take() inlined
                try:
                    process(tup)
                except Exception:
                    self.raised(tup)
            span = self.span
            if span is not None:
                touched.append(k)
                if not span.failed:
                    value, carried = span.value, span.carried
                    if carried is not None and rides and len(carried) > span.at and value.__class__ is int:
                        carried[span.at] ^= value ^ span.delta  # Span.ride inlined: a split's every input
                    else:
                        self._span_acked(span)

    def _run_batched(self, source: TupleSource, vals: list, spans: list, n: int, columnar: bool) -> None:
        """One received run of ``n`` tuples (``vals``: rows, or one list a field when ``columnar``) for
        a bolt with its own process_batch (``auto_ack``: ``build()`` checks): each span's tuples in one
        call, acked together when it returns, failed together when it fails the batch or raises
        (``auto_fail``)."""
        process_batch = self.component.process_batch
        for k in range(0, len(spans), 3):
            start, roots, value = spans[k], spans[k + 1], spans[k + 2]
            end = spans[k + 3] if k + 3 < len(spans) else n
            if not columnar:
                batch = TupleBatch(vals[start:end], source, roots)
            elif start == 0 and end == n:  # the run is one span: its columns as they came
                batch = TupleBatch.of_columns(vals, source, roots)
            else:
                batch = TupleBatch.of_columns([col[start:end] for col in vals], source, roots)
            self.span_roots, self.span_value = roots, value
            self.span = self.anchor_span = None
            self.current = batch
            try:
                process_batch(batch)
            except Exception:
                self.raised(batch)
            self._batch_done(roots, value)
        self.current = IDLE
        self.span_roots = self.span = self.anchor_span = None

    def _batch_done(self, roots: Optional[Roots], value: SpanValue) -> None:
        """process_batch returned: the span is acked (it rides on a child span, or goes out in an ACK
        frame), unless the batch failed."""
        span = self.span
        if span is not None and span.failed:
            return
        if span is not None:
            self._span_acked(span)
        elif roots is not None:
            self._queue_acks([x for pair in zip(roots_of(roots), [value] * len(roots_of(roots))
                                                 if value.__class__ is int else value) for x in pair])

    def _run_acked_by_bolt(self, source: TupleSource, vals: list, spans: list) -> None:
        """One received run for a bolt that acks itself: each tuple holds its ``Span``, which is
        acked once the bolt has acked every tuple in it."""
        for k in range(0, len(spans), 3):
            start, roots = spans[k], spans[k + 1]
            end = spans[k + 3] if k + 3 < len(spans) else len(vals)
            span = None if roots is None else Span(roots, spans[k + 2], end - start)
            for v in vals[start:end]:
                tup = TrackedTuple()
                tup.values = v
                tup.source = source
                tup.span = span
                self._execute(tup)
        self.current = IDLE

    def _execute(self, tup: TrackedTuple) -> None:
        """process() one tuple; under ``auto_fail`` a raise fails it (its trees are replayed)."""
        self.current = tup
        try:
            self.component.process(tup)
        except Exception:
            self.raised(tup)

    # tuples handed on by call (a chain's edge, edge.py) --------------------------------
    def take(self, values: Sequence[object], source: TupleSource, span: Optional[Span]) -> None:
        """One tuple from the previous member of a chain, processed in the caller's ``span`` (None:
        not tracked): the emits it makes take shares of that span, its fail fails it, and its ack
        (``auto_ack``, which chaining requires) is the caller's."""
        if self.batched:
            self.take_batch(TupleBatch([values], source), span)
            return
        tup = AutoAckedTuple()
        tup.values = values
        tup.source = source
        tup.roots = None if span is None else span.roots
        self.span = span
        self.current = tup
        try:
            self.component.process(tup)
        except Exception:
            self.raised(tup)
        self.current = IDLE
        self.span = self.anchor_span = None

    def take_batch(self, batch: TupleBatch, span: Optional[Span]) -> None:
        """Tuples from the previous member of a chain (its ``emit_many`` or ``emit_columns``), as
        ``take``: one ``process_batch`` call for them all, or ``process`` for each."""
        roots = batch.roots = None if span is None else span.roots
        self.span = span
        if self.batched:
            self.current = batch
            try:
                self.component.process_batch(batch)
            except Exception:
                self.raised(batch)
        else:
            process = self.component.process
            source = batch.source
            for values in batch.values:
                tup = self.current = AutoAckedTuple()
                tup.values = values
                tup.source = source
                tup.roots = roots
                try:
                    process(tup)
                except Exception:
                    self.raised(tup)
                self.anchor_span = None
        self.current = IDLE
        self.span = self.anchor_span = None

    # failures and counts ------------------------------------------------------------------
    def raised(self, tup: Received) -> None:
        """process() (or process_batch) raised on ``tup``: call it in the ``except`` block. Under
        ``auto_fail`` the tuple fails (its trees are replayed) and the bolt goes on; otherwise the
        exception goes on up."""
        if not self.auto_fail:
            raise  # noqa: PLE0704 (re-raises the exception the caller is handling)
        FAILED_TUPLES.warning("task %d: process() raised; the tuple fails and its tree is replayed",
                              self.task_id, exc_info=True)
        self.errors.record("process(): the tuple failed")
        self.fail_tuple(tup)

    # emits ---------------------------------------------------------------------------
    def emit_to(self, values: Sequence[object], stream: str, targets: Sequence[int], tup_id: object,
                anchors: Optional[Iterable[Tuple]]) -> None:
        """The tuple joins a span of its anchors' trees (the fast path in ``emit.py`` does the same
        for one target and the tuple being processed). Anchors already acked or failed anchor
        nothing (Storm's rule: anchor before you ack)."""
        if anchors is None:
            anchors = (self.current,) if self.auto_anchor else ()
        by_id: dict = {}  # id -> Span, in anchor order (a window's output has thousands of anchors)
        for a in anchors:
            if self.auto_ack:
                span = self.open_span() if a is self.current and a is not IDLE else None
            else:
                span = a.span if a.__class__ is TrackedTuple else None
            if span is not None:
                by_id.setdefault(id(span), span)
        spans = list(by_id.values())
        for t in targets:
            batch = self.batch_for(t)
            if len(spans) > 1:
                batch.add_span(stream, values, *shared_span(spans))
            else:
                batch.join(stream, values, spans[0] if spans else None)
            if batch.full:
                self.send_batch(batch)

    def open_span(self) -> Optional[Span]:
        """Under ``auto_ack``: the ``Span`` of the received span being processed (None: not tracked),
        made the first time something needs it (most spans never do: a sink's)."""
        if self.span is None and self.span_roots is not None:
            self.span = Span(self.span_roots, self.span_value)
        return self.span

    def anchor(self) -> Optional[Span]:
        """The span an emit anchored to the tuple being processed joins (None: not tracked), while
        that tuple has not been acked or failed (Storm's rule: anchor before you ack). Under
        ``auto_ack`` it is kept in ``anchor_span`` until then (the fast path reads that first)."""
        if not self.auto_ack:
            return self.current.span  # IDLE's is None
        if self.current is IDLE:
            return None
        self.anchor_span = self.open_span()
        return self.anchor_span

    # acks and fails ----------------------------------------------------------------------
    def ack(self, tup: Received) -> None:
        """The bolt acks ``tup``, once. Under ``auto_ack`` only the tuple being processed can be (the
        others are acked already): later emits are not anchored to it, and its span is acked as a
        whole once process() returns (a batch when process_batch returns; ``metrics_row`` counts
        it)."""
        if self.auto_ack:
            if tup is self.current and tup is not IDLE and tup.__class__ is not TupleBatch:
                self.current = IDLE
                self.anchor_span = None
            return
        if tup.__class__ is not TrackedTuple or tup.span is None:
            return
        span = tup.span
        tup.span = None
        self.ack_count += 1
        span.open -= 1
        if not span.open and not span.failed:
            self._span_acked(span)

    def fail(self, tup: Received) -> None:
        """The bolt fails ``tup``: its trees fail at their spouts, which replay them (once; under
        ``auto_ack`` only the tuple being processed can fail)."""
        self.fail_tuple(tup)

    def fail_tuple(self, tup: Received) -> None:
        """``tup`` fails, once: counted (a batch, each of its tuples), and its span's trees are failed
        at their spouts."""
        if self.auto_ack:
            if tup is not self.current or tup is IDLE:
                return
            self.current = IDLE
            self.anchor_span = None
            self.fail_count += len(tup) if tup.__class__ is TupleBatch else 1
            span = self.open_span()
        elif tup.__class__ is not TrackedTuple or tup.span is None:
            return
        else:
            span = tup.span
            tup.span = None
            self.fail_count += 1
        if span is not None and not span.failed:
            span.failed = True
            for root in roots_of(span.roots):
                self._ack_batch(root_task(root))[1].append(root)

    def metrics_row(self, now: float, interval: float, unread_bytes: int = 0, clock: float = 0.0) -> schema.MetricsRow:
        """Under ``auto_ack`` every tuple executed is acked unless it failed (acks are counted here,
        once, for every tuple: received, or handed on by call in a chain, ``Chain.metrics_rows``)."""
        if self.auto_ack:
            self.ack_count = self.execute_count - self.fail_count
        return super().metrics_row(now, interval, unread_bytes, clock)

    def _span_acked(self, span: Span) -> None:
        """Every tuple of ``span`` is acked: its ack rides on its last child span, or is queued for
        the ACK frames of its roots' spout tasks."""
        if self.rides and span.ride():
            return
        rest = span.rest()
        if rest.__class__ is int:
            self._queue_acks([x for root in roots_of(span.roots) for x in (root, rest)])
        else:
            self._queue_acks([x for pair in zip(span.roots, rest) for x in pair])

    def _queue_acks(self, pairs: list) -> None:
        """Acks ``[root, value, ...]`` into the ACK batches of their roots' spout tasks (with one spout
        task in the plan, every root is its; one whose task left the plan is ignored there), or held
        until a checkpoint is complete (a stateful bolt)."""
        if self.holding is not None:
            self.holding.extend(pairs)
            return
        self._ack_out(pairs)

    def _ack_out(self, pairs: list) -> None:
        if self.spout_task is not None:
            self._ack_batch(self.spout_task)[0].extend(pairs)
            return
        for i in range(0, len(pairs), 2):
            acks = self._ack_batch(pairs[i] >> TASK_SHIFT)[0]
            if acks and acks[-2] == pairs[i]:
                acks[-1] ^= pairs[i + 1]
            else:
                acks += (pairs[i], pairs[i + 1])

    def _ack_batch(self, spout_task: int) -> list:
        batch = self.acks_out.get(spout_task)
        if batch is None:
            batch = self.acks_out[spout_task] = [[], []]
        return batch

    # checkpoints (a stateful bolt) ----------------------------------------------------------
    def on_checkpoint_saved(self, checkpoint_id: int) -> None:
        """The acks of the tuples before this checkpoint's markers wait for it to be complete."""
        if self.holding:
            self.saved_acks[checkpoint_id] = self.holding
            self.holding = []

    def on_checkpoint_done(self, checkpoint_id: int) -> None:
        for cid in sorted(c for c in self.saved_acks if c <= checkpoint_id):
            self._ack_out(self.saved_acks.pop(cid))

    def on_restored(self) -> None:
        """Held acks are of tuples whose effect the rollback undid: never sent (their spouts replay them)."""
        if self.holding is not None:
            self.holding = []
        self.saved_acks.clear()
        self.acks_out.clear()

    def flush_role(self) -> None:
        if self.acks_out:
            for spout_task, (acks, fails) in self.acks_out.items():
                self.out += data_frame(spout_task, self.packb([self.task_id, acks, fails]), 0, ACK)
            self.acks_out.clear()
        super().flush_role()
