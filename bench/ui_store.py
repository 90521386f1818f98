"""What the UI's questions cost a topology master: ``MetricsStore`` answers for 20 and 200 tasks.

An hour of 5 s buckets per task is added; each window's answer (with its
per-component series, as the topology page asks) is timed against the answer
``squall metrics`` has always asked for (totals since start) in the same
invocation, and the store's memory is measured. ``--tasks 20000 --buckets 30``:
the topology page's answer for issue 30's 20,000 tasks (rows of no task, as the
page asks: ``task_ids=()``). Times are CPU seconds of this process (the best of
a few), so a loaded machine inflates them less.

``--against REF`` runs the same in two processes, one importing git revision
REF's ``squall`` (``bench/revision.py``) and one this tree's, one after the
other, and prints both with the ratio (this tree / REF).

    .venv/bin/python bench/ui_store.py [--tasks 20 200] [--buckets 720] [--against REF]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
from typing import Dict, List

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
    """The least CPU seconds of ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        call()
        best = min(best, time.process_time() - t0)
    return best


def measured(tasks: int, buckets: int) -> Dict[str, float]:
    """The store's memory (MiB) and each answer's CPU seconds."""
    tracemalloc.start()
    store = filled(tasks, buckets)
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    figures = {"store, MiB": memory / 2 ** 20, "totals since start, s": timed(lambda: store.response())}
    for window in (60, 600, 3600):
        figures[f"window {window} s with series, s"] = timed(lambda: store.response(window_secs=window, series=True))
        figures[f"  window {window} s, the topology page's (no task rows), s"] = timed(
            lambda: store.response(window_secs=window, series=True, task_ids=()), repeat=2)
    return figures


def against(ref: str, tasks: List[int], buckets: int) -> None:
    """Each size on REF's code and on this tree's, each in its own process, and the ratio."""
    import revision

    runs = {}
    for which, env in ((ref, revision.env_for(ref)), ("this tree", None)):
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--json", "--buckets", str(buckets),
                               "--tasks", *map(str, tasks)], env=env, capture_output=True, text=True, check=True)
        runs[which] = json.loads(done.stdout)
    for n in map(str, tasks):
        print(f"{n} tasks, {buckets} buckets of 5 s (load {os.getloadavg()[0]:.1f}):")
        print(f"| figure | {ref} | this tree | this / {ref} |\n| --- | --- | --- | --- |")
        for key, before in runs[ref][n].items():
            after = runs["this tree"][n][key]
            print(f"| {key} | {before:.3g} | {after:.3g} | {after / before:.2f}x |" if before else
                  f"| {key} | {before:.3g} | {after:.3g} | - |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[20, 200])
    parser.add_argument("--buckets", type=int, default=720, help="5 s buckets per task (720: an hour)")
    parser.add_argument("--against", metavar="REF", help="compare with git revision REF (e.g. 7dc2188)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the figures (--against)
    args = parser.parse_args()
    if args.against:
        against(args.against, args.tasks, args.buckets)
        return 0
    if args.json:
        print(json.dumps({n: measured(n, args.buckets) for n in args.tasks}))
        return 0
    for tasks in args.tasks:
        figures = measured(tasks, args.buckets)
        print(f"{tasks} tasks, {args.buckets} buckets of 5 s:")
        for key, value in figures.items():
            print(f"  {key}: {value:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
