"""The metrics store's answers against a straightforward computation from the rows themselves: every task's
buckets of the window added up one by one, percentiles by sorting and walking every bucket of a component.

The store answers a window from sums it keeps (a task's totals less the sums before the window's first
bucket); these tests feed it irregular rows (tasks that miss buckets, rows that come late, errors, open
trees, several components, uneven bucket lengths) and compare every figure of every answer.
"""
import json
import random

import pytest

from squall.idl import schema
from squall.metrics_schema import ERROR_COUNT, ERRORS, PENDING
from squall.runtime.metrics_store import BUCKETS_SECS, COARSE_SECS, ERRORS_KEPT, MINUTE, MetricsStore, Sample

COMPONENTS = ("spout", "split", "count")
TASKS = range(1, 13)
WINDOWS = (None, 30, 60, 120, 300, 600, 900)  # past BUCKETS_SECS (120), answered from minutes


def irregular_rows(seed):
    """About 15 minutes of 5 s buckets (some 3 or 7 s) of 12 tasks: some buckets missing, some late."""
    rng = random.Random(seed)
    rows, held_back = [], []
    for b in range(180):
        for task in TASKS:
            if rng.random() < 0.1:
                continue  # a missed bucket
            secs = rng.choice((5.0, 5.0, 5.0, 3.0, 7.0))
            executed = rng.randrange(0, 2000)
            acked = rng.randrange(0, 50) if task % 3 == 1 else 0
            user = {}
            if rng.random() < 0.03:
                user[ERRORS] = [{"time": 1000.0 + 5 * b, "where": "process", "error": f"boom {task}.{b}",
                                 "traceback": "..."}]
                user[ERROR_COUNT] = rng.randrange(1, 4)
            if task % 3 == 1:
                user[PENDING] = rng.randrange(0, 100)
            r = schema.MetricsRow(
                ts=1000.0 + 5 * b + task * 0.01, interval_secs=secs, process="instance",
                component=COMPONENTS[task % len(COMPONENTS)], task_id=task, emit_count=rng.randrange(0, 3000),
                execute_count=executed, ack_count=acked, fail_count=rng.randrange(0, 3),
                execute_latency_ms=None if rng.random() < 0.1 else rng.uniform(0.01, 30.0),
                process_latency_ms=rng.uniform(0.01, 5.0),
                complete_latency_ms=rng.uniform(1.0, 500.0) if acked else None, queue_depth=rng.randrange(0, 500),
                backpressure_ms=rng.choice((0.0, 0.0, rng.uniform(0.0, 5000.0))), user=json.dumps(user), pid=task,
                container=1, cpu_percent=None if rng.random() < 0.05 else rng.uniform(0.0, 100.0),
                rss_mb=rng.uniform(20.0, 60.0))
            if rng.random() < (0.02 if b < 160 else 0.1):  # more in the last buckets, kept as they came
                held_back.append((b + rng.randrange(2, 5), r))  # comes 2-4 buckets late
            else:
                rows.append(r)
        rows += [r for due, r in held_back if due == b]
    return rows + [r for due, r in held_back if due >= 180]


