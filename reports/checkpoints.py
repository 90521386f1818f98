"""The capacity report's checkpoints: per component and topology-wide figures, and notes to act on.

Pure functions of ``metrics.aggregate_checkpoints`` (no Spark); docs/reports.md, "Checkpoints",
defines every figure.
"""
from __future__ import annotations

import math
from typing import Mapping, Optional

from squall.reports.metrics import CheckpointAggregates

INTERVAL_KEY = "topology.state.checkpoint.interval.secs"
SLOW = 0.5  # checkpoints longer than this share of the interval, on average, are slow

TOPOLOGY_NOTE = (
    "From the leading topology master's rows (container 0's metrics file). completed, abandoned, restores: "
    "over the run, the counts of each term of leadership added (a new term is seen where a count goes "
    "down; tmaster_terms counts them, and each term starts with one restore). last_*: the newest complete "
    "checkpoint the rows name. sampled: the complete checkpoints the rows named (one per bucket: the last "
    "complete at its end), over which duration_ms_*, align_ms_* (the longest alignment of any task) and "
    "bytes_mean (all tasks) are taken."
)

COMPONENT_NOTE = (
    "From every task's rows. save_ms_mean: a task's time to save one checkpoint (pre_save, encoding, "
    "the write to storage), Σ save ms / Σ saves. align_ms_max: the longest a task waited between the "
    "first and the last of its inputs' markers (spouts do not align). bytes_per_save_mean: Σ bytes / Σ "
    "saves; bytes_per_checkpoint: the component's state per checkpoint, the sum over its tasks of each "
    "task's bytes per save (a run whose parallelism changed adds every task it had). stale_frames: frames "
    "of an older epoch dropped after a rollback."
)


def component_table(ck: CheckpointAggregates, kinds: Mapping[str, str]) -> list:
    """One row per component whose tasks report checkpoint figures."""
    by_component: dict = {}
    for t in ck.tasks:
        by_component.setdefault(t["component"], []).append(t)
    out = []
    for name in sorted(by_component):
        tasks = by_component[name]
        saves = int(sum(t["saves"] or 0 for t in tasks))
        saved = sum(t["bytes"] or 0 for t in tasks)
        per_task = [(t["bytes"] or 0) / t["saves"] for t in tasks if t["saves"]]
        out.append({
            "component": name,
            "kind": kinds.get(name, "bolt"),
            "tasks": len(tasks),
            "saves": saves,
            "save_ms_mean": sum(t["save_ms"] or 0.0 for t in tasks) / saves if saves else None,
            "align_ms_max": max((t["align_ms_max"] for t in tasks if t["align_ms_max"] is not None), default=None),
            "bytes_per_save_mean": saved / saves if saves else None,
            "bytes_per_checkpoint": sum(per_task) if per_task else None,
            "stale_frames": int(sum(t["stale_frames"] or 0 for t in tasks)),
        })
    return out


def report_part(ck: CheckpointAggregates, kinds: Mapping[str, str]) -> tuple:
    """(the topology's row, the components' rows, the terminal's lines)."""
    components = component_table(ck, kinds)
    row = topology_row(ck)
    found = notes(row, components) if ck.master else [
        "no topology master rows with checkpoint figures (container 0's metrics file was not read): "
        "topology-wide figures unknown"]
    row["notes"] = "; ".join(found)
    return row, components, summary_lines(row, found)


def topology_row(ck: CheckpointAggregates) -> dict:
    """The topology's checkpoints over the run (every figure None without the topology master's rows)."""
    m = ck.master or {}
    return {
        "mode": m.get("mode"),
        "interval_secs": m.get("interval_secs"),
        "completed": m.get("completed"),
        "abandoned": m.get("failed"),
        "restores": m.get("restores"),
        "tmaster_terms": m.get("terms"),
        "last_restore_ms": m.get("last_restore_ms"),
        "last_id": m.get("last_id"),
        "last_duration_ms": m.get("last_duration_ms"),
        "last_bytes": m.get("last_bytes"),
        "last_align_ms": m.get("last_align_ms"),
        "sampled": m.get("sampled"),
        "duration_ms_mean": m.get("duration_ms_mean"),
        "duration_ms_max": m.get("duration_ms_max"),
        "align_ms_mean": m.get("align_ms_mean"),
        "align_ms_max": m.get("align_ms_max"),
        "bytes_mean": m.get("bytes_mean"),
    }


