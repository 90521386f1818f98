"""``squall report capacity|packing``.

Imported on every ``squall`` invocation: nothing heavy (pyspark, pandas,
matplotlib) is imported here at module level, only inside the commands.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
from typing import Any

from squall.commandline import add_config_path_option, add_json_option, print_json


def register(subparsers: Any) -> None:
    report = subparsers.add_parser("report", help="capacity-planning and packing-policy reports (PySpark)")
    sub = report.add_subparsers(dest="report_command", metavar="REPORT")
    sub.required = True

    cap = sub.add_parser("capacity", help="throughput, provisioning, skew and recommendations from metrics files")
    cap.add_argument("--metrics", required=True, metavar="PATH",
                     help="metrics files: a run folder, its metrics/ folder, a topology folder, files, a glob or a URI")
    cap.add_argument("--topology", metavar="NAME", help="topology to report on (needed when PATH holds several)")
    cap.add_argument("--run", metavar="RUN_ID", help="run to report on (default: the latest)")
    cap.add_argument("--target-rate", action="append", default=[], metavar="[COMPONENT=]TUPLES_PER_S",
                     help="tuples/s into the topology, or for one component (repeatable); default: observed peak")
    cap.add_argument("--headroom", type=float, default=0.2, metavar="FRACTION",
                     help="spare throughput over the target (default 0.2 = 20%%)")
    cap.add_argument("--margin", type=float, default=0.2, metavar="FRACTION",
                     help="spare cpu/ram over the observed p95 (default 0.2)")
    cap.add_argument("--topology-file", metavar="FILE",
                     help="the topology's .py file: exact spout/bolt kinds and groupings, repacked as written")
    cap.add_argument("--packing-plan", metavar="FILE", help="packing plan JSON (default: the run's packing_plan.json)")
    cap.add_argument("--host-cores", type=float, metavar="N",
                     help="cores of each host the run used (default: this machine's, for a run on it)")
    cap.add_argument("--skip-malformed", action="store_true",
                     help="report without malformed rows (they are still counted and listed)")
    _common(cap)
    cap.set_defaults(func=cmd_capacity)

    pack = sub.add_parser("packing", help="every packing algorithm × granularity over many topologies")
    pack.add_argument("--topologies", required=True, nargs="+", metavar="FILES_OR_DIR",
                      help="topology files, folders of them, or globs")
    _common(pack)
    pack.set_defaults(func=cmd_packing)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster-view", metavar="FILE", help="cluster view JSON (see docs/reports.md)")
    parser.add_argument("--master", metavar="M", help="Spark master (default local[*])")
    parser.add_argument("--out", metavar="DIR", help="report folder (default ./squall-reports/<kind>-<name>-<time>)")
    add_config_path_option(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-charts", action="store_true", help="skip the charts (faster)")
    add_json_option(parser)


def _check_fraction(name: str, value: float) -> None:
    from squall.errors import SquallError

    if not 0 <= value <= 10:
        raise SquallError(f"--{name} {value:g}: expected a fraction between 0 and 10 (0.2 = 20%)")


def cmd_capacity(args: argparse.Namespace) -> int:
    from squall.errors import SquallError
    from squall.reports.capacity_report import CapacityOptions, capacity_report
    from squall.reports.inputs import find_metrics, load_cluster_view, parse_targets
    from squall.reports.recommend import Policy

    _check_fraction("headroom", args.headroom)
    if args.host_cores is not None and not args.host_cores > 0:
        raise SquallError(f"--host-cores {args.host_cores:g}: expected a number of cores > 0")
    _check_fraction("margin", args.margin)
    find_metrics(args.metrics)  # fail fast, before Spark starts
    if args.cluster_view:
        load_cluster_view(args.cluster_view)
    options = CapacityOptions(
        metrics=args.metrics, topology=args.topology, run_id=args.run, targets=parse_targets(args.target_rate),
        policy=Policy(headroom=args.headroom, margin=args.margin), topology_file=args.topology_file,
        packing_plan=args.packing_plan, cluster_view=args.cluster_view, config_path=args.config_path,
        skip_malformed=args.skip_malformed, charts=not args.no_charts, host_cores=args.host_cores,
    )
    return _run(args, "capacity", lambda spark, progress: capacity_report(options, spark, progress))


def cmd_packing(args: argparse.Namespace) -> int:
    from squall.reports.inputs import load_cluster_view
    from squall.reports.packing_report import PackingOptions, find_topology_files, packing_report

    find_topology_files(tuple(args.topologies))  # fail fast, before Spark starts
    if args.cluster_view:
        load_cluster_view(args.cluster_view)
    options = PackingOptions(topologies=tuple(args.topologies), cluster_view=args.cluster_view,
                             config_path=args.config_path, charts=not args.no_charts)
    return _run(args, "packing", lambda spark, progress: packing_report(options, spark, progress))


def _run(args: argparse.Namespace, kind: str, build: Any) -> int:
    from squall.reports.output import write_report
    from squall.reports.progress import SparkProgress
    from squall.reports.session import spark_session

    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()  # e.g. a test's session: reuse it, leave it running
    spark = existing if existing is not None and args.master is None else spark_session(
        args.master, app_name=f"squall-report-{kind}")
    try:
        with SparkProgress(spark, enabled=not args.no_progress) as progress:
            report = build(spark, progress)
    finally:
        if spark is not existing:
            spark.stop()
    out = args.out or default_out(kind, report)
    paths = write_report(report, out)
    if args.json:
        print_json({"kind": kind, "title": report.title, "summary": report.summary, **paths})
        return 0
    print(report.title)
    for line in report.summary:
        print(line)
    print(f"report: {paths['html']}")
    print(f"tables: {paths['tables']} (CSV and JSON)")
    return 0


def default_out(kind: str, report: Any) -> str:
    name = dict(report.facts).get("topology", "") if kind == "capacity" else "topologies"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return os.path.join(os.getcwd(), "squall-reports", f"{kind}-{name}-{stamp}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: squall report ...")
