"""Prediction error of the capacity report, closed loop, on the local cluster.

For an I/O-bound and a CPU-bound bolt (tests/reports/topologies): run overloaded
at a target rate, report with ``--target-rate``, apply with ``squall update
--from-report``, then measure

- overloaded at parallelism 1: the bolt's throughput as a ratio to the target (below 1: there is
  something to plan; tests/reports/test_closed_loop.py asserts the plan, this measures the rates);
- at the target: the spout's rate and the throughput the plan was predicted to carry (the target:
  parallelism × capacity per instance is above it) against what it carries;
- overloaded at the recommended parallelism (the spout offered twice the
  prediction): the predicted throughput, parallelism × capacity per instance,
  against the throughput measured.

    .venv/bin/python bench/capacity.py
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "reports"))

import closed_loop as cl  # noqa: E402

from squall.testing import wait_until  # noqa: E402

CASES = (cl.Case("io_bound", "wait", 1000.0), cl.Case("cpu_bound", "compute", 400.0))


def squall(*argv: str) -> None:
    from squall.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    if code != 0:
        raise SystemExit(f"squall {' '.join(argv)} exited {code}")


def saturated(loop: cl.Loop, case: cl.Case, rate_file: str, offered: float, settle: float = 3.0,
              window: float = 5.0) -> float:
    """The bolt's throughput while the spout offers ``offered`` tuples/s."""
    with open(rate_file + ".tmp", "w") as f:
        f.write(f"{offered:g}")
    os.replace(rate_file + ".tmp", rate_file)
    start = time.time() + settle
    end = start + window
    wanted = loop.recommendation["recommended_parallelism"]
    wait_until(lambda: cl.covered(loop.run_dir, case.bolt, end) >= wanted, 60, "every task past the window")
    return cl.rate(loop.run_dir, case.bolt, start, end)


def run_case(case: cl.Case, spark: object) -> dict:
    home = tempfile.mkdtemp(prefix="squall-bench-capacity-")
    os.environ["SQUALL_HOME"] = home
    rate_file = os.path.join(home, "rate")
    try:
        loop = cl.overload_and_report(squall, home, spark, case, os.path.join(home, "report"),
                                      f"capacity.rate.file={rate_file}")
        cl.apply_and_measure(squall, loop, case)
        rec = loop.recommendation
        predicted = rec["recommended_parallelism"] * rec["capacity_per_instance"]
        measured = saturated(loop, case, rate_file, 2 * predicted)
    finally:
        squall("kill", case.topology)
        shutil.rmtree(home, ignore_errors=True)
    return {"case": case, "loop": loop, "predicted": predicted, "measured": measured}


def main() -> None:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from squall.reports.session import spark_session

    spark = spark_session("local[2]", app_name="bench-capacity", driver_memory="1g")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    try:
        results = [run_case(case, spark) for case in CASES]
    finally:
        spark.stop()
    print(f"capacity report, closed loop ({os.cpu_count()} cores)")
    print("| bolt | basis | overloaded at 1 (of target) | recommended | capacity/instance | target "
          "| spout at target | carried at target | error | predicted at recommended | measured overloaded | error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        case, loop = r["case"], r["loop"]
        rec = loop.recommendation
        print(f"| {case.topology}.{case.bolt} | {rec['capacity_basis']} | {loop.before:,.0f}/s "
              f"({loop.before / case.target:.2f}) | {rec['recommended_parallelism']} "
              f"| {rec['capacity_per_instance']:,.0f}/s | {case.target:,.0f}/s "
              f"| {loop.spout_after:,.0f}/s ({loop.spout_after / case.target:.2f}) | {loop.after:,.0f}/s | {100 * (loop.after - case.target) / case.target:+.1f}% "
              f"| {r['predicted']:,.0f}/s | {r['measured']:,.0f}/s "
              f"| {100 * (r['measured'] - r['predicted']) / r['predicted']:+.1f}% |")


if __name__ == "__main__":
    main()
