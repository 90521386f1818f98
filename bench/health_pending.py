"""The pending tuner on a live topology (issue 27): it holds a p99 complete-latency target while the bolt's
service time doubles mid-run.

tests/health/topologies/health_paced.py with its spout unpaced (it emits whatever pending lets it: pending
binds), at least once, the sink at one task (``squall.health.max.parallelism: 1``, so only the tuner acts),
``squall.health.latency.target.ms`` set, auto mode. The sink sleeps ``--sleep-ms`` a tuple for the first
phase, twice that for the second (through the file ``sleep.ms`` it watches). Every ``--interval`` the
spout's p99 complete latency over the window and pending are printed; then, per phase, the share of the
windows of its settled part (after ``--settle`` seconds) whose p99 is within 20 % of the target.

    .venv/bin/python bench/health_pending.py [--target-ms 400 --sleep-ms 2 --phase-secs 240 240]

Figures go in bench/RESULTS.md ("Health manager"), with the run's load (uptime).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from health import NAME, decisions, drained, rates, set_file, submit

from squall.state import Kind
from squall.testing import LocalCluster

WITHIN = 0.2


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target-ms", type=float, default=400)
    p.add_argument("--sleep-ms", type=float, default=2)
    p.add_argument("--phase-secs", type=float, nargs=2, default=[240, 240], metavar=("BEFORE", "AFTER"))
    p.add_argument("--settle", type=float, default=120, help="seconds of each phase before its windows count")
    p.add_argument("--interval", type=float, default=10, help="squall.health.interval.secs (and the window)")
    p.add_argument("--stabilization", type=float, default=20, help="squall.health.stabilization.secs")
    args = p.parse_args()
    print(f"load: {os.getloadavg()}")
    with LocalCluster() as cluster:
        out_dir = os.path.join(cluster.home, "out")
        os.mkdir(out_dir)
        set_file(out_dir, "sleep.ms", args.sleep_ms)
        props = {"health.out.dir": out_dir, "health.ids": 10 ** 9, "health.rate": 10 ** 6,
                 "health.sleep.ms": args.sleep_ms, "squall.health.mode": "auto",
                 "squall.health.interval.secs": args.interval, "squall.health.stabilization.secs": args.stabilization,
                 "squall.health.latency.target.ms": args.target_ms, "squall.health.max.parallelism": 1}
        submit(props)
        state = cluster.state
        phases: list[list[float]] = []
        for phase, (secs, sleep_ms) in enumerate(zip(args.phase_secs, (args.sleep_ms, 2 * args.sleep_ms))):
            set_file(out_dir, "sleep.ms", sleep_ms)
            start = time.monotonic()
            settled: list[float] = []
            while time.monotonic() - start < secs:
                time.sleep(args.interval)
                m = rates(state, args.interval)
                p99 = ((m or {}).get("components", {}).get("ids") or {}).get("complete_latency_p99_ms")
                pending = state.get(Kind.EXECUTION_STATE, NAME).max_spout_pending
                elapsed = time.monotonic() - start
                print(f"phase {phase + 1} (sink {sleep_ms:g} ms) t={elapsed:5.0f} s  p99 {p99} ms  pending {pending}",
                      flush=True)
                if p99 is not None and elapsed >= args.settle:
                    settled.append(float(p99))
            phases.append(settled)
        emitted, acked = drained(out_dir)
        actions = decisions(state)[0]
        cluster.kill(NAME)
    target = args.target_ms
    for i, settled in enumerate(phases):
        within = [x for x in settled if abs(x - target) <= WITHIN * target]
        median = statistics.median(settled) if settled else None
        print(f"phase {i + 1}: {len(within)} of {len(settled)} settled windows within {100 * WITHIN:.0f} % of "
              f"{target:g} ms (median p99 {median} ms)")
    print("actions:", *actions, sep="\n  ")
    print(f"ids emitted {emitted}, acked {len(acked)}, every one: {acked == set(range(emitted))}")
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
