"""Capacity plans that hold: a real overloaded run, a report with a target rate on the real local
Spark session, ``squall update --from-report``, and the plan it applies. The rates of the run, before and
after, are bench/capacity.py's to measure (as ratios to the target), not a test's to assert.

Sizes (2 cores, shared with whatever else runs): the waiting bolt spends 2 ms per tuple in
process() and almost no CPU, about 470 tuples/s an instance; offered 1,000 tuples/s it needs
ceil(1,000 × 1.2 / 470) = 3 instances, a few percent of a core in all. The computing bolt
spends 1 ms of CPU per tuple and is held to its 0.2-core allocation (see cpu_bound.py), about
185 tuples/s an instance; offered 400 tuples/s it needs ceil(400 × 1.2 / 185) = 3 instances,
0.6 cores in all: with the spout and the daemons the recommended plan stays under one core.
Both start at one instance, which cannot carry the target: so the smallest parallelism that
sustains it is at least 2, and a recommendation of at most 4 is at most twice that.
"""
from __future__ import annotations

import json

import pytest
from e2e_harness import cluster  # noqa: F401

from .closed_loop import Case, apply, overload_and_report

CASES = [
    pytest.param(Case("io_bound", "wait", 1000.0), "waiting", 4, id="io-bound"),
    pytest.param(Case("cpu_bound", "compute", 400.0), "compute", 4, id="cpu-bound"),
    # ceil(3,000 / 470) = 7 instances sustain it: the report's x8 (with headroom) needs its resource
    # change applied too (8 x 0.5 cores would not fit one container), and at most 2 x 7
    pytest.param(Case("io_bound", "wait", 3000.0), "waiting", 14, id="io-bound-x8"),
]


@pytest.mark.parametrize("case, basis, most", CASES)
def test_a_report_for_a_target_rate_is_applied_as_recommended(cluster, spark, tmp_path, case, basis, most):  # noqa: F811
    try:
        loop = overload_and_report(cluster.squall, cluster.home, spark, case, str(tmp_path / "report"))
        rec = loop.recommendation
        assert rec["capacity_basis"] == basis, rec["capacity_formula"]
        assert rec["recommended_parallelism"] >= 2
        # At most twice the smallest parallelism that sustains the target (>= 2: one does not).
        assert rec["recommended_parallelism"] <= most, rec["parallelism_formula"]
        assert rec["recommended_parallelism"] * rec["capacity_per_instance"] >= case.target * 1.2
        # the spout and the bolt ran chained (one process); the bolt's new parallelism splits them
        assert (f"chained: source -> {case.bolt} (the recommendation splits the chain: its processes restart "
                "unchained)") in rec["notes"]

        out, _ = cluster.squall("update", case.topology, "--from-report", loop.report_dir, "--dry-run")
        assert f"  {case.bolt:<16} parallelism  1 -> {rec['recommended_parallelism']}\n" in out
        assert "dry run: nothing applied" in out.splitlines()
        shown = json.loads(cluster.squall("show", case.topology, "--json")[0])
        assert sum(i["component"] == case.bolt for c in shown["packing_plan"]["containers"]
                   for i in c["instances"]) == 1

        apply(cluster.squall, loop, case)
        shown = json.loads(cluster.squall("show", case.topology, "--json")[0])
        assert shown["status"] == "RUNNING"
        assert sum(i["component"] == case.bolt for c in shown["packing_plan"]["containers"]
                   for i in c["instances"]) == rec["recommended_parallelism"]
    finally:
        cluster.squall("kill", case.topology)
