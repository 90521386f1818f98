"""The topology master's metrics: every task's rows, since start and over windows.

``MetricsStore`` is pure: instance rows in (``add``), a ``MetricsResponse``
out (``response``), for ``squall metrics``, ``squall show`` and the UI. Per
task it keeps

- totals since start, and the last bucket (its rates are "now");
- the buckets of the last ``FINE_SECS`` as they came, and those of the last
  ``COARSE_SECS`` merged one per minute: an hour of a 200-task topology is
  a few MB;
- its last ``ERRORS_KEPT`` errors raised in user code (the rows' ``user``
  carries them: ``runtime/user_errors.py``) and how many it reported;

and per component its time series, binned as rows arrive
(``ComponentSeries``), so a chart's answer only adds up bins.

A windowed answer covers the buckets that ended in the last ``window_secs``
(from the minute samples past ``FINE_SECS``). Rates are counts over the
seconds those buckets cover. Latency percentiles are of bucket means: each
bucket of each task is one value, weighted by the tuples it measured (an
instance times frames, not single tuples), so a p99 shows a slow task or a
slow minute, not one slow tuple. Capacity is Storm's busy fraction: time in
``process()`` (spouts: ``next_tuple()`` calls that emitted) over the time
covered. A component's figures: counts, rates, queue depth, cpu and memory
summed over its tasks; capacity and backpressure of its busiest task.
"""
from __future__ import annotations

import collections
import json
import math
from typing import Any, Collection, Iterable, Optional

from squall.idl import schema
from squall.metrics_schema import ERROR_COUNT, ERRORS, PENDING, SOURCE_PARTITIONS, carries

FINE_SECS = 600.0  # buckets kept as they came
COARSE_SECS = 3600.0  # minutes kept
MINUTE = 60.0
ERRORS_KEPT = 20  # per task
SERIES_POINTS = 60  # at most, per component
FINE_STEP = 1.0  # seconds of a component's series bin, kept FINE_SECS; then one bin a MINUTE, kept COARSE_SECS


class Sample:
    """One bucket of a task (or several merged): sums, so that samples merge exactly."""

    __slots__ = ("ts", "secs", "emitted", "executed", "acked", "failed", "exec_sum", "exec_w", "proc_sum",
                 "proc_w", "compl_sum", "compl_w", "queue", "queue_max", "bp_ms", "cpu_sum", "rss", "minute")

    def __init__(self, row: Any = None) -> None:
        self.ts = self.secs = 0.0
        self.emitted = self.executed = self.acked = self.failed = 0
        self.exec_sum = self.exec_w = self.proc_sum = self.proc_w = self.compl_sum = self.compl_w = 0.0
        self.queue = self.queue_max = 0
        self.bp_ms = self.cpu_sum = self.rss = 0.0
        self.minute = -1
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


