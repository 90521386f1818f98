"""Benchmark: the capacity job over 1M and 10M synthetic metric rows, Spark vs pandas.

Both sides do the same work from the same JSON Lines files: parse, validate
every row against docs/metrics.md, and aggregate per instance (rate, cpu, rss
percentiles), per component and bucket (summed throughput), and per component
(throughput percentiles). The figure that matters is the ratio
pandas time / Spark time in the same run. Spark's session start-up is timed
separately and left out of its rows/s. pandas runs in a child process so its
memory is returned between sizes.

    .venv/bin/python bench/reports.py [--rows 1000000 10000000] [--dir /tmp/squall-bench-reports]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

import psutil

from squall.reports import synthetic


def generate(rows: int, root: str) -> tuple:
    """Write (or reuse) a run of about ``rows`` rows; returns (run_dir, rows, bytes, seconds)."""
    run = synthetic.benchmark_run(rows)
    run_dir = os.path.join(root, str(rows), run.topology, run.run_id)
    marker = os.path.join(run_dir, "done.json")
    if os.path.exists(marker):
        with open(marker) as f:
            info = json.load(f)
        return run_dir, info["rows"], info["bytes"], None
    start = time.perf_counter()
    with multiprocessing.Pool(min(run.containers, os.cpu_count() or 1)) as pool:
        pool.starmap(_write_container, [(root, rows, c) for c in range(1, run.containers + 1)])
    with open(os.path.join(run_dir, "packing_plan.json"), "w") as f:
        json.dump(synthetic.packing_plan(run), f)
    seconds = time.perf_counter() - start
    total = run.buckets * synthetic.rows_per_bucket(run)
    size = sum(os.path.getsize(os.path.join(run_dir, "metrics", n)) for n in os.listdir(os.path.join(run_dir, "metrics")))
    with open(marker, "w") as f:
        json.dump({"rows": total, "bytes": size}, f)
    return run_dir, total, size, seconds


def _write_container(root: str, rows: int, container: int) -> None:
    run = synthetic.benchmark_run(rows)
    folder = os.path.join(root, str(rows), run.topology, run.run_id, "metrics")
    os.makedirs(folder, exist_ok=True)
    dumps = json.dumps
    with open(os.path.join(folder, f"container-{container}.jsonl"), "w", buffering=1 << 20) as f:
        for row in synthetic.rows(run, container):
            f.write(dumps(row))
            f.write("\n")


def spark_job(spark, run_dir: str) -> dict:
    from squall.reports.capacity_report import CapacityOptions, capacity_report

    start = time.perf_counter()
    report = capacity_report(CapacityOptions(metrics=run_dir, charts=False), spark)
    seconds = time.perf_counter() - start
    recs = {r["component"]: r["recommended_parallelism"] for r in report.tables[1].rows}
    return {"seconds": seconds, "recommendations": recs}


PANDAS_CODE = r"""
import glob, json, sys, time
import numpy as np
import pandas as pd
from squall.reports.schema import FIELDS, PROCESSES

run_dir = sys.argv[1]
start = time.perf_counter()
frames = [pd.read_json(p, lines=True, dtype=False) for p in sorted(glob.glob(run_dir + "/metrics/*.jsonl"))]
df = pd.concat(frames, ignore_index=True)
bad = pd.Series(False, index=df.index)
for f in FIELDS:
    if f.name not in df:
        bad[:] = True
        continue
    col = df[f.name]
    if not f.nullable:
        bad |= col.isna()
    if f.type in ("int", "float"):
        num = pd.to_numeric(col, errors="coerce")
        bad |= col.notna() & num.isna()
        if f.positive:
            bad |= num <= 0
        if f.min is not None:
            bad |= num < f.min
bad |= ~df["process"].isin(PROCESSES)
bad |= (df["process"] == "instance") & df["task_id"].isna()
df = df[~bad]
spouts = df[(df.process == "instance")].groupby("component")["process_latency_ms"].apply(lambda s: s.isna().all())
spouts = set(spouts[spouts].index)
tuples = np.where(df.component.isin(spouts), df.emit_count, df.execute_count)
df = df.assign(tuples=tuples, rate=tuples / df.interval_secs,
               bucket=((df.ts - df.ts.min()) / df.interval_secs).round().astype("int64"))
