"""The time bounds the tests once asserted, measured: each against a baseline run in the same invocation.

    .venv/bin/python bench/bounds.py [--only handshake,cpu,slow-spout,overload]

- handshake: a connection that says nothing is closed at the stream manager's handshake deadline;
  seconds from connect to close, against ``HANDSHAKE_SECS`` (the baseline: about 1.0), and the time a
  connection announcing an oversized HELLO takes to be refused (at once).
- cpu: the metrics manager's ``cpu_percent`` of a spinning process, per bucket, against psutil's reading
  of the same process over the same run (the baseline: about 1.0); a sleeping process's figure beside it.
- slow-spout: a spout whose ``next_tuple`` sleeps 0.5 s a call (tests/e2e/topologies/slow_spout.py):
  seconds from emit to process, against a spout sleeping 0.05 s (the baseline) and against its sleep
  (a burst that ended on size alone held 64 calls' tuples: ~64x).
- overload: the 10x overload of tests/faults/topologies/overload.py, at least once and at most once: the
  longest emit -> process wait against the stated bound (docs/runtime.md, "Overload": ~1 s at least once
  with 100 pending, ~3 s at most once) and against the same topology offered a rate its bolt carries (the
  baseline); the bolt's rate against what the spout asks.

Prints figures, asserts nothing (tests/runtime/test_protocol.py, test_metrics.py,
tests/e2e/test_slow_spout.py and tests/faults/test_overload.py check the exact results).
"""
from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types
from typing import Callable, Dict, List, Mapping

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")
SLOW_SPOUT = os.path.join(TESTS, "e2e", "topologies", "slow_spout.py")
OVERLOAD = os.path.join(TESTS, "faults", "topologies", "overload.py")
SECTIONS = ("handshake", "cpu", "slow-spout", "overload")


# handshake --------------------------------------------------------------------------------------------
def handshake() -> None:
    from squall.runtime.protocol import HANDSHAKE_SECS, listen_socket
    from squall.runtime.stmgr import StreamManager
    from squall.testing import wait_until

    sm = StreamManager("t", "secret", 1, "127.0.0.1", spouts={"spout"}, high_bytes=1 << 20, low_bytes=1 << 19,
                       max_frame=1 << 20)
    listener = listen_socket("127.0.0.1")
    port = listener.getsockname()[1]
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=lambda: loop.run_until_complete(sm.serve(listener)), daemon=True)
    thread.start()
    wait_until(lambda: sm.metrics is not None, timeout=10, what="the stream manager to serve")
    try:
        refused = [_seconds_to_close(port, struct.pack(">IB", 1 << 20, 2) + b"x" * 1000) for _ in range(3)]
        silent = [_seconds_to_close(port, b"") for _ in range(3)]
    finally:
        sm.stop()
        thread.join(5)
    print(f"handshake deadline {HANDSHAKE_SECS:g}s")
    print(f"  oversized HELLO refused after {_figures(refused)} s")
    print(f"  silent connection closed after {_figures(silent)} s; / deadline: "
          f"{statistics.median(silent) / HANDSHAKE_SECS:.2f}")


def _seconds_to_close(port: int, send: bytes) -> float:
    sock = socket.create_connection(("127.0.0.1", port))
    started = time.monotonic()
    sock.settimeout(30)
    try:
        sock.recv(4096)  # the CHALLENGE
        if send:
            sock.sendall(send)
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return time.monotonic() - started


# cpu --------------------------------------------------------------------------------------------------
def cpu(buckets: int = 8, bucket: float = 0.5) -> None:
    import psutil

    from squall.idl import schema
    from squall.runtime.metricsmgr import MetricsManager
    from squall.runtime.protocol import control_frame

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    folder = tempfile.mkdtemp(prefix="squall-bench-bounds-")
    env = types.SimpleNamespace(args=types.SimpleNamespace(container=1), run_dir=folder, packing=None, name="t",
                                execution=types.SimpleNamespace(run_id="r"), metrics_dir=os.path.join(folder, "metrics"))
    mm = MetricsManager(env)

    def row(pid: int, task: int) -> object:
        return schema.MetricsRow(ts=time.time(), interval_secs=bucket, process="instance", component="c", task_id=task,
                                 emit_count=0, execute_count=0, ack_count=0, fail_count=0, queue_depth=0,
                                 backpressure_ms=0.0, user="{}", pid=pid, container=1)

    watched = psutil.Process(busy.pid)
    try:
        time.sleep(bucket)  # the first bucket: the metrics manager's reading starts here
        before, started = sum(watched.cpu_times()[:2]), time.monotonic()
        for _ in range(buckets):
            mm.frames(object(), [control_frame(metrics=[row(busy.pid, 1), row(idle.pid, 2)])])
            time.sleep(bucket)  # the bucket the figure is measured over
            mm.flush(time.time(), bucket)
        direct = 100 * (sum(watched.cpu_times()[:2]) - before) / (time.monotonic() - started)
    finally:
        busy.kill()
        idle.kill()
    lines = [json.loads(line) for line in open(mm.path)]
    busy_cpu = [r["cpu_percent"] for r in lines if r["task_id"] == 1]
    idle_cpu = [r["cpu_percent"] for r in lines if r["task_id"] == 2]
    print(f"cpu_percent per bucket of {bucket:g}s ({os.cpu_count()} cores)")
    print(f"  spinning process: rows {_figures(busy_cpu)} %, psutil over the run {direct:.1f} % "
          f"(the baseline); rows / baseline: {statistics.median(busy_cpu) / direct:.2f}")
    print(f"  sleeping process: rows {_figures(idle_cpu)} %")