class TaskMetrics:
    """One task's rows: totals, the last bucket, the recent buckets, minutes, errors."""

    def __init__(self, component: str, task_id: int) -> None:
        self.component, self.task_id = component, task_id
        self.total = Sample()
        self.last = Sample()
        self.fine: collections.deque = collections.deque()
        self.minutes: collections.deque = collections.deque()
        self.errors: collections.deque = collections.deque(maxlen=ERRORS_KEPT)
        self.error_count = 0
        self.sources: list = []  # SourcePartition of its last report (a source spout)
        self.pending: Optional[int] = None  # trees open at the end of its last bucket (a reliable spout)

    def add(self, row: Any) -> None:
        s = Sample(row)
        self.last = s
        self.total.merge(s)
        self.fine.append(s)
        while self.fine and self.fine[0].ts < s.ts - FINE_SECS:
            self.fine.popleft()
        minute = int(s.ts // MINUTE)
        if not self.minutes or self.minutes[-1].minute != minute:
            m = Sample()
            m.minute = minute
            self.minutes.append(m)
        self.minutes[-1].merge(s)
        while self.minutes and self.minutes[0].ts < s.ts - COARSE_SECS:
            self.minutes.popleft()
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

    def samples(self, since: float, coarse: bool) -> list:
        """The buckets that ended after ``since``: as they came, or merged by minute (``coarse``)."""
        return [s for s in (self.minutes if coarse else self.fine) if s.ts > since]


def percentile(pairs: list, q: float) -> Optional[float]:
    """The weighted ``q`` quantile of ``(value, weight)`` pairs (None without any)."""
    return quantiles(pairs, (q,))[0]


def quantiles(pairs: list, qs: tuple) -> list:
    """The weighted quantiles ``qs`` (ascending) of ``(value, weight)`` pairs, sorted once."""
    if not pairs:
        return [None] * len(qs)
    pairs = sorted(pairs)
    total = sum(w for _, w in pairs)
    out, acc, k = [], 0.0, 0
    for value, w in pairs:
        acc += w
        while k < len(qs) and acc >= qs[k] * total - 1e-9:
            out.append(value)
            k += 1
        if k == len(qs):
            return out
    return out + [pairs[-1][0]] * (len(qs) - len(out))


def latency_pairs(samples: list) -> tuple:
    """Each bucket's mean execute, process and complete latency with the tuples it covers."""
    return ([(x.exec_sum / x.exec_w, x.exec_w) for x in samples if x.exec_w],
            [(x.proc_sum / x.proc_w, x.proc_w) for x in samples if x.proc_w],
            [(x.compl_sum / x.compl_w, x.compl_w) for x in samples if x.compl_w])


def _mean(total: float, weight: float) -> Optional[float]:
    return total / weight if weight else None


def _summary(component: str, task_id: Optional[int], s: Sample, pairs: Optional[tuple], rates_of: Sample,
             errors: Iterable, error_count: int) -> Any:
    """A MetricsSummary of merged sample ``s``; ``pairs``: its buckets' latencies (``latency_pairs``, for
    percentiles: windows only), ``rates_of``: what the rates are of (the window, or the last bucket)."""
    secs = rates_of.secs or 1.0
    out = schema.MetricsSummary(
        component=component, task_id=task_id, emitted=s.emitted, executed=s.executed, acked=s.acked,
        failed=s.failed, emit_rate=rates_of.emitted / secs, execute_rate=rates_of.executed / secs,
        ack_rate=rates_of.acked / secs, fail_rate=rates_of.failed / secs,
        execute_latency_ms=_mean(s.exec_sum, s.exec_w), process_latency_ms=_mean(s.proc_sum, s.proc_w),
        window_secs=s.secs, complete_latency_ms=_mean(s.compl_sum, s.compl_w),
        capacity=s.exec_sum / 1000 / s.secs if s.secs else None, queue_depth=s.queue, queue_depth_max=s.queue_max,
        backpressure_ms=s.bp_ms, cpu_percent=s.cpu_sum / s.secs if s.secs else None, rss_mb=s.rss,
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
            pairs = None
            if window:
                samples = t.samples(since, window > FINE_SECS)
                merged = Sample()
                for s in samples:
                    merged.merge(s)
                rates_of, pairs = merged, latency_pairs(samples)
            else:
                merged, rates_of = t.total, t.last
            row = shown is None or t.task_id in shown or bool(t.errors)
            # a task without a row of its own adds to its component, with no percentiles of its own to sort
            tasks.append(_summary(t.component, t.task_id, merged, pairs if row else None, rates_of, t.errors,
                                  t.error_count))
            tasks[-1].pending = t.pending
            by_component.setdefault(t.component, []).append((t, merged, pairs, tasks[-1]))
        components = [self._component(name, parts) for name, parts in sorted(by_component.items())]
        if shown is not None:
            tasks = [t for t in tasks if t.task_id in shown or t.errors]
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
        merged = Sample()
        pairs: Optional[tuple] = None
        for _, s, task_pairs, _ in parts:
            merged.merge(s)
            if task_pairs is not None:
                if pairs is None:
                    pairs = ([], [], [])
                for into, more in zip(pairs, task_pairs):
                    into.extend(more)  # in place: adding lists task by task copies them again each time
        summaries = [p[3] for p in parts]
        errors = sorted((e for t, _, _, _ in parts for e in t.errors), key=lambda e: e.time)[-ERRORS_KEPT:]
        out = _summary(name, None, merged, pairs, merged, errors, sum(t.error_count for t, _, _, _ in parts))
        # rates, queue, cpu and memory add up over tasks; capacity and backpressure are the busiest task's
        for rate in ("emit_rate", "execute_rate", "ack_rate", "fail_rate"):
            setattr(out, rate, sum(getattr(x, rate) for x in summaries))
        out.window_secs = max((x.window_secs or 0.0) for x in summaries)
        out.queue_depth = sum(x.queue_depth or 0 for x in summaries)
        out.queue_depth_max = max((x.queue_depth_max or 0) for x in summaries)
        out.cpu_percent = sum(x.cpu_percent or 0.0 for x in summaries)
        out.rss_mb = sum(x.rss_mb or 0.0 for x in summaries)
        out.capacity = max((x.capacity for x in summaries if x.capacity is not None), default=None)
        out.backpressure_ms = max((x.backpressure_ms or 0.0) for x in summaries)
        open_trees = [x.pending for x in summaries if x.pending is not None]
        out.pending = sum(open_trees) if open_trees else None
        return out
