"""The Spark side of the capacity report: read, validate and aggregate metrics rows.

Everything here returns small plain-Python results (lists of dicts); the
analysis in ``capacity`` never touches Spark.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence

from squall.errors import SquallError
from squall.metrics_schema import (
    CHECKPOINT_ALIGN_MS,
    CHECKPOINT_BYTES,
    CHECKPOINT_SAVE_MS,
    CHECKPOINT_SAVES,
    CHECKPOINT_STALE_FRAMES,
    SOURCE_PARTITIONS,
)
from squall.reports.inputs import MetricsSource
from squall.reports.schema import CORRUPT, FIELD_NAMES, reason_column, spark_schema

if TYPE_CHECKING:  # pyspark is an extra (squall[reports]): imported where a session starts
    from pyspark.sql import Column, DataFrame, Row, SparkSession

PLOT_POINTS = 200  # time-series points per component kept for the charts

# An instance's checkpoint figures in its row's ``user`` (runtime/instance/checkpointing.py), per bucket.
CHECKPOINT_KEYS = (
    (CHECKPOINT_SAVES, "_ck_saves"),  # checkpoints it saved
    (CHECKPOINT_SAVE_MS, "_ck_save_ms"),  # summed over those saves
    (CHECKPOINT_ALIGN_MS, "_ck_align_ms"),  # the longest alignment among them
    (CHECKPOINT_BYTES, "_ck_bytes"),  # summed over those saves
    (CHECKPOINT_STALE_FRAMES, "_ck_stale"),  # frames of another epoch dropped
)
# The topology master's ``user.checkpoints`` (runtime/checkpoints.py ``checkpoint_figures``): counters of
# its term of leadership, and the last complete checkpoint's figures.
MASTER_CHECKPOINTS = ("mode STRING, interval_secs DOUBLE, completed LONG, failed LONG, restores LONG, "
                      "last_restore_ms DOUBLE, last_id LONG, duration_ms DOUBLE, bytes LONG, align_ms DOUBLE")
MASTER_COUNTERS = ("completed", "failed", "restores")
# A source spout's partitions in its row's ``user`` (squall.metrics.SourcePartitions), per bucket.
SOURCE_PARTITIONS_SCHEMA = "MAP<STRING, STRUCT<lag: LONG, records_per_sec: DOUBLE, bytes_per_sec: DOUBLE>>"


@dataclass(frozen=True)
class Thresholds:
    """When a bucket of an instance counts as saturated (Dhalion's symptoms, docs/reports.md)."""

    busy: float = 0.9  # share of the bucket spent in process() (rate × execute latency)
    cpu_allocation: float = 0.9  # cpu used / cpu allocated


@dataclass
class Validation:
    """What validation found in all the files read."""

    lines: int
    malformed: int
    reasons: list  # {"reason", "rows", "example_file", "example_line"}
    runs: list  # {"topology", "run_id", "rows", "first_ts", "last_ts"}


@dataclass
class Aggregates:
    """The aggregated metrics of one topology run."""

    topology: str
    run_id: str
    rows: int
    first_ts: float
    last_ts: float
    interval_secs: float
    kinds: dict  # component -> "spout" | "bolt" | "daemon"
    instances: list = field(default_factory=list)
    components: list = field(default_factory=list)
    series: list = field(default_factory=list)
    hosts: list = field(default_factory=list)  # {"host", "cores_used_mean"}: every process of the run on it


def read_metrics(spark: "SparkSession", source: MetricsSource) -> "DataFrame":
    """Parse every non-blank line; keep each row's malformation reason (null = valid).

    The result is persisted: validation and every aggregation reuse one parse.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    reader = spark.read
    if source.is_uri:
        reader = reader.option("recursiveFileLookup", "true").option("pathGlobFilter", "*.jsonl")
    try:
        raw = reader.text(list(source.paths))
    except Exception as e:  # AnalysisException for a path Spark cannot list
        raise SquallError(f"cannot read metrics {', '.join(source.paths)}: {str(e).splitlines()[0]}") from e
    raw = raw.where(F.trim(F.col("value")) != "").withColumn("_file", F.input_file_name())
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
    parsed = raw.select(
        "_file",
        "value",
        F.from_json("value", spark_schema(), options).alias("p"),
        F.json_object_keys("value").alias("k"),
    )
    parsed = parsed.withColumn("reason", reason_column("p", "k"))
    columns = [F.col(f"p.{n}").alias(n) for n in FIELD_NAMES if n != "user"]
    user = F.col("p.user")  # string -> string: a nested object is its JSON text
    checkpoint_columns = [user["checkpoints"].alias("_checkpoints"), user["leading"].alias("_leading")] + [
        user[key].cast("double").alias(column) for key, column in CHECKPOINT_KEYS]
    checkpoint_columns.append(user[SOURCE_PARTITIONS].alias("_sources"))
    flat = parsed.select(
        "reason",
        F.when(F.col("reason").isNotNull(), F.col("_file")).alias("_file"),
        F.when(F.col("reason").isNotNull(), F.substring("value", 1, 200)).alias("_line"),
        *columns,
        *checkpoint_columns,
    )
    return flat.persist(StorageLevel.MEMORY_AND_DISK)


def validate(flat: "DataFrame") -> Validation:
    """Count rows by malformation reason and list the (topology, run) pairs found."""
    from pyspark.sql import functions as F

    groups = (
        flat.groupBy("reason", "topology", "run_id")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.min("ts").alias("first_ts"),
            F.max("ts").alias("last_ts"),
            F.first("_file", ignorenulls=True).alias("example_file"),
            F.first("_line", ignorenulls=True).alias("example_line"),
        )
        .collect()
    )
    lines = sum(g["rows"] for g in groups)
    reasons: dict = {}
    runs = []
    for g in groups:
        if g["reason"] is None:
            runs.append(
                {"topology": g["topology"], "run_id": g["run_id"], "rows": g["rows"],
                 "first_ts": g["first_ts"], "last_ts": g["last_ts"]}
            )
            continue
        entry = reasons.setdefault(
            g["reason"], {"reason": g["reason"], "rows": 0, "example_file": g["example_file"],
                          "example_line": g["example_line"]}
        )
        entry["rows"] += g["rows"]
    malformed = sum(r["rows"] for r in reasons.values())
    ordered = sorted(reasons.values(), key=lambda r: (-r["rows"], r["reason"]))
    runs.sort(key=lambda r: (r["topology"], r["run_id"]))
    return Validation(lines=lines, malformed=malformed, reasons=ordered, runs=runs)


def choose_run(validation: Validation, topology: Optional[str], run_id: Optional[str], where: str) -> dict:
    """The (topology, run) to report on: the one asked for, or the only/latest one."""
    if not validation.runs:
        raise SquallError(f"no valid metrics rows in {where} ({validation.malformed} malformed)")
    names = sorted({r["topology"] for r in validation.runs})
    if topology is None:
        if len(names) > 1:
            raise SquallError(f"metrics in {where} are for {len(names)} topologies ({', '.join(names)}): "
                              "choose one with --topology")
        topology = names[0]
    runs = [r for r in validation.runs if r["topology"] == topology]
    if not runs:
        raise SquallError(f"no metrics for topology {topology!r} in {where} (found: {', '.join(names)})")
    if run_id is not None:
        runs = [r for r in runs if r["run_id"] == run_id]
        if not runs:
            raise SquallError(f"no metrics for run {run_id!r} of topology {topology!r} in {where}")
    return max(runs, key=lambda r: r["run_id"])


def aggregate(flat: "DataFrame", run: dict, thresholds: Thresholds, spouts_hint: Optional[Sequence[str]] = None) -> Aggregates:
    """Per instance, per component, over time and per host, for one run. Four small collects."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = flat.where(
        F.col("reason").isNull() & (F.col("topology") == run["topology"]) & (F.col("run_id") == run["run_id"])
    )
    kinds = _kinds(rows, spouts_hint)
    spouts = [c for c, k in kinds.items() if k == "spout"]
    interval = rows.agg(F.expr("percentile_approx(interval_secs, 0.5)")).first()[0]
    t0 = run["first_ts"] - interval

    count = F.when(F.col("component").isin(*spouts), F.col("emit_count")).otherwise(F.col("execute_count"))
    allocation = F.coalesce(F.col("cpu_requested"), F.lit(1.0))  # an instance is one thread: one core at most
    busy = F.col("execute_latency_ms") * F.col("execute_count") / 1000.0 / F.col("interval_secs")
    saturated = (F.coalesce(busy, F.lit(0.0)) >= thresholds.busy) | (
        F.col("cpu_percent") / 100.0 >= thresholds.cpu_allocation * allocation)
    # A process's first row measures its cpu since it started (imports, initialize): never a load figure.
    first = F.row_number().over(Window.partitionBy("process", "component", "container", "task_id").orderBy("ts"))
    rows = rows.select(
        "*",
        count.alias("tuples"),
        (count / F.col("interval_secs")).alias("rate"),
        busy.alias("busy"),
        saturated.alias("saturated"),
        ((count > 0) & (first > 1)).alias("loaded"),
        F.round((F.col("ts") - F.lit(t0)) / F.lit(interval)).cast("long").alias("bucket"),
    )
    loaded = F.col("loaded")

    def when_loaded(column: "Column") -> "Column":
        return F.when(loaded, column)

    def stats(*keys: str) -> list:
        return (
            rows.groupBy(*keys)
            .agg(
                F.count(F.lit(1)).alias("rows"),
                F.first("host").alias("host"),
                F.sum("tuples").alias("tuples"),
                F.sum("emit_count").alias("emitted"),
                F.sum("interval_secs").alias("seconds"),
                F.expr("percentile_approx(rate, array(0.5, 0.95))").alias("rate_q"),
                F.max("rate").alias("rate_max"),
                F.avg("execute_latency_ms").alias("latency_mean_ms"),
                F.expr("percentile_approx(execute_latency_ms, 0.95)").alias("latency_p95_ms"),
                F.expr("percentile_approx(cpu_percent, array(0.5, 0.95))").alias("cpu_q"),
                F.max("cpu_percent").alias("cpu_max"),
                F.expr("percentile_approx(rss_mb, array(0.5, 0.95))").alias("rss_q"),
                F.max("rss_mb").alias("rss_max"),
                F.max("cpu_requested").alias("cpu_requested"),
                F.max("ram_requested_mb").alias("ram_requested_mb"),
                F.sum("backpressure_ms").alias("backpressure_ms"),
                F.max("queue_depth").alias("queue_depth_max"),
                F.sum(F.col("saturated").cast("long")).alias("saturated_rows"),
                F.sum(when_loaded(F.col("tuples"))).alias("load_tuples"),
                F.sum(when_loaded(F.col("interval_secs"))).alias("load_seconds"),
                F.sum(when_loaded(F.col("execute_latency_ms") * F.col("execute_count") / 1000.0)).alias("load_exec_secs"),
                F.sum(when_loaded(F.col("execute_count"))).alias("load_executed"),
                F.sum(when_loaded(F.col("cpu_percent") / 100.0 * F.col("interval_secs"))).alias("load_cpu_secs"),
                F.sum(when_loaded(F.col("process_latency_ms") * F.col("execute_count") / 1000.0)).alias("load_held_secs"),
                F.expr("percentile_approx(CASE WHEN loaded THEN busy END, 0.5)").alias("busy_p50"),
                F.expr("percentile_approx(CASE WHEN loaded THEN cpu_percent END, 0.5)").alias("load_cpu_p50"),
                F.expr(f"percentile_approx(CASE WHEN loaded AND busy >= {thresholds.busy} THEN cpu_percent END, 0.5)")
                .alias("busy_cpu_p50"),
                F.sum("fail_count").alias("fails"),
                F.countDistinct("task_id").alias("tasks"),
            )
            .collect()
        )

    instances = [_flatten(r) for r in stats("process", "component", "container", "task_id")]
    components = {r["component"]: _flatten(r) for r in stats("component")}

    per_bucket = rows.groupBy("component", "bucket").agg(
        (F.sum("tuples") / F.max("interval_secs")).alias("rate"),
        (F.sum("cpu_percent") / 100.0).alias("cpu_cores"),
        F.sum("rss_mb").alias("rss_mb"),
    )
    totals = per_bucket.groupBy("component").agg(
        F.expr("percentile_approx(rate, array(0.5, 0.95))").alias("q"),
        F.max("rate").alias("max"),
        F.avg("rate").alias("mean"),
        F.count(F.lit(1)).alias("buckets"),
    ).collect()
    for t in totals:
        c = components[t["component"]]
        c["throughput_p50"], c["throughput_p95"] = t["q"]
        c["throughput_max"], c["throughput_mean"], c["buckets"] = t["max"], t["mean"], t["buckets"]

    span = max(1, int(round((run["last_ts"] - t0) / interval)))
    width = max(1, -(-span // PLOT_POINTS))
    series = (
        per_bucket.groupBy("component", (F.col("bucket") / width).cast("long").alias("bin"))
        .agg(F.avg("rate").alias("rate"), F.avg("cpu_cores").alias("cpu_cores"), F.avg("rss_mb").alias("rss_mb"))
        .orderBy("component", "bin")
        .collect()
    )
    points = [
        {"component": s["component"], "t_secs": (s["bin"] * width + width / 2.0) * interval,
         "rate": s["rate"], "cpu_cores": s["cpu_cores"], "rss_mb": s["rss_mb"]}
        for s in series
    ]
    hosts = rows.groupBy("host").agg(
        F.sum(F.col("cpu_percent") / 100.0 * F.col("interval_secs")).alias("cpu_secs"),
        F.min(F.col("ts") - F.col("interval_secs")).alias("start"),
        F.max("ts").alias("end"),
    ).collect()
    return Aggregates(
        topology=run["topology"], run_id=run["run_id"], rows=run["rows"], first_ts=run["first_ts"],
        last_ts=run["last_ts"], interval_secs=interval, kinds=kinds, instances=instances,
        components=list(components.values()), series=points,
        hosts=[{"host": h["host"], "cores_used_mean": h["cpu_secs"] / max(h["end"] - h["start"], 1e-9)}
               for h in hosts],
    )


@dataclass
class CheckpointAggregates:
    """The checkpoint figures of one run of a topology that checkpoints."""

    tasks: list  # per task: component, task_id, rows, saves, save_ms, align_ms_max, bytes, stale_frames
    master: Optional[dict] = None  # topology-wide, from the leading topology master's rows (None: no such rows)


def aggregate_checkpoints(flat: "DataFrame", run: dict) -> Optional[CheckpointAggregates]:
    """Per task and topology-wide checkpoint figures of one run; None when it did not checkpoint
    (no instance row carries ``__checkpoint_saves``, no topology master row ``checkpoints``)."""
    from pyspark.sql import functions as F

    rows = flat.where(
        F.col("reason").isNull() & (F.col("topology") == run["topology"]) & (F.col("run_id") == run["run_id"])
    )
    tasks = (
        rows.where((F.col("process") == "instance") & F.col("_ck_saves").isNotNull())
        .groupBy("component", "task_id")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.sum("_ck_saves").alias("saves"),
            F.sum("_ck_save_ms").alias("save_ms"),
            F.max("_ck_align_ms").alias("align_ms_max"),
            F.sum("_ck_bytes").alias("bytes"),
            F.sum("_ck_stale").alias("stale_frames"),
        )
        .collect()
    )
    master = _master_checkpoints(rows)
    if not tasks and master is None:
        return None
    return CheckpointAggregates(sorted((t.asDict() for t in tasks), key=lambda t: (t["component"], t["task_id"])),
                                master)


def _master_checkpoints(rows: Any) -> Optional[dict]:
    """The leading topology master's figures over the run.

    Its counters (completed, failed, restores) count from 0 in each term of leadership (a new
    process, or a new election): a row where one of them went down starts a new term, whose
    counts are added whole. The last complete checkpoint's figures are sampled once per row;
    each checkpoint id counts once."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    leading = F.coalesce(F.col("_leading"), F.lit("true")) == "true"  # a standby keeps its last term's figures
    figures = (
        rows.where((F.col("process") == "tmaster") & F.col("_checkpoints").isNotNull() & leading)
        .select("topology", "run_id", "ts", F.from_json("_checkpoints", MASTER_CHECKPOINTS).alias("c"))
        .where(F.col("c.completed").isNotNull() & F.col("c.mode").isNotNull()
               & F.col("c.interval_secs").isNotNull())  # not this runtime's figures: left out
        .select("topology", "run_id", "ts", "c.*")
    )
    window = Window.partitionBy("topology", "run_id").orderBy("ts")
    counters = {k: F.coalesce(F.col(k), F.lit(0)) for k in MASTER_COUNTERS}
    previous = {k: F.lag(v).over(window) for k, v in counters.items()}
    went_down = F.lit(False)
    for k in MASTER_COUNTERS:
        went_down = went_down | F.coalesce(counters[k] < previous[k], F.lit(False))
    whole = previous[MASTER_COUNTERS[0]].isNull() | went_down  # the run's first row, or a term's
    steps = figures.select(
        "*",
        went_down.alias("new_term"),
        *[F.when(whole, counters[k]).otherwise(counters[k] - previous[k]).alias(f"{k}_step")
          for k in MASTER_COUNTERS],
    )
    totals = steps.agg(
        F.count(F.lit(1)).alias("rows"),
        *[F.sum(f"{k}_step").alias(k) for k in MASTER_COUNTERS],
        (1 + F.sum(F.col("new_term").cast("long"))).alias("terms"),
        F.max_by("mode", "ts").alias("mode"),
        F.max_by("interval_secs", "ts").alias("interval_secs"),
        F.max_by("last_restore_ms", F.when(F.col("last_restore_ms").isNotNull(), F.col("ts")))
        .alias("last_restore_ms"),
    ).first()
    if not totals["rows"]:
        return None
    sampled = (
        figures.where(F.col("last_id").isNotNull())
        .groupBy("last_id")
        .agg(F.max("duration_ms").alias("duration_ms"), F.max("bytes").alias("bytes"),
             F.max("align_ms").alias("align_ms"))
        .agg(
            F.count(F.lit(1)).alias("sampled"),
            F.max("last_id").alias("last_id"),
            F.max_by("duration_ms", "last_id").alias("last_duration_ms"),
            F.max_by("bytes", "last_id").alias("last_bytes"),
            F.max_by("align_ms", "last_id").alias("last_align_ms"),
            F.avg("duration_ms").alias("duration_ms_mean"),
            F.max("duration_ms").alias("duration_ms_max"),
            F.avg("align_ms").alias("align_ms_mean"),
            F.max("align_ms").alias("align_ms_max"),
            F.avg("bytes").alias("bytes_mean"),
        )
        .first()
    )
    return {**totals.asDict(), **sampled.asDict()}


def _kinds(rows: "DataFrame", spouts_hint: Optional[Sequence[str]]) -> dict:
    """spout / bolt / daemon per component. Without a topology file, a component
    whose rows never carry a process latency is a spout (it receives no tuples)."""
    from pyspark.sql import functions as F

    found = rows.groupBy("component", "process").agg(
        F.max(F.col("process_latency_ms").isNotNull().cast("int")).alias("has_process_latency")
    ).collect()
    kinds = {}
    for r in found:
        if r["process"] != "instance":
            kinds[r["component"]] = "daemon"
        elif spouts_hint is not None:
            kinds[r["component"]] = "spout" if r["component"] in spouts_hint else "bolt"
        else:
            kinds[r["component"]] = "bolt" if r["has_process_latency"] else "spout"
    return kinds


def _flatten(row: "Row") -> dict:
    d = row.asDict()
    d["rate_p50"], d["rate_p95"] = d.pop("rate_q") or (None, None)
    d["cpu_p50"], d["cpu_p95"] = d.pop("cpu_q") or (None, None)
    d["rss_p50"], d["rss_p95"] = d.pop("rss_q") or (None, None)
    d["rate_mean"] = d["tuples"] / d["seconds"] if d["seconds"] else 0.0
    return d


def aggregate_sources(flat: "DataFrame", run: dict) -> list:
    """Per (component, partition) of the source spouts of one run: the lag at the first and last report,
    its largest, the seconds between those reports, and the mean records/s and bytes/s read (summed over
    the tasks that read it in a bucket). Empty when no instance row carries ``__source-partitions``."""
    from pyspark.sql import functions as F

    rows = flat.where(
        F.col("reason").isNull() & (F.col("topology") == run["topology"]) & (F.col("run_id") == run["run_id"])
        & (F.col("process") == "instance") & F.col("_sources").isNotNull()
    )
    reports = rows.select("component", "ts", F.explode(F.from_json("_sources", SOURCE_PARTITIONS_SCHEMA))
                          .alias("partition", "p"))
    per_bucket = reports.groupBy("component", "partition", "ts").agg(
        F.max("p.lag").alias("lag"), F.sum("p.records_per_sec").alias("rps"), F.sum("p.bytes_per_sec").alias("bps"))
    found = per_bucket.groupBy("component", "partition").agg(
        F.count(F.lit(1)).alias("reports"),
        F.min_by("lag", F.when(F.col("lag").isNotNull(), F.col("ts"))).alias("lag_first"),
        F.max_by("lag", F.when(F.col("lag").isNotNull(), F.col("ts"))).alias("lag_last"),
        F.max("lag").alias("lag_max"),
        (F.max(F.when(F.col("lag").isNotNull(), F.col("ts"))) - F.min(F.when(F.col("lag").isNotNull(), F.col("ts"))))
        .alias("lag_span_secs"),
        F.avg("rps").alias("records_per_sec"),
        F.avg("bps").alias("bytes_per_sec"),
    ).collect()
    return sorted((r.asDict() for r in found), key=lambda r: (r["component"], r["partition"]))
