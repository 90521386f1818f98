"""The reports' charts: matplotlib figures rendered to PNG bytes (Agg backend).

Each function takes plain rows and returns ``(title, png_bytes)``; every chart
has a title, labelled axes and units.
"""
from __future__ import annotations

import io
from typing import Any, Sequence

DPI = 100


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=DPI)
    _pyplot().close(fig)
    return buf.getvalue()


def _time_axis(series: Sequence[dict]) -> tuple:
    span = max((p["t_secs"] for p in series), default=0.0)
    if span >= 3 * 3600:
        return 3600.0, "time since the run started (h)"
    if span >= 600:
        return 60.0, "time since the run started (min)"
    return 1.0, "time since the run started (s)"


def over_time(series: Sequence[dict], kinds: dict, key: str, title: str, ylabel: str) -> tuple:
    """One line per spout/bolt of ``key`` against time."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    scale, xlabel = _time_axis(series)
    components = sorted({p["component"] for p in series if kinds.get(p["component"]) != "daemon"})
    for name in components:
        pts = [p for p in series if p["component"] == name]
        ax.plot([p["t_secs"] / scale for p in pts], [p[key] for p in pts], label=f"{name} ({kinds.get(name)})")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if components:
        ax.legend(loc="best", fontsize="small")
    return title, _png(fig)


def requested_vs_used(components: Sequence[dict]) -> tuple:
    """Per-instance cpu (cores) and memory (MiB): requested against p95 used."""
    plt = _pyplot()
    rows = [c for c in components if c["kind"] != "daemon"]
    names = [c["component"] for c in rows]
    x = range(len(rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    panels = (
        ("cpu_requested_cores", "cpu_p95_cores", "CPU per instance", "cores"),
        ("ram_requested_mb", "ram_p95_mb", "Memory per instance", "MiB"),
    )
    for ax, (req, used, label, unit) in zip(axes, panels):
        ax.bar([i - 0.2 for i in x], [c[req] or 0 for c in rows], width=0.4, label="requested")
        ax.bar([i + 0.2 for i in x], [c[used] or 0 for c in rows], width=0.4, label="used (p95)")
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, rotation=30, ha="right")
        ax.set_title(f"{label}: requested vs used (p95)")
        ax.set_xlabel("component")
        ax.set_ylabel(f"{label.split()[0].lower()} ({unit})")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize="small")
    return "Requested versus used per instance", _png(fig)


def task_rates(instances: Sequence[dict]) -> tuple:
    """Mean tuples/s of every task, grouped by component: skew shows as one tall bar."""
    plt = _pyplot()
    tasks = [i for i in instances if i["process"] == "instance"]
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(tasks) + 2), 4))
    components = sorted({t["component"] for t in tasks})
    cmap = plt.get_cmap("tab10")
    labels = []
    for pos, t in enumerate(tasks):
        color = cmap(components.index(t["component"]) % 10)
        ax.bar(pos, t["rate_mean"], color=color,
               label=t["component"] if t["component"] not in labels else None)
        labels.append(t["component"])
    ax.set_xticks(range(len(tasks)))
    ax.set_xticklabels([str(t["task_id"]) for t in tasks], fontsize="small")
    ax.set_title("Mean throughput per task (skew across a component's tasks)")
    ax.set_xlabel("task id")
    ax.set_ylabel("throughput (tuples/s)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    return "Throughput per task", _png(fig)


def policy_bars(rows: Sequence[dict], title: str, panels: Sequence[tuple]) -> tuple:
    """Bars per algorithm/granularity; ``panels`` = (key, panel title, y label)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2))
    if len(panels) == 1:
        axes = [axes]
    labels = [f"{r['algorithm']}/{r['granularity']}" for r in rows]
    colors = ["tab:blue" if r.get("feasible", True) else "tab:gray" for r in rows]
    for ax, (key, panel_title, ylabel) in zip(axes, panels):
        ax.bar(range(len(rows)), [r.get(key) or 0 for r in rows], color=colors)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(labels, rotation=35, ha="right", fontsize="small")
        ax.set_title(panel_title)
        ax.set_xlabel("packing algorithm / granularity")
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title + ("  (grey: infeasible)" if "tab:gray" in colors else ""))
    return title, _png(fig)


def what_if(recs: Sequence[dict], components: Sequence[dict]) -> tuple:
    """Per spout/bolt: predicted throughput against parallelism (parallelism × capacity per
    instance at the recommended cpu), the target, the observed point and the recommendation."""
    plt = _pyplot()
    observed = {c["component"]: c.get("throughput_p50") or 0.0 for c in components}
    rows = [r for r in recs if r["capacity_per_instance"]]
    cols = min(3, max(1, len(rows)))
    lines = -(-max(1, len(rows)) // cols)
    fig, axes = plt.subplots(lines, cols, figsize=(4.2 * cols, 3.4 * lines), squeeze=False)
    for ax, r in zip([a for line in axes for a in line], rows):
        top = max(r["parallelism"], r["recommended_parallelism"]) * 3 // 2 + 1
        xs = list(range(1, top + 1))
        ax.plot(xs, [x * r["capacity_per_instance"] for x in xs], marker=".", label="predicted")
        ax.axhline(r["target_rate"], color="tab:green", linestyle="--", label="target")
        ax.plot([r["parallelism"]], [observed.get(r["component"], 0.0)], "o", color="tab:red", label="observed")
        ax.plot([r["recommended_parallelism"]], [r["predicted_throughput"]], "s", color="tab:purple",
                label="recommended")
        ax.set_title(f"{r['component']} ({r['capacity_basis']})")
        ax.set_xticks(xs)
        ax.set_xlabel("parallelism (instances)")
        ax.set_ylabel("throughput (tuples/s)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    for ax in [a for line in axes for a in line][len(rows):]:
        ax.axis("off")
    title = "What if: predicted throughput against parallelism"
    fig.suptitle(title)
    return title, _png(fig)