def notes(row: dict, components: list) -> list:
    """What an operator can act on: slow checkpoints, abandoned ones, none at all."""
    out = []
    interval = row["interval_secs"]
    completed, abandoned = row["completed"] or 0, row["abandoned"] or 0
    restarts = max(0, (row["restores"] or 0) - (row["tmaster_terms"] or 0))  # restores after a term's start
    duration, align = row["duration_ms_mean"], row["align_ms_mean"]
    # A checkpoint's alignment is part of its duration: a slow alignment makes a slow checkpoint.
    if interval and duration is not None and duration > SLOW * 1000 * interval:
        suggest = math.ceil(duration / SLOW / 100.0) / 10.0
        out.append(
            f"checkpoints take {duration:,.0f} ms on average ({row['sampled']} sampled), more than half the "
            f"{interval:g} s interval: raise {INTERVAL_KEY} to {suggest:g} s or more, or make them shorter: "
            + _slow_cause(duration, align or 0.0, components))
    if completed == 0:
        out.append("no checkpoint completed in this run: a rollback goes back to the empty state "
                   "(the logs of the topology master say what the checkpoints waited for)")
    if abandoned > restarts:
        out.append(
            f"{abandoned:,} of {completed + abandoned:,} checkpoints abandoned, {abandoned - restarts:,} more than "
            f"the rollbacks after a failure ({restarts:,}) explain: they were not complete within "
            "squall.state.checkpoint.timeout.secs (a task holding more than squall.state.alignment.buffer.mb "
            "for an alignment never completes one, its log says so): relieve the slow component, or raise those")
    elif abandoned:
        out.append(
            f"{abandoned:,} of {completed + abandoned:,} checkpoints abandoned, no more than the rollbacks after "
            f"a failure ({restarts:,}): a restart or an update abandons the checkpoint in flight, so see the "
            "topology's logs for why processes restarted")
    return out


def _slow_cause(duration: float, align: float, components: list) -> str:
    """Where the time of a slow checkpoint goes: alignment, saving, or markers queued behind tuples."""
    saving = sum(c["save_ms_mean"] or 0.0 for c in components)
    aligned = [c for c in components if c["align_ms_max"] is not None]
    saver = max(components, key=lambda c: (c["save_ms_mean"] or 0.0, c["component"]), default=None)
    if align + saving < SLOW * duration:
        return (f"neither alignment ({align:,.0f} ms) nor saving ({saving:,.0f} ms over every component) is most "
                "of it: markers wait behind tuples queued on their way, so relieve the saturated components "
                "(recommendations)")
    if align >= saving:
        worst = max(aligned, key=lambda c: (c["align_ms_max"], c["component"]), default=None)
        where = f", {worst['component']} up to {worst['align_ms_max']:,.0f} ms" if worst else ""
        return (f"most of it is alignment ({align:,.0f} ms on average{where}): markers wait behind the tuples "
                "queued at the aligning tasks, so give their component or what feeds it more capacity "
                "(recommendations)")
    return (f"most of it is saving ({saving:,.0f} ms over every component, {saver['component']} "
            f"{saver['save_ms_mean']:,.0f} ms a save of {_size(saver['bytes_per_save_mean'])}): keep less state, "
            "or write it to faster storage (squall.state.storage)")


def summary_lines(row: dict, found: list) -> list:
    """The terminal's lines: the run's checkpoints, then each note."""
    if row["mode"] is None:
        return ["  checkpoints: " + "; ".join(found)]
    line = (f"  checkpoints ({row['mode']}, every {row['interval_secs']:g} s): {row['completed']:,} complete, "
            f"{row['abandoned']:,} abandoned, {row['restores']:,} restores")
    if row["last_id"] is not None:
        line += (f"; last #{row['last_id']}: {_size(row['last_bytes'])} in {row['last_duration_ms']:,.0f} ms, "
                 f"alignment {row['last_align_ms']:,.1f} ms; mean {row['duration_ms_mean']:,.0f} ms "
                 f"({row['sampled']} sampled)")
    return [line] + [f"  checkpoint note: {n}" for n in found]


def _size(n: Optional[float]) -> str:
    if n is None:
        return "-"
    return f"{n:,.0f} B" if n < 1024 else f"{n / 1024:,.1f} KiB" if n < 1024 ** 2 else f"{n / 1024 ** 2:,.1f} MiB"
