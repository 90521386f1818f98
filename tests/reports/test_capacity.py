"""The capacity report on a real local Spark session, against known answers."""
from __future__ import annotations

import csv
import json
import os
import shutil

import pytest

from squall.errors import SquallError
from squall.reports.capacity_report import CapacityOptions, capacity_report
from squall.reports.inputs import parse_targets
from squall.reports.output import write_report


def table(report, name):
    return {t.name: t for t in report.tables}[name].rows


def by(rows, key="component"):
    return {r[key]: r for r in rows}


@pytest.fixture(scope="module")
def report(spark, known_run):
    options = CapacityOptions(metrics=known_run, targets=parse_targets(["work=10000"]), charts=True)
    return capacity_report(options, spark)


def test_saturated_bolt_needs_twelve_instances(report):
    work = by(table(report, "recommendations"))["work"]
    # 1 ms in process() and 1 ms of cpu per tuple at its 1-core allocation: 1,000 tuples/s either way.
    assert work["capacity_per_instance"] == pytest.approx(1000.0)
    assert work["capacity_basis"] == "compute"
    assert work["target_rate"] == 10000.0
    assert work["recommended_parallelism"] == 12
    assert work["parallelism_formula"] == "ceil(10,000 × 1.2 / 1,000) = 12; 12 × 1,000 = 12,000 ≥ 12,000"
    assert work["symptoms"] == "busy 100% of the time; runs at its CPU allocation (1.00 of 1 cores)"


def test_topology_target_scales_each_component_by_its_observed_share(spark, known_run):
    options = CapacityOptions(metrics=known_run, targets=parse_targets(["10000"]), charts=False)
    recs = by(table(capacity_report(options, spark), "recommendations"))
    assert recs["work"]["recommended_parallelism"] == 12  # work carries all 4,000 of the spout's 4,000
    light = recs["light"]
    assert light["target_rate"] == pytest.approx(2500.0)  # a quarter of the spout's rate
    # 500 tuples/s at 20 % of a core: 0.4 ms of cpu per tuple. Its request is 0.5 cores, never a whole
    # core: 0.5 / 0.4 ms = 1,250 tuples/s, below the 2,500 its 0.4 ms in process() would allow.
    assert light["capacity_at_allocation"] == pytest.approx(1250.0)
    assert light["capacity_basis"] == "compute"
    assert light["recommended_parallelism"] == 3  # ceil(2,500 × 1.2 / 1,250)
    # 1,000 tuples/s each × 0.4 ms × 1.2 = 0.48, rounded up to 0.5 cores: 1,250 each, 3,750 >= 3,000.
    assert light["recommended_cpu_cores"] == pytest.approx(0.5)
    assert light["predicted_throughput"] == pytest.approx(3750.0)
    assert recs["spout"]["recommended_parallelism"] == 2  # ceil(10,000 × 1.2 / 10,000)


def test_throughput_and_provisioning(report):
    comps = by(table(report, "components"))
    work, light = comps["work"], comps["light"]
    assert (work["throughput_p50"], work["throughput_p95"], work["throughput_max"]) == (4000.0, 4000.0, 4000.0)
    assert work["instance_rate_p95"] == 1000.0
    assert work["cpu_p95_cores"] == 1.0 and work["cpu_provisioning_pct"] == pytest.approx(0.0)
    assert work["saturated_pct"] == 100.0
    assert light["cpu_p95_cores"] == pytest.approx(0.2)
    assert light["cpu_provisioning_pct"] == pytest.approx(60.0)
    assert light["ram_provisioning_pct"] == pytest.approx(75.0)
    assert light["saturated_pct"] == 0.0
    assert light["busy_pct"] == pytest.approx(20.0)  # 500 tuples/s × 0.4 ms
    assert light["symptoms"] == "" and not light["saturated"]
    assert comps["__stmgr"]["kind"] == "daemon"
    recs = by(table(report, "recommendations"))
    # light sizes for its observed peak, 1,000 tuples/s: one instance at 1,200 × 0.4 ms × 1.2 = 0.58
    # cores, held to its 0.5 allocation (1,250/s at 0.5 cores carries the 1,200).
    assert recs["light"]["recommended_parallelism"] == 1
    assert recs["light"]["recommended_cpu_cores"] == pytest.approx(0.5)
    assert recs["light"]["recommended_ram_mb"] == 80  # ceil(64 × 1.2 to 16)
    assert recs["work"]["recommended_cpu_cores"] == pytest.approx(1.0)  # its allocation: never more


def test_hot_key_skew_is_found(report):
    comps = by(table(report, "components"))
    assert comps["count"]["skew"] == pytest.approx(2.5)
    assert comps["count"]["hot_task"] == 1
    assert comps["work"]["skew"] == pytest.approx(1.0)
    notes = by(table(report, "recommendations"))["count"]["notes"]
    assert "skew 2.50: task 1 is hot" in notes
    assert by(table(report, "recommendations"))["work"]["notes"] == ""


