"""Issue 27's right-size run with real processes: the 100-instance topology (bench/topologies/hundred.py: 4 x 25
tasks asking 0.5 cores and 256 MiB each, at least once, ~3,700 ids/s) on the local cluster in ``auto`` mode.

Prints, before the health manager's first action and once it has settled (no action for ``--settle`` seconds,
or ``--minutes`` in all):

- what YARN would grant the packing plan's containers (memory rounded up to ``squall.yarn.min.allocation.mb``,
  whole vcores: ``squall.packing.yarn.granted``) and what the tasks use (cpu and rss over the last window);
  the grant over the use is the figure the issue asks to bring from 60x to at most 3x;
- the rate the sink carries against the rate offered, and the actions taken;
- whether every id the spouts emitted was acked.

    .venv/bin/python bench/health_hundred.py [--minutes 15 --settle 120 --interval 15] [--report-backlog]

Figures go in bench/RESULTS.md ("Health manager"), with the run's load (uptime).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import time
from typing import Optional

from squall.cli import main as squall
from squall.conf import base_config
from squall.health.view import health_view
from squall.packing.yarn import granted
from squall.resources import Res
from squall.runtime.client import TMasterUnreachable, query_metrics
from squall.state import Kind, StateManager
from squall.testing import LocalCluster, wait_until

TOPOLOGY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "topologies", "hundred.py")
NAME = "hundred"
SPOUT_TASKS = 25


def figures(state: StateManager, window: float) -> Optional[dict]:
    """YARN's grant for the plan, the tasks' use, the rates; None while the topology master does not answer."""
    try:
        m = query_metrics(state, NAME, window_secs=window)
    except TMasterUnreachable:
        return None
    plan = state.get(Kind.PACKING_PLAN, NAME)
    step = base_config()["squall.yarn.min.allocation.mb"]
    grants = [granted(Res.from_thrift(c.resources), step) for c in plan.containers]
    tasks = m["tasks"].values()
    used_cpu = sum((t["cpu_percent"] or 0.0) for t in tasks) / 100
    used_mb = sum((t["rss_mb"] or 0.0) for t in tasks)
    parallelism: dict = {}
    for c in plan.containers:
        for i in c.instances:
            parallelism[i.id.component] = parallelism.get(i.id.component, 0) + 1
    granted_mb, granted_vcores = sum(g[0] for g in grants), sum(g[1] for g in grants)
    return {"containers": len(plan.containers), "parallelism": parallelism,
            "cpu_requested": round(sum(c.resources.cpu for c in plan.containers), 2),
            "ram_requested_mb": sum(c.resources.ram_mb for c in plan.containers),
            "yarn_vcores": granted_vcores, "yarn_mb": granted_mb,
            "cpu_used": round(used_cpu, 2), "ram_used_mb": round(used_mb),
            "vcores_over_use": round(granted_vcores / used_cpu, 1) if used_cpu else None,
            "mb_over_use": round(granted_mb / used_mb, 1) if used_mb else None,
            "offered_per_sec": round(m["components"].get("ids", {}).get("emit_rate") or 0.0),
            "carried_per_sec": round(m["components"].get("sink", {}).get("execute_rate") or 0.0)}


def symptoms_line(shown: dict) -> str:
    """The health manager's view now, on one line: per component its busiest task, its queue, how long it
    was held back and its source's backlog; and its newest decision that was not carried out."""
    parts = [f"{name} busy {s['busy_max']} queue {s['queue_depth_max']} held {s['backpressure_ms']:.0f} ms"
             + (f" backlog {s['source_lag']}" if s["source_lag"] is not None else "")
             for name, s in sorted(shown["symptoms"].items())]
    last = next((d for d in shown["history"] if d["status"] in ("recommended", "blocked")), None)
    return "; ".join(parts) + (f" | {last['status']}: {last['summary']}" if last else "") + (
        f" ({last['reason']})" if last and last["reason"] else "")


