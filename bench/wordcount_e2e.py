"""End-to-end word count on the local cluster: words/s and emit->count latency.

Used by bench/throughput.py (which prints it beside the plain-Python
baseline); runnable alone:

    .venv/bin/python bench/wordcount_e2e.py [--seconds 10]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY = os.path.join(HERE, "topologies", "wc_bench.py")


def _snapshot(out_dir: str) -> dict:
    """Per count task: the last line's time and words, and every latency sample so far."""
    snap = {}
    for path in glob.glob(os.path.join(out_dir, "count-*.jsonl")):
        with open(path) as f:
            lines = [json.loads(line) for line in f if line.endswith("\n")]
        if lines:
            snap[path] = {"at": lines[-1]["at"], "words": lines[-1]["words"],
                          "samples": [s for line in lines for s in line["samples"]]}
    return snap


def _percentile(values: list, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def run(seconds: float, warmup: float = 4.0, *props: str) -> dict:
    """Submit, warm up, measure over ``seconds``, kill; returns words/s and latency percentiles (ms)."""
    home = tempfile.mkdtemp(prefix="squall-bench-")
    out = os.path.join(home, "out")
    os.makedirs(out)
    env = dict(os.environ, SQUALL_HOME=home)
    squall = [sys.executable, "-m", "squall.cli"]
    args = ["submit", TOPOLOGY, "--config-property", f"bench.out.dir={out}"]
    for p in props:
        args += ["--config-property", p]
    subprocess.run(squall + args, env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        time.sleep(warmup)
        first = _snapshot(out)
        time.sleep(seconds)
        last = _snapshot(out)
        completes = _completes(out)
    finally:
        subprocess.run(squall + ["kill", "wc_bench"], env=env, check=True, stdout=subprocess.DEVNULL)
        shutil.rmtree(home, ignore_errors=True)
    words = sum(s["words"] for s in last.values()) - sum(s["words"] for s in first.values())
    start = min(s["at"] for s in first.values())
    end = max(s["at"] for s in last.values())
    latencies = [lat * 1000 for s in last.values() for at, lat in s["samples"] if start <= at <= end]
    complete = [lat * 1000 for at, lat in completes if start <= at <= end]
    return {
        "words_per_sec": words / (end - start),
        "p50_ms": _percentile(latencies, 0.50),
        "p99_ms": _percentile(latencies, 0.99),
        "samples": len(latencies),
        "complete_p50_ms": _percentile(complete, 0.50),
        "complete_p99_ms": _percentile(complete, 0.99),
    }


def _completes(out_dir: str) -> list:
    """(time, complete latency) samples the spout wrote (at least once)."""
    samples = []
    for path in glob.glob(os.path.join(out_dir, "complete-*.jsonl")):
        with open(path) as f:
            samples += [s for line in f if line.endswith("\n") for s in json.loads(line)]
    return samples


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--config-property", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    result = run(args.seconds, 4.0, *args.config_property)
    print(f"end-to-end word count: {result['words_per_sec'] / 1e3:.0f}k words/s, "
          f"latency p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms ({result['samples']} samples)")
