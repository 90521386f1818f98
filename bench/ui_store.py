"""What the UI's questions cost a topology master: ``MetricsStore`` answers for 20 and 200 tasks.

An hour of 5 s buckets per task is added; each window's answer (with its
per-component series, as the topology page asks) is timed against the answer
``squall metrics`` has always asked for (totals since start) in the same
invocation, and the store's memory is measured. ``--tasks 20000 --buckets 30``:
the topology page's answer for issue 30's 20,000 tasks (rows of no task, as the
page asks: ``task_ids=()``), in CPU seconds.

    .venv/bin/python bench/ui_store.py [--tasks 20 200] [--buckets 720]
"""
from __future__ import annotations

import argparse
import sys
import time
import tracemalloc

from squall.idl import schema
from squall.runtime.metrics_store import MetricsStore

COMPONENTS = ("spout", "split", "count", "sink")


def filled(tasks: int, buckets: int = 720) -> MetricsStore:
    store = MetricsStore()
    for b in range(1, buckets + 1):
        for t in range(1, tasks + 1):
            store.add(schema.MetricsRow(
                ts=1000.0 + 5 * b + t * 0.001, interval_secs=5.0, process="instance",
                component=COMPONENTS[t % len(COMPONENTS)], task_id=t, emit_count=5000, execute_count=5000,
                ack_count=0, fail_count=0, execute_latency_ms=0.01 * (1 + t % 7), process_latency_ms=0.5,
                complete_latency_ms=None, queue_depth=t % 50, backpressure_ms=0.0, user="{}", pid=t, container=1,
                cpu_percent=40.0, rss_mb=30.0))
    return store


def timed(call: object, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[20, 200])
    parser.add_argument("--buckets", type=int, default=720, help="5 s buckets per task (720: an hour)")
    args = parser.parse_args()
    for tasks in args.tasks:
        tracemalloc.start()
        store = filled(tasks, args.buckets)
        memory = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        base = timed(lambda: store.response())
        print(f"{tasks} tasks, {args.buckets} buckets of 5 s: store {memory / 2**20:.1f} MiB; totals since start "
              f"{base * 1000:.1f} ms")
        for window in (60, 600, 3600):
            t = timed(lambda: store.response(window_secs=window, series=True))
            page = timed(lambda: store.response(window_secs=window, series=True, task_ids=()), repeat=2)
            print(f"  window {window:>4} s with series: {t * 1000:6.1f} ms ({t / base:.1f}x totals); "
                  f"the topology page's (no task rows): {page * 1000:6.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
