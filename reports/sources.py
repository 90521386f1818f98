"""The capacity report's source partitions: how far behind its source each source spout reads.

Pure functions of ``metrics.aggregate_sources`` (no Spark); docs/reports.md, "Source partitions", defines
every figure. Lag (records the source holds that the spout has not read) is what a consumer is sized by:
a lag that grows over the run means the spout, or what it feeds, is slower than the source.
"""
from __future__ import annotations

from typing import Optional

GROWING = 0.01  # lag growth above this share of what is read per second counts as growing

NOTE = (
    "From every source spout task's rows (squall.metrics.SourcePartitions, docs/connectors.md). lag_first, "
    "lag_last: the partition's lag at the first and the last report that knew it (a Kafka partition: high "
    "watermark - position); lag_growth_per_sec: (lag_last - lag_first) / the seconds between them; "
    "records_per_sec, bytes_per_sec: the mean over the buckets that reported the partition; catch_up_secs: "
    "lag_last / how fast the lag fell, when it fell."
)


def partition_table(found: list) -> list:
    """One row per (component, partition)."""
    out = []
    for r in found:
        growth = _growth(r)
        out.append({
            "component": r["component"], "partition": r["partition"], "reports": r["reports"],
            "lag_first": r["lag_first"], "lag_last": r["lag_last"], "lag_max": r["lag_max"],
            "lag_growth_per_sec": growth, "records_per_sec": r["records_per_sec"],
            "bytes_per_sec": r["bytes_per_sec"],
            "catch_up_secs": (r["lag_last"] / -growth) if growth is not None and growth < 0 and r["lag_last"] else None,
        })
    return out


def _growth(r: dict) -> Optional[float]:
    if r["lag_first"] is None or r["lag_last"] is None or not r["lag_span_secs"]:
        return None
    return (r["lag_last"] - r["lag_first"]) / r["lag_span_secs"]


def notes(rows: list) -> list:
    """Per source component: a lag that grew over the run, or one still being caught up."""
    out = []
    for component in sorted({r["component"] for r in rows}):
        mine = [r for r in rows if r["component"] == component]
        growth = sum(r["lag_growth_per_sec"] or 0.0 for r in mine)
        read = sum(r["records_per_sec"] or 0.0 for r in mine)
        lag = sum(r["lag_last"] or 0 for r in mine)
        if growth > GROWING * max(read, 1.0):
            out.append(
                f"{component}: its lag grew by {growth:,.1f} records/s over the run (now {lag:,} records over "
                f"{len(mine)} partitions) while it read {read:,.1f} records/s: the source fills faster than the "
                f"spout reads; give the spout more tasks (at most one per partition: {len(mine)}) or, if it is "
                "held back by backpressure, give what it feeds more capacity (recommendations)")
        elif lag and growth < 0:
            out.append(f"{component}: catching up: its lag ({lag:,} records) falls by {-growth:,.1f} records/s, "
                       f"gone in about {lag / -growth:,.0f} s")
    return out


def summary_lines(rows: list, found: list) -> list:
    """The terminal's lines: each source component's partitions and lag, then each note."""
    lines = []
    for component in sorted({r["component"] for r in rows}):
        mine = [r for r in rows if r["component"] == component]
        lag = sum(r["lag_last"] or 0 for r in mine)
        read = sum(r["records_per_sec"] or 0.0 for r in mine)
        lines.append(f"  source {component}: {len(mine)} partitions, {read:,.1f} records/s read, "
                     f"lag {lag:,} records at the end")
    return lines + [f"  source note: {n}" for n in found]
