"""A capacity plan applied and checked: run overloaded, report, apply the report, measure again.

Shared by tests/reports/test_closed_loop.py (which asserts what the report recommends and that
the update applies it) and bench/capacity.py (which measures the rates and prints the prediction error). ``squall`` is a
callable running one ``squall`` command in the cluster's ``SQUALL_HOME``.
Rates are measured from the metrics files the run writes, as the report reads them.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import time
from dataclasses import dataclass
from typing import Any, Callable

from squall.testing import wait_until

TOPOLOGIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "topologies")
SPOUT = "source"  # the paced spout of every topology here


@dataclass(frozen=True)
class Case:
    topology: str  # file stem in topologies/ and topology name
    bolt: str  # the component under test
    target: float  # tuples/s into the topology (the spout's rate)


@dataclass
class Loop:
    """What one closed loop found."""

    run_dir: str
    report_dir: str
    before: float  # the bolt's tuples/s while overloaded
    paused: float  # when the spouts were deactivated (epoch seconds)
    recommendation: dict  # the bolt's row of the report's recommendations table
    after: float = 0.0  # the bolt's tuples/s at the recommended parallelism, offered the target
    spout_after: float = 0.0


def rows(run_dir: str, component: str) -> list:
    """Every metrics row of ``component``'s instances so far, complete lines only."""
    out = []
    for path in glob.glob(os.path.join(run_dir, "metrics", "*.jsonl")):
        with open(path) as f:
            out += [r for r in (json.loads(line) for line in f if line.endswith("\n"))
                    if r["process"] == "instance" and r["component"] == component]
    return out


def rate(run_dir: str, component: str, start: float, end: float) -> float:
    """Tuples/s of the component between ``start`` and ``end`` (epoch seconds): each row's
    tuples spread evenly over its bucket, the share inside the window counted."""
    tuples = 0.0
    for r in rows(run_dir, component):
        begin = r["ts"] - r["interval_secs"]
        overlap = min(r["ts"], end) - max(begin, start)
        if overlap > 0:
            count = r["execute_count"] if r["process_latency_ms"] is not None else r["emit_count"]
            tuples += count * overlap / r["interval_secs"]
    return tuples / (end - start)


def covered(run_dir: str, component: str, end: float) -> int:
    """How many of the component's tasks have reported up to ``end``."""
    return len({r["task_id"] for r in rows(run_dir, component) if r["ts"] >= end})


def run_dir_of(home: str, topology: str) -> str:
    return sorted(glob.glob(os.path.join(home, "topologies", topology, "*")))[-1]


def snapshot(run_dir: str, until: float, into: str) -> str:
    """A copy of the run's metrics rows up to ``until`` (epoch seconds) and its packing plan, in
    ``into``: what the report reads is the overloaded run, not the rows of its drain, which
    go on being written while Spark reports."""
    os.makedirs(os.path.join(into, "metrics"))
    shutil.copy(os.path.join(run_dir, "packing_plan.json"), into)
    for path in glob.glob(os.path.join(run_dir, "metrics", "*.jsonl")):
        with open(path) as f:
            kept = [line for line in f if line.endswith("\n") and json.loads(line)["ts"] <= until]
        with open(os.path.join(into, "metrics", os.path.basename(path)), "w") as f:
            f.writelines(kept)
    return into


def overload_and_report(squall: Callable[..., Any], home: str, spark: Any, case: Case, out: str,
                        *props: str) -> Loop:
    """Submit ``case`` offered its target, wait for an overloaded run (the bolt's first row
    counts its start; three more are its load, so that their median is not the lowest),
    deactivate it, report on its rows up to then with ``--target-rate``. The overloaded bolt
    has a backlog in the stream manager: it works it off while Spark reports, so that what
    is measured after the update is what the new plan carries, not what an old backlog adds."""
    from squall.reports.capacity_report import CapacityOptions, capacity_report
    from squall.reports.inputs import parse_targets
    from squall.reports.output import write_report

    file = os.path.join(TOPOLOGIES, f"{case.topology}.py")
    argv = ["submit", file, "--config-property", f"capacity.rate={case.target:g}"]
    for p in props:
        argv += ["--config-property", p]
    squall(*argv)
    run_dir = run_dir_of(home, case.topology)
    wait_until(lambda: len(rows(run_dir, case.bolt)) >= 4, 60, f"four metrics rows of {case.bolt}")
    ends = sorted(r["ts"] for r in rows(run_dir, case.bolt))
    before = rate(run_dir, case.bolt, ends[0], ends[-1])
    paused = time.time()
    squall("deactivate", case.topology)
    overloaded = snapshot(run_dir, paused, out + ".run")
    report = capacity_report(CapacityOptions(metrics=overloaded, targets=parse_targets([f"{case.target:g}"]),
                                             topology_file=file, charts=False), spark)
    write_report(report, out)
    recs = {t.name: t for t in report.tables}["recommendations"].rows
    return Loop(run_dir, out, before, paused, next(r for r in recs if r["component"] == case.bolt))


def apply(squall: Callable[..., Any], loop: Loop, case: Case, timeout: float = 60.0) -> None:
    """Once the bolt has worked off its backlog, ``squall update --from-report`` and activate."""
    wait_until(lambda: any(r["ts"] > loop.paused and r["execute_count"] == 0 for r in rows(loop.run_dir, case.bolt)),
               timeout, f"{case.bolt} to work off its backlog")
    squall("update", case.topology, "--from-report", loop.report_dir)
    squall("activate", case.topology)


def apply_and_measure(squall: Callable[..., Any], loop: Loop, case: Case, settle: float = 2.0,
                      window: float = 5.0, timeout: float = 60.0) -> Loop:
    """``apply``, then measure the bolt and the spout over ``window`` seconds from ``settle``
    seconds after, once every task of the bolt has reported past the window (bench/capacity.py)."""
    apply(squall, loop, case, timeout)
    start = time.time() + settle
    end = start + window
    wanted = loop.recommendation["recommended_parallelism"]
    wait_until(lambda: covered(loop.run_dir, case.bolt, end) >= wanted, timeout,
               f"all {wanted} tasks of {case.bolt} to report past the measuring window")
    loop.after = rate(loop.run_dir, case.bolt, start, end)
    loop.spout_after = rate(loop.run_dir, SPOUT, start, end)
    return loop
