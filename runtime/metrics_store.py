"""The topology master's metrics: every task's rows, since start and over windows.

``MetricsStore`` is pure: instance rows in (``add``), a ``MetricsResponse``
out (``response``), for ``squall metrics``, ``squall show`` and the UI. Per
task it keeps

- totals since start, and the last bucket (its rates are "now");
- the buckets of the last ``FINE_SECS`` as they came, and those of the last
  ``COARSE_SECS`` merged one per minute: an hour of a 200-task topology is
  a few MB;
- its last ``ERRORS_KEPT`` errors raised in user code (the rows' ``user``
  carries them: ``runtime/user_errors.py``) and how many it reported.

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
from typing import Any, Iterable, Optional

from squall.idl import schema

FINE_SECS = 600.0  # buckets kept as they came
COARSE_SECS = 3600.0  # minutes kept
MINUTE = 60.0
ERRORS_KEPT = 20  # per task
SERIES_POINTS = 60  # at most, per component


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
        if '"__errors"' in row.user:
            self._errors(row.user)

    def _errors(self, user_json: str) -> None:
        try:
            user = json.loads(user_json)
            errors = user.get("__errors") or []
            self.error_count += int(user.get("__error-count", len(errors)))
            for e in errors:
                self.errors.append(schema.UserErrorReport(time=float(e["time"]), where=str(e["where"]),
                                                          error=str(e["error"]), traceback=str(e["traceback"])))
        except (ValueError, TypeError, KeyError, AttributeError):
            pass  # a malformed user field: the row's counts still stand

    def samples(self, since: float, coarse: bool) -> list:
        """The buckets that ended after ``since``: as they came, or merged by minute (``coarse``)."""
        return [s for s in (self.minutes if coarse else self.fine) if s.ts > since]


def percentile(pairs: list, q: float) -> Optional[float]:
    """The weighted ``q`` quantile of ``(value, weight)`` pairs (None without any)."""
    if not pairs:
        return None
    pairs = sorted(pairs)
    total = sum(w for _, w in pairs)
    acc = 0.0
    for value, w in pairs:
        acc += w
        if acc >= q * total - 1e-9:
            return value
    return pairs[-1][0]


def _mean(total: float, weight: float) -> Optional[float]:
    return total / weight if weight else None


def _summary(component: str, task_id: Optional[int], s: Sample, samples: Optional[list], rates_of: Sample,
             errors: Iterable, error_count: int, windowed: bool) -> Any:
    """A MetricsSummary of merged sample ``s``; ``samples``: its buckets (percentiles), ``rates_of``: what the
    rates are of (the window, or the last bucket)."""
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
    if windowed and samples:
        for attr, total, weight in (("execute", "exec_sum", "exec_w"), ("process", "proc_sum", "proc_w"),
                                    ("complete", "compl_sum", "compl_w")):
            pairs = [(getattr(x, total) / getattr(x, weight), getattr(x, weight)) for x in samples
                     if getattr(x, weight)]
            setattr(out, f"{attr}_latency_p50_ms", percentile(pairs, 0.5))
            setattr(out, f"{attr}_latency_p99_ms", percentile(pairs, 0.99))
    return out


class MetricsStore:
    """Every task's metrics, from the instance rows the metrics managers forward."""

    def __init__(self) -> None:
        self.tasks: dict = {}

    def add(self, row: Any) -> None:
        if row.process != "instance" or row.task_id is None:
            return
        t = self.tasks.get(row.task_id)
        if t is None or t.component != row.component:
            t = self.tasks[row.task_id] = TaskMetrics(row.component, row.task_id)
        t.add(row)

    def response(self, component: Optional[str] = None, window_secs: Optional[float] = None,
                 series: bool = False, now: Optional[float] = None) -> Any:
        """Per task and per component: since start (``window_secs`` None: totals, rates of the last bucket)
        or over the last ``window_secs`` (up to ``COARSE_SECS``) before ``now`` (default: the newest row)."""
        chosen = [self.tasks[tid] for tid in sorted(self.tasks)
                  if not component or self.tasks[tid].component == component]
        if now is None:
            now = max((t.last.ts for t in chosen), default=0.0)
        window = min(window_secs, COARSE_SECS) if window_secs else None
        since = now - window if window else 0.0
        tasks, by_component = [], {}
        for t in chosen:
            samples = t.samples(since, window > FINE_SECS) if window else None
            if window:
                merged = Sample()
                for s in samples:
                    merged.merge(s)
                rates_of = merged
            else:
                merged, rates_of = t.total, t.last
            tasks.append(_summary(t.component, t.task_id, merged, samples, rates_of, t.errors, t.error_count,
                                  bool(window)))
            by_component.setdefault(t.component, []).append((t, merged, samples, tasks[-1]))
        components = [self._component(name, parts, bool(window)) for name, parts in sorted(by_component.items())]
        out = schema.MetricsResponse(components=components, tasks=tasks)
        if series:
            out.series = self._series(by_component, window or COARSE_SECS, now)
        return out

    @staticmethod
    def _component(name: str, parts: list, windowed: bool) -> Any:
        merged = Sample()
        samples: list = []
        for _, s, task_samples, _ in parts:
            merged.merge(s)
            samples += task_samples or []
        summaries = [p[3] for p in parts]
        errors = sorted((e for t, _, _, _ in parts for e in t.errors), key=lambda e: e.time)[-ERRORS_KEPT:]
        out = _summary(name, None, merged, samples, merged, errors, sum(t.error_count for t, _, _, _ in parts),
                       windowed)
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
        return out

    @staticmethod
    def _series(by_component: dict, window: float, now: float) -> list:
        """Each component's steps over the window: every bucket's counts spread over the steps it spans."""
        start = now - window
        bucket = max((t.last.secs for parts in by_component.values() for t, _, _, _ in parts), default=1.0)
        coarse = window > FINE_SECS
        step = max(window / SERIES_POINTS, MINUTE if coarse else bucket)
        points = []
        for name, parts in sorted(by_component.items()):
            bins: dict = {}
            for t, _, _, _ in parts:
                for s in (t.minutes if coarse else t.fine):
                    begin = s.ts - (MINUTE if coarse else s.secs)
                    if s.ts <= start or s.secs <= 0:
                        continue
                    length = s.ts - begin
                    i = max(0, int((begin - start) // step))
                    while start + i * step < min(s.ts, now):
                        lo, hi = max(begin, start + i * step), min(s.ts, start + (i + 1) * step, now)
                        if hi > lo:
                            _spread(bins.setdefault(i, Sample()), s, (hi - lo) / length)
                        i += 1
            for i in sorted(bins):
                b = bins[i]
                points.append(schema.MetricsPoint(
                    component=name, ts=start + i * step, secs=step, emitted=round(b.emitted),
                    executed=round(b.executed), acked=round(b.acked), failed=round(b.failed),
                    execute_latency_ms=_mean(b.exec_sum, b.exec_w), process_latency_ms=_mean(b.proc_sum, b.proc_w),
                    complete_latency_ms=_mean(b.compl_sum, b.compl_w), backpressure_ms=b.bp_ms))
        return points


def _spread(into: Sample, s: Sample, share: float) -> None:
    """Add ``share`` of sample ``s`` (the part of its bucket in one step) to ``into``."""
    into.emitted += s.emitted * share
    into.executed += s.executed * share
    into.acked += s.acked * share
    into.failed += s.failed * share
    into.exec_sum += s.exec_sum * share
    into.exec_w += s.exec_w * share
    into.proc_sum += s.proc_sum * share
    into.proc_w += s.proc_w * share
    into.compl_sum += s.compl_sum * share
    into.compl_w += s.compl_w * share
    into.bp_ms += s.bp_ms * share
