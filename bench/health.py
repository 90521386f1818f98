"""The health manager's done-when run (issue 27), with real processes on the local cluster.

A spout of numbered ids (at least once) whose rate steps LOW -> HIGH -> LOW ids/s in front of an I/O-bound
bolt (2 ms a tuple, parallelism 1): tests/health/topologies/health_paced.py, its rate stepped through the
file it watches. Run once per mode (``--modes auto recommend``); prints, per mode:

- time to recover: seconds from the rise until the bolt carries >= 90 % of the input (over the last
  ``--window`` seconds), or "never";
- the actions taken (decisions carried out) and those recommended;
- containers, parallelism, cpu and ram requested and used, before the rise, at the peak and at the end;
- whether every id the spout emitted was acked.

    .venv/bin/python bench/health.py [--low 500 --high 3000 --phase-secs 120 300 240 --interval 15]

Figures go in bench/RESULTS.md ("Health manager"); the run's load (uptime) with them.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import time
from typing import Optional

from squall.cli import main as squall
from squall.health.view import health_view
from squall.runtime.client import TMasterUnreachable, query_metrics
from squall.state import Kind, StateManager
from squall.testing import LocalCluster, wait_until

TOPOLOGY = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "health", "topologies",
                        "health_paced.py")
NAME = "paced"


def resources(state: StateManager, carried: Optional[dict]) -> dict:
    """Containers, the bolt's parallelism, cpu/ram requested (the packing plan's containers) and used (the
    processes' cpu and rss over the last window)."""
    plan = state.get(Kind.PACKING_PLAN, NAME)
    used_cpu = used_ram = None
    if carried is not None:
        tasks = carried["tasks"].values()
        used_cpu = round(sum((t["cpu_percent"] or 0.0) for t in tasks) / 100, 2)
        used_ram = round(sum((t["rss_mb"] or 0.0) for t in tasks))
    return {"containers": len(plan.containers),
            "sink_parallelism": sum(1 for c in plan.containers for i in c.instances if i.id.component == "sink"),
            "cpu_requested": round(sum(c.resources.cpu for c in plan.containers), 2),
            "ram_requested_mb": sum(c.resources.ram_mb for c in plan.containers),
            "cpu_used": used_cpu, "ram_used_mb": used_ram}


def rates(state: StateManager, window: float) -> Optional[dict]:
    try:
        return query_metrics(state, NAME, window_secs=window)
    except TMasterUnreachable:
        return None


def emitted_and_acked(out_dir: str) -> tuple[int, set]:
    emitted, acked = 0, set()
    for path in glob.glob(os.path.join(out_dir, "acked-*.json")):
        with open(path) as f:
            data = json.load(f)
        emitted += data["emitted"]
        acked |= set(data["acked"])
    return emitted, acked


def drained(out_dir: str) -> tuple[int, set]:
    """Stop the spout and wait (5 minutes at most) until every id it emitted is acked: ``emitted_and_acked``."""
    set_rate(out_dir, 0)
    try:
        wait_until(lambda: (lambda e, a: e > 0 and len(a) >= e)(*emitted_and_acked(out_dir)), timeout=300,
                   what="every emitted id acked")
    except AssertionError as e:
        print(e)
    return emitted_and_acked(out_dir)


def decisions(state: StateManager) -> tuple[list, list]:
    """``(actions taken, with what became of each; recommendations)``, oldest first."""
    history = list(reversed(health_view(state, NAME)["history"]))
    return ([f"{d['status']}: {d['summary']}" + (f" [{d['reason']}]" if d.get("reason") else "")
             for d in history if d["status"] not in ("recommended", "blocked")],
            [d["summary"] for d in history if d["status"] == "recommended"])


def set_file(out_dir: str, name: str, value: float) -> None:
    """Write ``value`` to the file ``name`` that health_paced.py's tasks watch in ``out_dir``, whole (a task
    never reads half of it)."""
    with open(os.path.join(out_dir, name + ".tmp"), "w") as f:
        f.write(str(value))
    os.replace(os.path.join(out_dir, name + ".tmp"), os.path.join(out_dir, name))


def set_rate(out_dir: str, rate: float) -> None:
    """The spout's ids per second from now on."""
    set_file(out_dir, "rate", rate)


def submit(props: dict) -> None:
    """``squall submit`` of health_paced.py with ``props`` as config properties."""
    argv = ["submit", TOPOLOGY]
    for key, value in props.items():
        argv += ["--config-property", f"{key}={value}"]
    if squall(argv) != 0:
        raise SystemExit(f"squall submit {TOPOLOGY} failed")


def run(mode: str, args: argparse.Namespace) -> dict:
    with LocalCluster() as cluster:
        out_dir = os.path.join(cluster.home, "out")
        os.mkdir(out_dir)
        set_rate(out_dir, args.low)
        props = {"health.out.dir": out_dir, "health.ids": 10 ** 9, "health.rate": args.low,
                 "squall.health.mode": mode, "squall.health.interval.secs": args.interval}
        submit(props)
        state = cluster.state
        low1, high, low2 = args.phase_secs
        out: dict = {"mode": mode}
        time.sleep(low1)
        out["before"] = resources(state, rates(state, args.window))
        set_rate(out_dir, args.high)
        rise = time.monotonic()
        recovered = None
        best = (0, 0)  # the most the sink carried over a window, and what the spout emitted then
        peak = out["before"]
        while time.monotonic() - rise < high:
            time.sleep(2)
            m = rates(state, args.window)
            if m is None:
                continue
            now = resources(state, m)
            if now["containers"] >= peak["containers"]:
                peak = now
            offered = args.high
            carried = m["components"].get("sink", {}).get("execute_rate") or 0.0
            emitted = m["components"].get("ids", {}).get("emit_rate") or 0.0
            best = max(best, (round(carried), round(emitted)))
            if recovered is None and time.monotonic() - rise > args.window and carried >= 0.9 * offered:
                recovered = round(time.monotonic() - rise, 1)
        out["recover_secs"] = recovered
        out["high_phase_best_carried_and_emitted_per_sec"] = best
        out["peak"] = peak
        set_rate(out_dir, args.low)
        time.sleep(low2)
        out["after"] = resources(state, rates(state, args.window))
        emitted, acked = drained(out_dir)
        out["emitted"], out["acked"] = emitted, len(acked)
        out["every_id_acked"] = acked == set(range(emitted))
        out["actions"], out["recommended"] = decisions(state)
        cluster.kill(NAME)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--low", type=float, default=500)
    p.add_argument("--high", type=float, default=3000)
    p.add_argument("--phase-secs", type=float, nargs=3, default=[120, 300, 240], metavar=("LOW", "HIGH", "LOW"))
    p.add_argument("--interval", type=float, default=15, help="squall.health.interval.secs")
    p.add_argument("--window", type=float, default=10, help="seconds the carried rate is measured over")
    p.add_argument("--modes", nargs="+", default=["auto", "recommend"])
    args = p.parse_args()
    print(f"load before: {os.getloadavg()}")
    for mode in args.modes:
        result = run(mode, args)
        print(json.dumps(result, indent=2))
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
