"""The topology master's metrics: every task's rows, since start and over windows.

``MetricsStore`` is pure: instance rows in (``add``), a ``MetricsResponse``
out (``response``), for ``squall metrics``, ``squall show`` and the UI. Per
task it keeps

- totals since start, and the last bucket (its rates are "now");
- the buckets of the last ``BUCKETS_SECS`` as they came, and those of the last
  ``COARSE_SECS`` merged one per minute: an hour of a 200-task topology is
  a few MB;
- its last ``ERRORS_KEPT`` errors raised in user code (the rows' ``user``
  carries them: ``runtime/user_errors.py``) and how many it reported;

and per component its time series, binned as rows arrive
(``ComponentSeries``), so a chart's answer only adds up bins.

A windowed answer covers the buckets that ended in the last ``window_secs``
(from the minute samples past ``BUCKETS_SECS``: a window longer than that
starts at a minute's start, and its percentiles are of minute means). A task's buckets are kept in
the order they came, one in ``SUMS_EVERY`` (each minute) with the task's sums
before it (``Buckets``): while they came in time order, a window's sums are
the task's totals less those before its first bucket, so an answer adds up
at most ``SUMS_EVERY - 1`` buckets of a task (``queue_depth_max``, a max,
and the percentiles still read each); a task with a late row among its
buckets has them added up. Rates are counts over the
seconds those buckets cover. Latency percentiles are of bucket means: each
bucket of each task is one value, weighted by the tuples it measured (an
instance times frames, not single tuples), so a p99 shows a slow task or a
slow minute, not one slow tuple. Capacity is Storm's busy fraction: time in
``process()`` (spouts: ``next_tuple()`` calls that emitted) over the time
covered. A component's figures: counts, rates, queue depth, cpu and memory
summed over its tasks; capacity and backpressure of its busiest task.
"""
from __future__ import annotations

import bisect
import collections
import itertools
import json
import math
from array import array
from operator import add, attrgetter, itemgetter
from typing import Any, Collection, Iterable, Optional

from squall.idl import schema
from squall.metrics_schema import ERROR_COUNT, ERRORS, PENDING, SOURCE_PARTITIONS, carries

# a task's buckets kept as they came, for windows up to this; longer ones read its minutes (20,000 tasks: a
# 10-minute answer from 120 buckets a task took ~3 s of the leader's cpu, from 10 minutes well under 1 s)
BUCKETS_SECS = 120.0
FINE_SECS = 600.0  # a component's series kept in FINE_STEP bins
COARSE_SECS = 3600.0  # minutes kept
MINUTE = 60.0
ERRORS_KEPT = 20  # per task
SERIES_POINTS = 60  # at most, per component
SUMS_EVERY = 4  # one bucket in SUMS_EVERY holds its task's sums before it (``Buckets``)
FINE_STEP = 1.0  # seconds of a component's series bin, kept FINE_SECS; then one bin a MINUTE, kept COARSE_SECS


class Sample:
    """One bucket of a task (or several merged): sums, so that samples merge exactly."""

    __slots__ = ("ts", "secs", "emitted", "executed", "acked", "failed", "exec_sum", "exec_w", "proc_sum",
                 "proc_w", "compl_sum", "compl_w", "queue", "queue_max", "bp_ms", "cpu_sum", "rss", "minute",
                 "before")

    def __init__(self, row: Any = None) -> None:
        self.ts = self.secs = 0.0
        self.emitted = self.executed = self.acked = self.failed = 0
        self.exec_sum = self.exec_w = self.proc_sum = self.proc_w = self.compl_sum = self.compl_w = 0.0
        self.queue = self.queue_max = 0
        self.bp_ms = self.cpu_sum = self.rss = 0.0
        self.minute = -1
        self.before: Optional[array] = None  # a kept bucket: its task's ``SUMS`` before it (``Buckets``)
        if row is not None:
            self.ts, self.secs = row.ts, row.interval_secs or 0.0
            self.emitted, self.executed = row.emit_count, row.execute_count
            self.acked, self.failed = row.ack_count, row.fail_count
            n = max(row.execute_count, 1)
            if row.execute_latency_ms is not None:
                self.exec_sum, self.exec_w = row.execute_latency_ms * n, n
            if row.process_latency_ms is not None:
                self.proc_sum, self.proc_w = row.process_latency_ms * n, n
            if row.complete_latency_ms is not None:
                acked = max(row.ack_count, 1)
                self.compl_sum, self.compl_w = row.complete_latency_ms * acked, acked
            self.queue = self.queue_max = row.queue_depth
            self.bp_ms = row.backpressure_ms
            self.cpu_sum = (row.cpu_percent or 0.0) * self.secs
            self.rss = row.rss_mb or 0.0

    def merge(self, s: "Sample") -> None:
        """Add a later sample of the same task."""
        self.ts = max(self.ts, s.ts)
        self.secs += s.secs
        self.emitted += s.emitted
        self.executed += s.executed
        self.acked += s.acked
        self.failed += s.failed
        self.exec_sum += s.exec_sum
        self.exec_w += s.exec_w
        self.proc_sum += s.proc_sum
        self.proc_w += s.proc_w
        self.compl_sum += s.compl_sum
        self.compl_w += s.compl_w
        self.queue = s.queue
        self.queue_max = max(self.queue_max, s.queue_max)
        self.bp_ms += s.bp_ms
        self.cpu_sum += s.cpu_sum
        self.rss = s.rss