def test_kinds_and_instances(report):
    comps = by(table(report, "components"))
    assert {c: comps[c]["kind"] for c in ("spout", "work", "light", "count")} == {
        "spout": "spout", "work": "bolt", "light": "bolt", "count": "bolt"}
    instances = [r for r in table(report, "instances") if r["process"] == "instance"]
    assert sorted(r["task_id"] for r in instances) == list(range(1, 12))
    assert by(instances, "task_id")[1]["rate_mean"] == pytest.approx(2500.0)


def test_every_policy_is_evaluated_and_one_is_cheapest(report):
    rows = table(report, "plans")
    assert sorted((r["algorithm"], r["granularity"]) for r in rows) == sorted(
        (a, g) for a in ("auto", "roundrobin", "rcrr", "ffd") for g in ("task", "worker"))
    assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5, 6, 7, 8]
    cheapest = [r for r in rows if r["cheapest"]]
    assert len(cheapest) <= 1
    recs = by(table(report, "recommendations"))
    # Without a topology target the others size for their observed peak: spout, light and count need one each.
    assert [recs[c]["recommended_parallelism"] for c in ("spout", "work", "light", "count")] == [1, 12, 1, 1]
    assert any(r["feasible"] for r in rows)
    for r in rows:
        if r["feasible"]:
            assert r["instances"] == 15


def test_report_files(report, tmp_path):
    paths = write_report(report, str(tmp_path / "out"))
    html = open(paths["html"]).read()
    assert html.count("data:image/png;base64,") == len(report.charts) >= 4
    assert "http://" not in html and "https://" not in html
    with open(os.path.join(paths["tables"], "recommendations.csv")) as f:
        recs = {r["component"]: r for r in csv.DictReader(f)}
    assert recs["work"]["recommended_parallelism"] == "12"
    data = json.load(open(paths["json"]))
    assert {r["component"]: r["recommended_parallelism"] for r in data["tables"]["recommendations"]}["work"] == 12
    assert os.path.isfile(os.path.join(paths["charts"], "01-what-if--predicted-throughput-against-parallelism.png"))


def test_cluster_view_headroom(spark, known_run, tmp_path):
    view = {"queue": {"name": "streaming", "capacity": {"vcores": 200, "memory_mb": 819200},
                      "used": {"vcores": 50, "memory_mb": 102400}},
            "nodes": [{"host": f"n{i}", "capacity": {"vcores": 16, "memory_mb": 65536},
                       "used": {"vcores": 2, "memory_mb": 8192}} for i in range(12)]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(view))
    options = CapacityOptions(metrics=known_run, targets=parse_targets(["work=10000"]), cluster_view=str(path),
                              charts=False)
    report = capacity_report(options, spark)
    best = [r for r in table(report, "plans") if r["cheapest"]][0]
    current = table(report, "current_plan")[0]
    h = table(report, "cluster")[0]
    assert (h["free_vcores_before"], h["free_memory_mb_before"]) == (150, 716800)
    assert h["free_vcores_after"] == 150 - (best["yarn_vcores"] - current["yarn_vcores"])
    assert h["free_memory_mb_after"] == 716800 - (best["yarn_memory_mb"] - current["yarn_memory_mb"])
    assert all("fits_cluster" in r for r in table(report, "plans") if r["feasible"])


@pytest.fixture()
def malformed_run(known_run, tmp_path):
    run_dir = tmp_path / "known" / "run"
    shutil.copytree(known_run, run_dir)
    with open(run_dir / "metrics" / "container-2.jsonl", "a") as f:
        f.write("{this is not json\n")
        row = json.loads(open(run_dir / "metrics" / "container-1.jsonl").readline())
        del row["cpu_percent"]
        f.write(json.dumps(row) + "\n")
        f.write(json.dumps(row) + "\n")
    return str(run_dir)


def test_malformed_rows_stop_the_report_with_one_line(spark, malformed_run):
    with pytest.raises(SquallError) as e:
        capacity_report(CapacityOptions(metrics=malformed_run, charts=False), spark)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("3 of 963 metrics rows are malformed (first reason: missing key cpu_percent, 2 rows")


def test_malformed_rows_are_counted_when_skipped(spark, malformed_run):
    report = capacity_report(CapacityOptions(metrics=malformed_run, skip_malformed=True, charts=False), spark)
    assert {r["reason"]: r["rows"] for r in table(report, "malformed")} == {
        "missing key cpu_percent": 2, "not a JSON object": 1}
    assert dict(report.facts)["malformed rows"] == 3
    assert by(table(report, "recommendations"))["work"]["capacity_per_instance"] == pytest.approx(1000.0)


def test_unknown_topology(spark, known_run):
    with pytest.raises(SquallError, match=r"no metrics for topology 'nope' in .* \(found: known\)"):
        capacity_report(CapacityOptions(metrics=known_run, topology="nope", charts=False), spark)


def test_a_run_without_checkpoints_has_no_checkpoint_part(report):
    assert [t.name for t in report.tables] == ["recommendations", "components", "plans", "current_plan", "hosts",
                                               "instances", "malformed"]
    assert not any("checkpoint" in line for line in report.summary)
