"""The packing report over generated topology files agrees with squall.packing directly."""
from __future__ import annotations

import json

import pytest

from squall.conf import base_config
from squall.errors import SquallError
from squall.loader import load_topology_file
from squall.packing import PackingError, pack, plan_to_json
from squall.reports import plans
from squall.reports.packing_report import PackingOptions, find_topology_files, packing_report
from squall.reports.synthetic import write_topologies


@pytest.fixture(scope="module")
def topology_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("topologies")
    write_topologies(str(directory), 6, seed=7, prefix="pk")
    return directory


@pytest.fixture(scope="module")
def report(spark, topology_dir):
    return packing_report(PackingOptions(topologies=(str(topology_dir),)), spark)


def rows_of(report, name):
    return {t.name: t for t in report.tables}[name].rows


def test_every_topology_times_every_policy_matches_pack(report, topology_dir):
    rows = rows_of(report, "per_topology")
    assert len(rows) == 6 * len(plans.POLICIES) == 6 * 8
    base = base_config()
    base = base.with_layer(plans.yarn_caps(base), "report")
    yarn = plans.Yarn.from_config(base)
    checked = 0
    for path in sorted(topology_dir.glob("*.py")):
        topology = load_topology_file(str(path))
        for algorithm, granularity in plans.POLICIES:
            row = next(r for r in rows if r["topology"] == topology.name
                       and (r["algorithm"], r["granularity"]) == (algorithm, granularity))
            try:
                plan = plan_to_json(topology.name, pack(topology.plan, base=base, algorithm=algorithm,
                                                        granularity=granularity))
            except PackingError as e:
                assert row["feasible"] is False and row["error"] == str(e)
                continue
            cost = plans.plan_cost(plan, yarn)
            for key in ("containers", "yarn_vcores", "yarn_memory_mb", "ram_requested_mb", "padding_ram_mb"):
                assert row[key] == cost[key], (topology.name, algorithm, granularity, key)
            assert row["feasible"] == (not cost["oversized_containers"])
            checked += 1
    assert checked >= 12


def test_ranks_per_topology_and_overall(report):
    rows = rows_of(report, "per_topology")
    for name in {r["topology"] for r in rows}:
        mine = [r for r in rows if r["topology"] == name]
        assert sorted(r["rank"] for r in mine) == list(range(1, 9))
        feasible = [r for r in mine if r["feasible"]]
        if feasible:
            best = min(feasible, key=lambda r: (r["yarn_memory_mb"], r["yarn_vcores"], r["containers"]))
            winner = next(r for r in mine if r["cheapest"])
            assert winner["yarn_memory_mb"] == best["yarn_memory_mb"]
    overall = rows_of(report, "policies")
    assert [r["overall_rank"] for r in overall] == list(range(1, 9))
    assert sum(r["wins"] for r in overall) == sum(1 for r in rows if r["cheapest"])
    assert report.charts and report.summary[0] == "6 topologies × 8 policies = 48 packings"


def test_cluster_view_adds_fit_and_fragmentation(spark, topology_dir, tmp_path):
    view = {"queue": {"name": "q", "capacity": {"vcores": 64, "memory_mb": 262144}},
            "nodes": [{"host": "a", "capacity": {"vcores": 8, "memory_mb": 32768}},
                      {"host": "b", "capacity": {"vcores": 8, "memory_mb": 32768},
                       "used": {"vcores": 4, "memory_mb": 16384}}]}
    path = tmp_path / "view.json"
    path.write_text(json.dumps(view))
    files = sorted(str(p) for p in topology_dir.glob("*.py"))[:2]
    report = packing_report(PackingOptions(topologies=tuple(files), cluster_view=str(path), charts=False), spark)
    rows = rows_of(report, "per_topology")
    assert len(rows) == 2 * 8
    for r in rows:
        if r["feasible"]:
            assert r["fits_cluster"] == (r["unplaced"] == 0)
            assert 0.0 <= r["fragmentation_pct"] <= 100.0


def test_no_topology_files(tmp_path):
    with pytest.raises(SquallError, match=r"no topology files \(\*.py\) in"):
        find_topology_files((str(tmp_path),))