SUMS = ("secs", "emitted", "executed", "acked", "failed", "exec_sum", "exec_w", "proc_sum", "proc_w", "compl_sum",
        "compl_w", "bp_ms", "cpu_sum")  # the fields ``merge`` adds up
COUNTS = frozenset(("emitted", "executed", "acked", "failed"))  # integers (exact as doubles below 2**53)
_sums = attrgetter(*SUMS)
_ts = attrgetter("ts")
_queue_max = attrgetter("queue_max")


class Buckets:
    """A task's buckets in the order they came (as they came, or merged by minute: only the newest still
    grows), one in ``every`` with the task's sums before it (``before``), the oldest always. While they are
    in time order, the buckets that ended after a time are the last ones, and their sums are the task's
    totals less the sums before the first of them (the sums before the nearest bucket with them, less
    the few buckets between). ``descents`` counts the neighbours out of time order (a late row), but the
    newest pair, whose newer bucket may still grow."""

    __slots__ = ("items", "descents", "every", "added")

    def __init__(self, every: int) -> None:
        self.items: collections.deque = collections.deque()
        self.descents = 0
        self.every = every  # memory: a bucket's sums before it take about a third of what the bucket does
        self.added = 0

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Sample:
        return self.items[i]

    def append(self, s: Sample, total: Sample) -> None:
        """Append ``s``; ``total``: the task's sums before it (copied only where they are kept)."""
        items = self.items
        if len(items) >= 2:  # the pair that was newest: its newer bucket no longer grows
            self.descents += items[-2].ts > items[-1].ts
        if not items or self.added % self.every == 0:
            s.before = array("d", _sums(total))
        self.added += 1
        items.append(s)

    def drop_before(self, oldest: float) -> None:
        """Drop the oldest buckets while they ended before ``oldest``."""
        items = self.items
        while items and items[0].ts < oldest:
            s = items.popleft()
            if len(items) >= 2:  # the pair it was in was counted (its newer bucket was not the newest)
                self.descents -= s.ts > items[0].ts
            if items and items[0].before is None:  # the sums before the oldest: as the task's were then
                items[0].before = array("d", map(add, s.before, _sums(s)))

    def window(self, since: float, total: Sample) -> tuple:
        """The buckets that ended after ``since``, merged, and the list of them; ``total``: the task's sums
        since start (through the newest bucket)."""
        items = self.items
        merged = Sample()
        if self.descents or (len(items) >= 2 and items[-2].ts > items[-1].ts):
            samples = [s for s in items if s.ts > since]  # a late row among them: added up
            for s in samples:
                merged.merge(s)
            return merged, samples
        first = bisect.bisect_right(items, since, key=_ts)
        samples = list(itertools.islice(items, first, None))
        if samples:
            start, between = first, Sample()
            while items[start].before is None:
                start -= 1
                between.merge(items[start])
            for name, now, before, less in zip(SUMS, _sums(total), items[start].before, _sums(between)):
                value = now - before - less
                setattr(merged, name, int(value) if name in COUNTS else value)
            last = samples[-1]
            merged.ts, merged.queue, merged.rss = max(merged.ts, last.ts), last.queue, last.rss
            merged.queue_max = max(merged.queue_max, max(map(_queue_max, samples)))
        return merged, samples