class Reference:
    """Every task's buckets as they came, kept and merged by minute by the store's rules, added up one by one
    for each answer."""

    def __init__(self, rows):
        self.fine, self.minutes, self.last, self.total = {}, {}, {}, {}
        self.component, self.pending, self.errors, self.error_count = {}, {}, {}, {}
        for r in rows:
            s, t = Sample(r), r.task_id
            self.component[t] = r.component
            self.last[t] = s
            self.total.setdefault(t, Sample()).merge(s)
            fine = self.fine.setdefault(t, [])
            fine.append(s)
            while fine[0].ts < s.ts - BUCKETS_SECS:
                fine.pop(0)
            minutes = self.minutes.setdefault(t, [])
            if not minutes or minutes[-1].minute != int(s.ts // MINUTE):
                minutes.append(Sample())
                minutes[-1].minute = int(s.ts // MINUTE)
            minutes[-1].merge(s)
            while minutes[0].ts < s.ts - COARSE_SECS:
                minutes.pop(0)
            user = json.loads(r.user)
            if PENDING in user:
                self.pending[t] = user[PENDING]
            self.error_count[t] = self.error_count.get(t, 0) + user.get(ERROR_COUNT, 0)
            self.errors.setdefault(t, []).extend(
                schema.UserErrorReport(time=e["time"], where=e["where"], error=e["error"], traceback=e["traceback"])
                for e in user.get(ERRORS, []))

    def answer(self, window, now, task_ids):
        """``(components, tasks)``: each a dict of name or task id -> figures."""
        now = max(s.ts for s in self.last.values()) if now is None else now
        window = min(window, COARSE_SECS) if window else None
        per_task = {}
        for t in sorted(self.last):
            if window:
                merged = Sample()
                chosen = [s for s in (self.minutes[t] if window > BUCKETS_SECS else self.fine[t]) if s.ts > now - window]
                for s in chosen:
                    merged.merge(s)
                per_task[t] = figures(merged, merged, chosen, self.errors[t][-ERRORS_KEPT:], self.error_count[t])
            else:
                per_task[t] = figures(self.total[t], self.last[t], None, self.errors[t][-ERRORS_KEPT:],
                                      self.error_count[t])
            per_task[t]["pending"] = self.pending.get(t)
        components = {}
        for name in sorted(set(self.component.values())):
            mine = [t for t in per_task if self.component[t] == name]
            merged, chosen = Sample(), []
            for t in mine:
                if window:
                    held = self.minutes[t] if window > BUCKETS_SECS else self.fine[t]
                    chosen += [s for s in held if s.ts > now - window]
                    for s in held:
                        if s.ts > now - window:
                            merged.merge(s)
                else:
                    merged.merge(self.total[t])
            errors = sorted((e for t in mine for e in self.errors[t][-ERRORS_KEPT:]), key=lambda e: e.time)
            c = figures(merged, merged, chosen if window else None, errors[-ERRORS_KEPT:],
                        sum(self.error_count[t] for t in mine))
            rows = [per_task[t] for t in mine]
            for rate in ("emit_rate", "execute_rate", "ack_rate", "fail_rate"):
                c[rate] = sum(x[rate] for x in rows)
            c.update(window_secs=max(x["window_secs"] for x in rows), queue_depth=sum(x["queue_depth"] for x in rows),
                     queue_depth_max=max(x["queue_depth_max"] for x in rows),
                     cpu_percent=sum(x["cpu_percent"] or 0.0 for x in rows), rss_mb=sum(x["rss_mb"] for x in rows),
                     capacity=max((x["capacity"] for x in rows if x["capacity"] is not None), default=None),
                     backpressure_ms=max(x["backpressure_ms"] for x in rows),
                     pending=sum(x["pending"] for x in rows if x["pending"] is not None) if any(
                         x["pending"] is not None for x in rows) else None)
            components[name] = c
        if task_ids is not None:
            per_task = {t: x for t, x in per_task.items() if t in task_ids or x["errors"]}
        return components, per_task


def figures(s, rates_of, buckets, errors, error_count):
    secs = rates_of.secs or 1.0
    out = {"emitted": s.emitted, "executed": s.executed, "acked": s.acked, "failed": s.failed,
           "emit_rate": rates_of.emitted / secs, "execute_rate": rates_of.executed / secs,
           "ack_rate": rates_of.acked / secs, "fail_rate": rates_of.failed / secs,
           "execute_latency_ms": s.exec_sum / s.exec_w if s.exec_w else None,
           "process_latency_ms": s.proc_sum / s.proc_w if s.proc_w else None,
           "complete_latency_ms": s.compl_sum / s.compl_w if s.compl_w else None, "window_secs": s.secs,
           "capacity": s.exec_sum / 1000 / s.secs if s.secs else None, "queue_depth": s.queue,
           "queue_depth_max": s.queue_max, "backpressure_ms": s.bp_ms,
           "cpu_percent": s.cpu_sum / s.secs if s.secs else None, "rss_mb": s.rss, "errors": list(errors),
           "error_count": error_count}
    for name, total, weight in (("execute", "exec_sum", "exec_w"), ("process", "proc_sum", "proc_w"),
                                ("complete", "compl_sum", "compl_w")):
        pairs = None if buckets is None else [(getattr(b, total) / getattr(b, weight), getattr(b, weight))
                                              for b in buckets if getattr(b, weight)]
        out[f"{name}_latency_p50_ms"] = None if pairs is None else walk(pairs, 0.5)
        out[f"{name}_latency_p99_ms"] = None if pairs is None else walk(pairs, 0.99)
    return out


def walk(pairs, q):
    """The first value, in order, whose weight up to it reaches ``q`` of all."""
    if not pairs:
        return None
    pairs = sorted(pairs)
    total, acc = sum(w for _, w in pairs), 0.0
    for value, w in pairs:
        acc += w
        if acc >= q * total - 1e-9:
            return value
    return pairs[-1][0]


def same(answer, reference, what):
    for field, want in reference.items():
        got = getattr(answer, field)
        if isinstance(want, float):
            assert got == pytest.approx(want, rel=1e-9, abs=1e-9), f"{what}: {field}"
        else:
            assert got == want, f"{what}: {field}"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_answer_is_the_buckets_added_up_one_by_one(seed):
    rows = irregular_rows(seed)
    store = MetricsStore()
    for r in rows:
        store.add(r)
    reference = Reference(rows)
    assert any(store.tasks[t].fine.descents for t in TASKS), "no late row among the kept buckets"
    newest = max(r.ts for r in rows)
    for window in WINDOWS:
        for now in (None, newest - 97.0):
            for task_ids in (None, (), (3, 7)):
                for series in (False, True):
                    what = f"window {window}, now {now}, task_ids {task_ids}, series {series}"
                    answer = store.response(window_secs=window, now=now, task_ids=task_ids, series=series)
                    components, tasks = reference.answer(window, now, task_ids)
                    assert [c.component for c in answer.components] == list(components), what
                    for c in answer.components:
                        same(c, components[c.component], f"{what}, {c.component}")
                    assert [t.task_id for t in answer.tasks] == list(tasks), what
                    for t in answer.tasks:
                        same(t, tasks[t.task_id], f"{what}, task {t.task_id}")
                    assert bool(answer.series) == series, what