# slow spout -------------------------------------------------------------------------------------------
def slow_spout(ids: int = 8) -> None:
    results = {}
    for sleep in (0.05, 0.5):  # the baseline first
        def seen(out: str) -> Dict[int, float]:
            found = {}
            for path in glob.glob(os.path.join(out, "seen-*.log")):
                for line in open(path):
                    if line.endswith("\n"):
                        i, latency = line.split()
                        found[int(i)] = float(latency)
            return found

        config = {"e2e.ids": ids, "e2e.sleep": sleep}
        results[sleep] = _run(SLOW_SPOUT, "e2e.out.dir", config, lambda out: len(seen(out)) >= ids, seen)
    base, slow = ([1000 * s for s in results[sleep].values()] for sleep in (0.05, 0.5))
    print(f"slow spout, {ids} ids: emit -> process, ms")
    print(f"  sleeping 0.05s a call (the baseline): {_figures(base)}")
    print(f"  sleeping 0.5s a call: {_figures(slow)}; / baseline "
          f"{statistics.median(slow) / statistics.median(base):.1f}, / its sleep "
          f"{statistics.median(slow) / 500:.3f} (64 calls held: 64)")


# overload ---------------------------------------------------------------------------------------------
BOUNDS = {"ATLEAST_ONCE": 1.0, "ATMOST_ONCE": 3.0}


def overload(seconds: float = 8.0) -> None:
    print(f"overload (the bolt waits 2 ms a tuple, ~450/s), {seconds:g}s measured after the bolt's first 1,500")
    print("| mode | spout asks | longest wait | / bound | / baseline | bolt tuples/s | / asked |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for mode, bound in BOUNDS.items():
        figures = {}
        for rate in (200, 5000):  # the baseline first: a rate the bolt carries
            config = {"overload.rate": rate, "topology.reliability.mode": mode, "topology.max.spout.pending": 100}
            figures[rate] = _run(OVERLOAD, "overload.out.dir", config, lambda out: _processed(out) > 1500,
                                 lambda out: _measure_overload(out, seconds))
        for rate, (longest, carried) in figures.items():
            print(f"| {mode} | {rate}/s | {longest:.2f}s | {longest / bound:.2f} | "
                  f"{longest / figures[200][0]:.1f} | {carried:.0f} | {carried / rate:.2f} |")


def _windows(out: str) -> List[Mapping[str, float]]:
    rows = []
    for path in glob.glob(os.path.join(out, "waits-*.jsonl")):
        rows += [json.loads(line) for line in open(path) if line.endswith("\n")]
    return sorted(rows, key=lambda r: r["at"])


def _processed(out: str) -> float:
    rows = _windows(out)
    return rows[-1]["processed"] if rows else 0


def _measure_overload(out: str, seconds: float) -> tuple:
    started = time.time()
    time.sleep(seconds)  # the run that is measured
    measured = [w for w in _windows(out) if w["at"] > started]
    longest = max(w["longest"] for w in measured)
    carried = (measured[-1]["processed"] - measured[0]["processed"]) / (measured[-1]["at"] - measured[0]["at"])
    return longest, carried


# a topology on a LocalCluster -------------------------------------------------------------------------
def _run(path: str, out_key: str, config: Mapping[str, object], ready: Callable[[str], bool],
         measure: Callable[[str], object]) -> object:
    """Submit the topology file with ``config`` (and ``out_key`` naming a fresh folder) on a fresh
    ``LocalCluster``, wait until ``ready(folder)``, return ``measure(folder)``."""
    from squall.loader import load_topology_file
    from squall.testing import LocalCluster, wait_until

    out = tempfile.mkdtemp(prefix="squall-bench-bounds-")
    with LocalCluster() as cluster:
        name = cluster.submit(load_topology_file(path), {**config, out_key: out})
        wait_until(lambda: ready(out), timeout=120, what=f"{name} to be ready to measure")
        return measure(out)


def _figures(values: List[float]) -> str:
    return f"median {statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated: {', '.join(SECTIONS)}")
    args = p.parse_args()
    chosen = [s for s in args.only.split(",") if s]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        p.error(f"--only: unknown {', '.join(unknown)}; the sections are {', '.join(SECTIONS)}")
    run = {"handshake": handshake, "cpu": cpu, "slow-spout": slow_spout, "overload": overload}
    for section in chosen:
        run[section]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