class TaskMetrics:
    """One task's rows: totals, the last bucket, the recent buckets, minutes, errors."""

    def __init__(self, component: str, task_id: int) -> None:
        self.component, self.task_id = component, task_id
        self.total = Sample()
        self.last = Sample()
        self.fine = Buckets(SUMS_EVERY)
        self.minutes = Buckets(1)  # a minute's sums before the next differ from the task's in rounding
        self.errors: collections.deque = collections.deque(maxlen=ERRORS_KEPT)
        self.error_count = 0
        self.sources: list = []  # SourcePartition of its last report (a source spout)
        self.pending: Optional[int] = None  # trees open at the end of its last bucket (a reliable spout)

    def add(self, row: Any) -> None:
        s = Sample(row)
        self.last = s
        self.fine.append(s, self.total)  # before the total takes it in: the sums before it
        minute = int(s.ts // MINUTE)
        if not self.minutes or self.minutes[-1].minute != minute:
            m = Sample()
            m.minute = minute
            self.minutes.append(m, self.total)
        self.minutes[-1].merge(s)
        self.total.merge(s)
        self.fine.drop_before(s.ts - BUCKETS_SECS)
        self.minutes.drop_before(s.ts - COARSE_SECS)
        if not any(carries(row.user, key) for key in (ERRORS, SOURCE_PARTITIONS, PENDING)):
            return
        try:  # once a row, whichever of its keys are read
            user = json.loads(row.user)
        except ValueError:
            return  # a malformed user field: the row's counts still stand
        if not isinstance(user, dict):
            return
        if ERRORS in user:
            self._errors(user)
        if SOURCE_PARTITIONS in user:
            self._sources(user[SOURCE_PARTITIONS], row.ts)
        if PENDING in user:
            try:
                self.pending = int(user[PENDING])
            except (ValueError, TypeError):
                pass  # a malformed count: the row's counts still stand

    def _errors(self, user: dict) -> None:
        try:
            errors = user.get(ERRORS) or []
            self.error_count += int(user.get(ERROR_COUNT, len(errors)))
            for e in errors:
                self.errors.append(schema.UserErrorReport(time=float(e["time"]), where=str(e["where"]),
                                                          error=str(e["error"]), traceback=str(e["traceback"])))
        except (ValueError, TypeError, KeyError, AttributeError):
            pass  # a malformed user field: the row's counts still stand

    def _sources(self, reported: Any, ts: float) -> None:
        try:
            self.sources = [schema.SourcePartition(
                component=self.component, task_id=self.task_id, partition=str(partition),
                lag=None if p.get("lag") is None else int(p["lag"]), records_per_sec=float(p["records_per_sec"]),
                bytes_per_sec=float(p["bytes_per_sec"]), ts=ts) for partition, p in reported.items()]
        except (ValueError, TypeError, KeyError, AttributeError):
            pass  # a malformed report: the row's counts still stand

    def window(self, since: float, coarse: bool) -> tuple:
        """The buckets that ended after ``since`` (as they came, or merged by minute: ``coarse``) merged,
        and the list of them."""
        return (self.minutes if coarse else self.fine).window(since, self.total)


def percentile(pairs: list, q: float) -> Optional[float]:
    """The weighted ``q`` quantile of ``(value, weight)`` pairs (None without any)."""
    return quantiles(pairs, (q,))[0]


def quantiles(pairs: list, qs: tuple) -> list:
    """The weighted quantiles ``qs`` (ascending) of ``(value, weight)`` pairs, sorted once."""
    if not pairs:
        return [None] * len(qs)
    pairs = sorted(pairs)
    weights = list(map(itemgetter(1), pairs))
    total = sum(weights)
    below = list(itertools.accumulate(weights, initial=0.0))[1:]  # the weight up to each value, added in order
    return [pairs[min(bisect.bisect_left(below, q * total - 1e-9), len(pairs) - 1)][0] for q in qs]


def latency_pairs(samples: list) -> tuple:
    """Each bucket's mean execute, process and complete latency with the tuples it covers."""
    return ([(x.exec_sum / x.exec_w, x.exec_w) for x in samples if x.exec_w],
            [(x.proc_sum / x.proc_w, x.proc_w) for x in samples if x.proc_w],
            [(x.compl_sum / x.compl_w, x.compl_w) for x in samples if x.compl_w])


def _mean(total: float, weight: float) -> Optional[float]:
    return total / weight if weight else None


RATES = (("emit_rate", "emitted"), ("execute_rate", "executed"), ("ack_rate", "acked"), ("fail_rate", "failed"))


def _rate(s: Sample, count: str) -> float:
    return getattr(s, count) / (s.secs or 1.0)


def _capacity(s: Sample) -> Optional[float]:
    """Storm's busy fraction: ms in ``process()`` over the time covered."""
    return s.exec_sum / 1000 / s.secs if s.secs else None


def _cpu_percent(s: Sample) -> Optional[float]:
    return s.cpu_sum / s.secs if s.secs else None


def _summary(component: str, task_id: Optional[int], s: Sample, pairs: Optional[tuple], rates_of: Sample,
             errors: Iterable, error_count: int) -> Any:
    """A MetricsSummary of merged sample ``s``; ``pairs``: its buckets' latencies (``latency_pairs``, for
    percentiles: windows only), ``rates_of``: what the rates are of (the window, or the last bucket)."""
    out = schema.MetricsSummary(
        component=component, task_id=task_id, emitted=s.emitted, executed=s.executed, acked=s.acked,
        failed=s.failed, **{rate: _rate(rates_of, count) for rate, count in RATES},
        execute_latency_ms=_mean(s.exec_sum, s.exec_w), process_latency_ms=_mean(s.proc_sum, s.proc_w),
        window_secs=s.secs, complete_latency_ms=_mean(s.compl_sum, s.compl_w),
        capacity=_capacity(s), queue_depth=s.queue, queue_depth_max=s.queue_max,
        backpressure_ms=s.bp_ms, cpu_percent=_cpu_percent(s), rss_mb=s.rss,
        errors=list(errors), error_count=error_count)
    if pairs is not None:
        (out.execute_latency_p50_ms, out.execute_latency_p99_ms), (out.process_latency_p50_ms,
         out.process_latency_p99_ms), (out.complete_latency_p50_ms, out.complete_latency_p99_ms) = \
            (quantiles(p, (0.5, 0.99)) for p in pairs)
    return out


class ComponentSeries:
    """One component's time series, binned as rows arrive: each bucket's counts and latency sums spread over
    the bins it spans (``FINE_STEP`` bins for ``FINE_SECS``, minutes for ``COARSE_SECS``), so answering
    for a window only adds up bins."""

    FIELDS = 11  # emitted, executed, acked, failed, 3 x (latency sum, weight), backpressure ms

    def __init__(self) -> None:
        self.fine: dict = {}  # bin index -> sums
        self.coarse: dict = {}

    def add(self, s: Sample) -> None:
        values = (s.emitted, s.executed, s.acked, s.failed, s.exec_sum, s.exec_w, s.proc_sum, s.proc_w,
                  s.compl_sum, s.compl_w, s.bp_ms)
        for bins, width, keep in ((self.fine, FINE_STEP, FINE_SECS), (self.coarse, MINUTE, COARSE_SECS)):
            _spread(bins, width, s.ts - s.secs, s.ts, values)
            oldest = int((s.ts - keep) // width) - 1
            if len(bins) > keep / width + 2:
                for i in [i for i in bins if i < oldest]:
                    del bins[i]

    def points(self, name: str, window: float, now: float, settled: float) -> list:
        """Steps of the window before ``now`` that end by ``settled`` (the time every task has reported up
        to: a step after it would show a drop that is only rows not yet in)."""
        coarse = window > FINE_SECS
        bins, width = (self.coarse, MINUTE) if coarse else (self.fine, FINE_STEP)
        per = max(1, round(window / SERIES_POINTS / width))  # bins a step
        first, last = int((now - window) // width), math.floor(settled / width) - 1
        out = []
        for k in range(first, last - per + 2, per):
            acc = [0.0] * self.FIELDS
            found = False
            for i in range(k, k + per):
                b = bins.get(i)
                if b is not None:
                    found = True
                    acc = [a + v for a, v in zip(acc, b)]
            if found:
                out.append(schema.MetricsPoint(
                    component=name, ts=k * width, secs=per * width, emitted=round(acc[0]), executed=round(acc[1]),
                    acked=round(acc[2]), failed=round(acc[3]), execute_latency_ms=_mean(acc[4], acc[5]),
                    process_latency_ms=_mean(acc[6], acc[7]), complete_latency_ms=_mean(acc[8], acc[9]),
                    backpressure_ms=acc[10]))
        return out


def _spread(bins: dict, width: float, begin: float, end: float, values: tuple) -> None:
    """Add ``values`` (measured over ``[begin, end)``) to the bins of ``width`` they span, in proportion."""
    length = end - begin
    if length <= 0:
        return
    i = int(begin // width)
    while i * width < end:
        share = (min(end, (i + 1) * width) - max(begin, i * width)) / length
        if share > 0:
            acc = bins.get(i)
            bins[i] = [v * share for v in values] if acc is None else [a + v * share for a, v in zip(acc, values)]
        i += 1


class MetricsStore:
    """Every task's metrics, from the instance rows the metrics managers forward."""

    def __init__(self) -> None:
        self.tasks: dict = {}
        self.series: dict = {}  # component -> ComponentSeries

    def add(self, row: Any) -> None:
        if row.process != "instance" or row.task_id is None:
            return
        t = self.tasks.get(row.task_id)
        if t is None or t.component != row.component:
            t = self.tasks[row.task_id] = TaskMetrics(row.component, row.task_id)
        t.add(row)
        series = self.series.get(row.component)
        if series is None:
            series = self.series[row.component] = ComponentSeries()
        series.add(t.last)

    def response(self, component: Optional[str] = None, window_secs: Optional[float] = None,
                 series: bool = False, now: Optional[float] = None, task_ids: Optional[Collection[int]] = None) -> Any:
        """Per task and per component: since start (``window_secs`` None: totals, rates of the last bucket)
        or over the last ``window_secs`` (up to ``COARSE_SECS``) before ``now`` (default: the newest row).
        With ``task_ids`` only those tasks have rows of their own, and every task that keeps errors (what
        a page shows of a 20,000-task topology); components still sum every task."""
        chosen = [self.tasks[tid] for tid in sorted(self.tasks)
                  if not component or self.tasks[tid].component == component]
        if now is None:
            now = max((t.last.ts for t in chosen), default=0.0)
        window = min(window_secs, COARSE_SECS) if window_secs else None
        since = now - window if window else 0.0
        shown = None if task_ids is None else set(task_ids)
        tasks, by_component = [], {}
        for t in chosen:
            if window:
                merged, samples = t.window(since, window > BUCKETS_SECS)
                rates_of, pairs = merged, latency_pairs(samples)  # while its buckets are in the cache
            else:
                merged, rates_of, pairs = t.total, t.last, None
            if shown is None or t.task_id in shown or t.errors:
                # a task without a row of its own only adds to its component: no summary, no percentiles
                tasks.append(_summary(t.component, t.task_id, merged, pairs, rates_of, t.errors, t.error_count))
                tasks[-1].pending = t.pending
            by_component.setdefault(t.component, []).append((t, merged, rates_of, pairs))
        components = [self._component(name, parts) for name, parts in sorted(by_component.items())]
        out = schema.MetricsResponse(components=components, tasks=tasks)
        sources = [p for t in chosen for p in t.sources]
        if sources:
            out.sources = sorted(sources, key=lambda p: (p.component, p.partition, p.task_id))
        if series:
            settled = now - max((t.last.secs for t in chosen), default=0.0)  # every task reports each bucket
            out.series = [p for name in sorted(by_component) if name in self.series
                          for p in self.series[name].points(name, window or COARSE_SECS, now, settled)]
        return out

    @staticmethod
    def _component(name: str, parts: list) -> Any:
        """``parts``: each task's ``(TaskMetrics, merged sample, what its rates are of, its window's
        ``latency_pairs`` or None)``; the figures of each task as its ``_summary`` has them."""
        merged = Sample()
        pairs: Optional[tuple] = None
        for _, s, _, task_pairs in parts:
            merged.merge(s)
            if task_pairs is not None:
                if pairs is None:
                    pairs = ([], [], [])
                for into, more in zip(pairs, task_pairs):
                    into.extend(more)  # in place: adding lists task by task copies them again each time
        tasks = [t for t, _, _, _ in parts]
        merged_of = [s for _, s, _, _ in parts]
        errors = sorted((e for t in tasks for e in t.errors), key=lambda e: e.time)[-ERRORS_KEPT:]
        out = _summary(name, None, merged, pairs, merged, errors, sum(t.error_count for t in tasks))
        # rates, queue, cpu and memory add up over tasks; capacity and backpressure are the busiest task's
        for rate, count in RATES:
            setattr(out, rate, sum(_rate(r, count) for _, _, r, _ in parts))
        out.window_secs = max((s.secs or 0.0) for s in merged_of)
        out.queue_depth = sum(s.queue or 0 for s in merged_of)
        out.queue_depth_max = max((s.queue_max or 0) for s in merged_of)
        out.cpu_percent = sum(_cpu_percent(s) or 0.0 for s in merged_of)
        out.rss_mb = sum(s.rss or 0.0 for s in merged_of)
        out.capacity = max((c for c in map(_capacity, merged_of) if c is not None), default=None)
        out.backpressure_ms = max((s.bp_ms or 0.0) for s in merged_of)
        open_trees = [t.pending for t in tasks if t.pending is not None]
        out.pending = sum(open_trees) if open_trees else None
        return out
