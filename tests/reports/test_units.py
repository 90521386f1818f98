"""Pure parts of the reports: schema checks, formulas, YARN shapes, cluster views (no Spark)."""
from __future__ import annotations

import json

import pytest

from squall.errors import SquallError
from squall.packing import capacity as capacity_model
from squall.reports import capacity, plans
from squall.reports.inputs import find_metrics, parse_cluster_view, parse_targets
from squall.reports.schema import FIELD_NAMES, row_problem
from squall.reports.synthetic import rows, validate_lines

from .conftest import KNOWN


def a_row() -> dict:
    return next(rows(KNOWN, 1))


def test_synthetic_rows_follow_the_schema_exactly():
    for container in (1, 2):
        for row in rows(KNOWN, container):
            assert tuple(row) == FIELD_NAMES
            assert row_problem(row) is None


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda r: r.pop("ts"), "missing key ts"),
        (lambda r: r.update(container="one"), "a value has the wrong type"),
        (lambda r: r.update(cpu_percent=None), "cpu_percent is null"),
        (lambda r: r.update(interval_secs=0), "interval_secs must be > 0"),
        (lambda r: r.update(emit_count=-1), "emit_count must be >= 0"),
        (lambda r: r.update(process="worker"), "unknown process worker"),
        (lambda r: r.update(task_id=None), "task_id is null for an instance"),
    ],
)
def test_row_problems_are_named(change, reason):
    row = a_row()
    change(row)
    assert row_problem(row) == reason


def test_validate_lines_flags_text_that_is_not_json():
    assert validate_lines(["{not json", json.dumps(a_row()), "[1, 2]"]) == [
        "not a JSON object", None, "not a JSON object"]


def test_parallelism_known_answer():
    # 4 instances each saturated at 1,000 tuples/s, target 10,000 tuples/s, 20 % headroom.
    assert capacity_model.recommended_parallelism(10_000, 1_000, 0.2) == 12
    assert capacity_model.recommended_parallelism(10_000, 1_000, 0.0) == 10
    assert capacity_model.recommended_parallelism(1, 1_000, 0.2) == 1


def test_provisioning_percent():
    assert capacity.provisioning_pct(0.5, 0.2) == pytest.approx(60.0)
    assert capacity.provisioning_pct(1.0, 1.25) == pytest.approx(-25.0)
    assert capacity.provisioning_pct(None, 1.0) is None


def test_plan_cost_rounds_to_yarn_shapes():
    plan = {"containers": [
        {"id": 1, "resources": {"cpu": 2.5, "ram_mb": 1100, "disk_mb": 0}, "padding": {"cpu": 0.5, "ram_mb": 100},
         "instances": [{"component": "a", "resources": {"cpu": 1.0, "ram_mb": 500}},
                       {"component": "b", "resources": {"cpu": 1.0, "ram_mb": 500}}]},
        {"id": 2, "resources": {"cpu": 5.0, "ram_mb": 9000, "disk_mb": 0},
         "instances": [{"component": "a", "resources": {"cpu": 5.0, "ram_mb": 9000}}]},
    ]}
    cost = plans.plan_cost(plan, plans.Yarn(1024, 8192, 4))
    assert cost["yarn_vcores"] == 3 + 5
    assert cost["yarn_memory_mb"] == 2048 + 9216
    assert cost["yarn_waste_memory_mb"] == 2048 + 9216 - 10100
    assert cost["padding_ram_mb"] == 100
    assert cost["oversized_containers"] == [2]


CLUSTER = {
    "queue": {"name": "streaming", "capacity": {"vcores": 40, "memory_mb": 81920},
              "used": {"vcores": 10, "memory_mb": 20480}},
    "nodes": [
        {"host": "n1", "capacity": {"vcores": 8, "memory_mb": 16384}, "used": {"vcores": 2, "memory_mb": 4096}},
        {"host": "n2", "capacity": {"vcores": 8, "memory_mb": 16384}, "used": {"vcores": 0, "memory_mb": 0}},
    ],
}


def test_place_on_cluster_first_fit_decreasing():
    view = parse_cluster_view(CLUSTER)
    placed = plans.place_on_cluster([(4, 8192), (4, 8192), (2, 4096), (8, 1024)], view)
    # n1 free 6/12288, n2 free 8/16384: 8192s go to n1 and n2, 4096 to n1; (8, 1024) fits nowhere.
    assert (placed["placed"], placed["unplaced"], placed["fits_cluster"]) == (3, 1, False)
    assert placed["free_memory_after_mb"] == 0 + 8192
    assert placed["fragmentation_pct"] == pytest.approx(0.0)


def test_queue_headroom_before_and_after():
    view = parse_cluster_view(CLUSTER)
    h = plans.queue_headroom(view, {"yarn_vcores": 4, "yarn_memory_mb": 4096},
                             {"yarn_vcores": 10, "yarn_memory_mb": 12288})
    assert (h["free_vcores_before"], h["free_memory_mb_before"]) == (30, 61440)
    assert (h["free_vcores_after"], h["free_memory_mb_after"]) == (24, 53248)
    assert h["free_memory_after_pct"] == pytest.approx(65.0)


def test_cluster_view_errors_name_the_field():
    bad = json.loads(json.dumps(CLUSTER))
    bad["nodes"][1]["capacity"]["memory_mb"] = "lots"
    with pytest.raises(SquallError, match=r"nodes\[1\].capacity.memory_mb: expected a number"):
        parse_cluster_view(bad)
    with pytest.raises(SquallError, match="unknown keys racks"):
        parse_cluster_view({**CLUSTER, "racks": []})


def test_targets():
    t = parse_targets(["10000", "count=2500"])
    assert t.topology_rate == 10000 and t.for_component("count") == 2500 and t.for_component("x") is None
    with pytest.raises(SquallError, match="expected TUPLES_PER_S"):
        parse_targets(["fast"])
    with pytest.raises(SquallError, match="must be > 0"):
        parse_targets(["count=0"])


def test_find_metrics_errors(tmp_path):
    with pytest.raises(SquallError, match="does not exist"):
        find_metrics(str(tmp_path / "nowhere"))
    with pytest.raises(SquallError, match=r"no metrics files \(\*.jsonl\) under"):
        find_metrics(str(tmp_path))


def test_progress_line():
    from squall.reports.progress import render

    assert render("packing", 0, 0) == "[" + "." * 30 + "] packing"
    assert render("packing", 36, 72) == "[" + "#" * 15 + "." * 15 + "] 36/72 tasks: packing"