q = lambda p: (lambda s: s.quantile(p, interpolation="lower"))
inst = df.groupby(["process", "component", "container", "task_id"], dropna=False).agg(
    rate_p50=("rate", q(0.5)), rate_p95=("rate", q(0.95)), rate_max=("rate", "max"),
    cpu_p50=("cpu_percent", q(0.5)), cpu_p95=("cpu_percent", q(0.95)), cpu_max=("cpu_percent", "max"),
    rss_p50=("rss_mb", q(0.5)), rss_p95=("rss_mb", q(0.95)), rss_max=("rss_mb", "max"),
    tuples=("tuples", "sum"), seconds=("interval_secs", "sum"), backpressure=("backpressure_ms", "sum"))
comp = df.groupby("component").agg(
    rate_p50=("rate", q(0.5)), rate_p95=("rate", q(0.95)), cpu_p95=("cpu_percent", q(0.95)),
    rss_p95=("rss_mb", q(0.95)))
per_bucket = df.groupby(["component", "bucket"]).agg(tuples=("tuples", "sum"), interval=("interval_secs", "max"))
per_bucket["rate"] = per_bucket.tuples / per_bucket.interval
totals = per_bucket.groupby("component")["rate"].agg(p50=q(0.5), p95=q(0.95), max="max", mean="mean")
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "rows": int(len(df)), "instances": int(len(inst)),
                  "work_p95": float(totals.loc["split", "p95"])}))
"""


def pandas_job(run_dir: str, timeout: float) -> dict:
    try:
        proc = subprocess.run([sys.executable, "-c", PANDAS_CODE, run_dir], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--dir", default="/tmp/squall-bench-reports")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--pandas-timeout", type=float, default=1800)
    parser.add_argument("--pandas-memory-factor", type=float, default=4.0,
                        help="skip pandas when JSON size × this exceeds available memory (it needs ~3-4×)")
    args = parser.parse_args()

    from squall.reports.session import spark_session

    results = []
    for rows in args.rows:
        run_dir, total, size, gen_seconds = generate(rows, args.dir)
        gen = "reused" if gen_seconds is None else f"{gen_seconds:.1f} s"
        print(f"{total:,} rows, {size / 1e9:.2f} GB of JSON Lines in {run_dir} (generated: {gen})", flush=True)
        results.append((total, size, run_dir))

    start = time.perf_counter()
    spark = spark_session(args.master, app_name="squall-bench-reports")
    spark.range(1).count()
    startup = time.perf_counter() - start
    print(f"Spark session ({args.master}) up in {startup:.1f} s (not counted below)", flush=True)
    spark_job(spark, results[0][2])  # warm-up: JIT and code generation, on the smallest input

    print()
    print("| rows | JSON size | Spark s | Spark rows/s | pandas s | pandas rows/s | pandas / Spark |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for total, size, run_dir in results:
        s = spark_job(spark, run_dir)
        print(f"  (Spark: {total:,} rows in {s['seconds']:.1f} s)", file=sys.stderr, flush=True)
        available = psutil.virtual_memory().available
        if size * args.pandas_memory_factor > available:
            p = {"error": f"skipped: needs ~{size * args.pandas_memory_factor / 1e9:.0f} GB, "
                          f"{available / 1e9:.0f} GB available"}
        else:
            p = pandas_job(run_dir, args.pandas_timeout)
        if "error" in p:
            pandas_cells = f"{p['error']} | – | –"
        else:
            pandas_cells = f"{p['seconds']:.1f} | {total / p['seconds']:,.0f} | {p['seconds'] / s['seconds']:.2f}×"
        print(f"| {total:,} | {size / 1e9:.2f} GB | {s['seconds']:.1f} | {total / s['seconds']:,.0f} | {pandas_cells} |",
              flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
