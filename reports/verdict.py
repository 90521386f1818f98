"""The capacity report's decision, written first: what to change, why, and what it costs and frees.

Pure: built from the rows the report's tables already hold (recommendations, components, the observed
plan's cost and the cheapest recommended plan), so the verdict and the tables below it never disagree.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from squall.reports.output import Verdict

# (plan row key, label): what the cost table compares, observed plan against the recommended one
_COSTS = (("containers", "containers"), ("yarn_vcores", "YARN vcores"), ("yarn_memory_mb", "YARN memory (MiB)"),
          ("cpu_requested", "cpu requested (cores)"), ("ram_requested_mb", "ram requested (MiB)"))


def capacity_verdict(recs: Sequence[Mapping], components: Sequence[Mapping], current: Optional[Mapping],
                     cheapest: Optional[Mapping], headroom: float) -> Verdict:
    """``recs``: the recommendations table; ``components``: the components table (what each instance asks
    for now); ``current``: the observed plan's cost, if known; ``cheapest``: the cheapest feasible plan of
    the recommendation, if one was packed; ``headroom``: the policy's (0.2 = 20 %)."""
    asked = {c["component"]: c for c in components}
    changes = [row for row in (_change(r, asked.get(r["component"], {}), headroom) for r in recs) if row]
    costs = _costs(current, cheapest)
    return Verdict(_headline(changes, recs, cheapest, costs, headroom), changes, costs)


def _change(rec: Mapping, asked: Mapping, headroom: float) -> Optional[dict]:
    now = (rec["parallelism"], asked.get("cpu_requested_cores"), asked.get("ram_requested_mb"))
    then = (rec["recommended_parallelism"], rec["recommended_cpu_cores"], rec["recommended_ram_mb"])
    if _same(now, then):
        return None
    return {"component": rec["component"], "now": _shape(*now), "recommended": _shape(*then),
            "why": _why(rec, now, then, headroom)}


def _same(now: tuple, then: tuple) -> bool:
    return all(a is None or b is None or abs(float(a) - float(b)) < 1e-9 for a, b in zip(now, then))


def _shape(parallelism: int, cpu: Optional[float], ram_mb: Optional[float]) -> str:
    cpu_text = "?" if cpu is None else f"{cpu:g}"
    ram_text = "?" if ram_mb is None else f"{ram_mb:,.0f}"
    return f"{parallelism} × ({cpu_text} cores, {ram_text} MiB)"


def _why(rec: Mapping, now: tuple, then: tuple, headroom: float) -> str:
    reasons = []
    if rec.get("symptoms"):
        reasons.append(str(rec["symptoms"]))
    need = rec["target_rate"] * (1 + headroom) if rec.get("target_rate") is not None else None
    per_instance = rec.get("capacity_at_allocation")
    if need is not None and per_instance:
        reasons.append(f"needs {need:,.0f} tuples/s ({rec['target_basis']} + {100 * headroom:g} % headroom); "
                       f"{now[0]} carry {now[0] * per_instance:,.0f}")
    if now[1] is not None and then[1] is not None and abs(now[1] - then[1]) > 1e-9:
        reasons.append(f"cpu {rec['cpu_formula']}")
    if now[2] is not None and then[2] is not None and abs(now[2] - then[2]) > 1e-9:
        reasons.append(f"ram p95 {rec['ram_p95_mb']:,.1f} MiB: {rec['ram_formula']}")
    if rec.get("notes"):
        reasons.append(str(rec["notes"]))
    return "; ".join(reasons)


def _costs(current: Optional[Mapping], cheapest: Optional[Mapping]) -> list:
    if cheapest is None:
        return []
    rows = []
    for key, label in _COSTS:
        after = cheapest.get(key)
        before = current.get(key) if current else None
        rows.append({"resource": label, "now": before, "recommended": after, "change": _delta(before, after)})
    return rows


def _delta(before: Optional[float], after: Optional[float]) -> str:
    if before is None or after is None:
        return ""
    d = after - before
    if abs(d) < 1e-9:
        return "same"
    text = f"{abs(d):,.2f}".rstrip("0").rstrip(".")
    return f"+{text}" if d > 0 else f"frees {text}"


def _headline(changes: list, recs: Sequence[Mapping], cheapest: Optional[Mapping], costs: list,
              headroom: float) -> str:
    if not changes:
        text = (f"No change: every component carries its target with {100 * headroom:g} % headroom "
                "at what it asks for now.")
    else:
        by_name = {r["component"]: r for r in recs}
        scaled = [f"{c['component']} {by_name[c['component']]['parallelism']} → "
                  f"{by_name[c['component']]['recommended_parallelism']}"
                  for c in changes
                  if by_name[c["component"]]["parallelism"] != by_name[c["component"]]["recommended_parallelism"]]
        resized = [c["component"] for c in changes
                   if by_name[c["component"]]["parallelism"] == by_name[c["component"]]["recommended_parallelism"]]
        parts = []
        if scaled:
            parts.append("scale " + ", ".join(scaled))
        if resized:
            parts.append("right-size " + ", ".join(resized))
        text = " and ".join(parts).capitalize() + "."
    if cheapest is not None:
        memory = next(r for r in costs if r["resource"] == "YARN memory (MiB)")
        vcores = next(r for r in costs if r["resource"] == "YARN vcores")
        text += (f" The recommended plan ({cheapest['algorithm']}/{cheapest['granularity']}) takes "
                 f"{_count(cheapest['containers'], 'container')}, {cheapest['yarn_vcores']} YARN vcores and "
                 f"{cheapest['yarn_memory_mb']:,} MiB of YARN memory")
        if memory["now"] is not None:
            text += f" ({_said(vcores['change'], 'vcores')}, {_said(memory['change'], 'MiB')} against the observed plan)"
        text += "."
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _said(change: str, unit: str) -> str:
    if change == "same":
        return f"the same {unit}"
    return f"{change} {unit}"
