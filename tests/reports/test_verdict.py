"""The capacity report's verdict: the decision, why, and what it costs and frees, from the tables' rows."""
from __future__ import annotations

from squall.reports.output import Report, Table, Verdict, render_html
from squall.reports.verdict import capacity_verdict


def _rec(component: str, parallelism: int, recommended: int, cpu: float, ram: float, **extra: object) -> dict:
    return {"component": component, "parallelism": parallelism, "recommended_parallelism": recommended,
            "recommended_cpu_cores": cpu, "recommended_ram_mb": ram, "target_rate": 1000.0,
            "target_basis": "observed peak throughput", "capacity_at_allocation": 300.0,
            "cpu_formula": "min(1, ceil(...)) = " + f"{cpu:g}", "ram_p95_mb": 40.0, "ram_formula": f"= {ram:g}",
            "symptoms": "", "notes": "", **extra}


COMPONENTS = [{"component": "count", "cpu_requested_cores": 1.0, "ram_requested_mb": 256.0},
              {"component": "split", "cpu_requested_cores": 0.5, "ram_requested_mb": 64.0}]
PLAN_NOW = {"containers": 3, "yarn_vcores": 6, "yarn_memory_mb": 3072, "cpu_requested": 4.0, "ram_requested_mb": 900}
CHEAPEST = {"algorithm": "ffd", "granularity": "task", "containers": 2, "yarn_vcores": 6, "yarn_memory_mb": 2048,
            "cpu_requested": 4.5, "ram_requested_mb": 700}


def test_scale_and_right_size_are_named_with_their_reasons_and_costs():
    recs = [_rec("count", 3, 5, 1.0, 256.0, symptoms="busy 97 %"), _rec("split", 2, 2, 0.25, 64.0)]
    v = capacity_verdict(recs, COMPONENTS, PLAN_NOW, CHEAPEST, 0.2)
    assert v.headline == ("Scale count 3 → 5 and right-size split. The recommended plan (ffd/task) takes 2 containers, "
                          "6 YARN vcores and 2,048 MiB of YARN memory (the same vcores, frees 1,024 MiB against the "
                          "observed plan).")
    count, split = v.changes
    assert (count["now"], count["recommended"]) == ("3 × (1 cores, 256 MiB)", "5 × (1 cores, 256 MiB)")
    assert count["why"] == "busy 97 %; needs 1,200 tuples/s (observed peak throughput + 20 % headroom); 3 carry 900"
    assert split["why"].endswith("2 carry 600; cpu min(1, ceil(...)) = 0.25")
    assert {r["resource"]: r["change"] for r in v.costs} == {
        "containers": "frees 1", "YARN vcores": "same", "YARN memory (MiB)": "frees 1,024",
        "cpu requested (cores)": "+0.5", "ram requested (MiB)": "frees 200"}


def test_nothing_to_change_says_so_and_without_an_observed_plan_costs_have_no_change():
    recs = [_rec("count", 3, 3, 1.0, 256.0)]
    v = capacity_verdict(recs, COMPONENTS, None, CHEAPEST, 0.2)
    assert v.changes == []
    assert v.headline.startswith("No change: every component carries its target with 20 % headroom")
    assert "against the observed plan" not in v.headline
    assert all(r["now"] is None and r["change"] == "" for r in v.costs)


def test_the_page_opens_with_the_verdict_and_folds_wide_tables():
    rows = [{f"c{i}": i for i in range(12)}]
    report = Report("capacity", "t", [("run", "r")], [Table("wide", "Wide", rows, key_columns=["c0", "c1"])], [],
                    verdict=Verdict("Scale count 3 → 5.", [{"component": "count", "why": "busy"}], []))
    page = render_html(report)
    assert page.index("Scale count 3 → 5.") < page.index("About this run") < page.index("<h2>Wide</h2>")
    shown, folded = page.split("<details><summary>All 12 columns</summary>")
    assert "<th>c1</th>" in shown and "<th>c2</th>" not in shown.split("<h2>Wide</h2>")[1]
    assert "<th>c11</th>" in folded