def every_id_acked(out_dir: str) -> tuple[int, int, bool]:
    """(emitted, acked, every emitted id acked): the k-th of the spout's 25 tasks emits k, k + 25, ..."""
    emitted = acked = 0
    whole = True
    for path in glob.glob(os.path.join(out_dir, "acked-*.json")):
        with open(path) as f:
            data = json.load(f)
        ids = set(data["acked"])
        emitted += data["emitted"]
        acked += len(ids)
        if ids:
            first = min(ids) % SPOUT_TASKS
            whole = whole and ids == {first + k * SPOUT_TASKS for k in range(data["emitted"])}
        else:
            whole = whole and data["emitted"] == 0
    return emitted, acked, whole


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=15, help="at most this long in auto mode")
    p.add_argument("--settle", type=float, default=120, help="settled: no action for this long")
    p.add_argument("--warmup", type=float, default=60, help="seconds in recommend mode before auto")
    p.add_argument("--interval", type=float, default=15, help="squall.health.interval.secs")
    p.add_argument("--window", type=float, default=30, help="seconds the rates and use are measured over")
    p.add_argument("--report-backlog", action="store_true",
                   help="the spout tasks report their backlog (ids due and not emitted) as a source's lag")
    args = p.parse_args()
    print("load before:", os.getloadavg())
    with LocalCluster() as cluster:
        out_dir = os.path.join(cluster.home, "out")
        os.mkdir(out_dir)
        argv = ["submit", TOPOLOGY, "--config-property", f"health.out.dir={out_dir}",
                "--config-property", "squall.health.mode=recommend",
                "--config-property", f"squall.health.interval.secs={args.interval}"]
        if args.report_backlog:
            argv += ["--config-property", "health.report.backlog=true"]
        started = time.monotonic()
        if squall(argv) != 0:
            raise SystemExit(f"squall submit {TOPOLOGY} failed")
        print(f"running after {time.monotonic() - started:.0f} s")
        state = cluster.state
        time.sleep(args.warmup)
        before = wait_until(lambda: figures(state, args.window), timeout=60, what="the topology master's metrics")
        print("before:", json.dumps(before))
        if squall(["health", NAME, "--mode", "auto"]) != 0:
            raise SystemExit("squall health --mode auto failed")
        auto_at = last_change = time.monotonic()
        actions: list = []
        shown_at = 0.0
        while time.monotonic() - auto_at < args.minutes * 60 and time.monotonic() - last_change < args.settle:
            time.sleep(5)
            shown = health_view(state, NAME)
            if time.monotonic() - shown_at >= 30:
                shown_at = time.monotonic()
                print(f"{shown_at - auto_at:.0f} s:", symptoms_line(shown))
            done = [f"{d['status']}: {d['summary']}" for d in reversed(shown["history"])
                    if d["status"] not in ("recommended", "blocked")]
            if done != actions:
                actions, last_change = done, time.monotonic()
                print(f"{time.monotonic() - auto_at:.0f} s:", actions[-1])
        time.sleep(args.window)
        after = wait_until(lambda: figures(state, args.window), timeout=60, what="the topology master's metrics")
        print("after:", json.dumps(after))
        print(f"auto mode for {time.monotonic() - auto_at:.0f} s; actions: {json.dumps(actions, indent=1)}")
        with open(os.path.join(out_dir, "rate"), "w") as f:
            f.write("0")
        try:
            wait_until(lambda: (lambda e, a, w: e > 0 and w)(*every_id_acked(out_dir)), timeout=300,
                       what="every emitted id acked")
        except AssertionError as e:
            print(e)
        emitted, acked, whole = every_id_acked(out_dir)
        print(f"ids emitted {emitted}, acked {acked}, every id acked: {whole}")
        cluster.kill(NAME)
    print("load after:", os.getloadavg())


if __name__ == "__main__":
    main()
