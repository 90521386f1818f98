"""The capacity model: known answers by hand, then the issue's two runs as synthetic metrics on Spark."""
from __future__ import annotations

import pytest

from squall.packing import capacity as model
from squall.reports import recommend
from squall.reports.model import symptoms
from squall.reports.capacity_report import CapacityOptions, capacity_report
from squall.reports.inputs import parse_targets
from squall.reports.metrics import Thresholds
from squall.packing.capacity import Host, Load
from squall.reports.synthetic import SyntheticComponent as C
from squall.reports.synthetic import SyntheticRun, write_run


def load(service_ms=None, cpu_ms=None, busy=None, cpu_used=None, busy_cpu=None, requested=0.5, kind="bolt"):
    return Load(kind=kind, service_secs=service_ms and service_ms / 1000, cpu_per_tuple=cpu_ms and cpu_ms / 1000,
                busy=busy, cpu_used=cpu_used, busy_cpu=busy_cpu, requested=requested, held=None)


def test_a_waiting_bolt_is_bounded_by_its_time_in_process():
    # 2 ms per tuple in process(), 0.04 ms of it on the cpu: 500/s, though its 0.5 cores would allow 12,500/s.
    value, basis, formula = model.capacity(load(2.0, 0.04), 0.5, at_allocation=False, shared=False)
    assert (value, basis) == (pytest.approx(500.0), "waiting")
    assert formula == "min(1 / 2 ms in process(), 0.5 cores / 0.04 ms cpu per tuple) = min(500, 12,500) = 500"


def test_a_computing_bolt_is_bounded_by_its_allocation_not_a_whole_core():
    # 1 ms of cpu per tuple run on a whole core (nothing enforced its 0.5 request): 500/s at 0.5 cores.
    value, basis, _ = model.capacity(load(1.0, 1.0), 0.5, at_allocation=True, shared=False)
    assert (value, basis) == (pytest.approx(500.0), "compute")


def test_bounds_that_agree_at_the_allocation_are_compute():
    # A quota stretches 1 ms of cpu to 5 ms of wall time at 0.2 cores: both bounds say 200/s.
    assert model.capacity(load(5.0, 1.0), 0.2, at_allocation=True, shared=False)[1] == "compute"
    assert model.capacity(load(5.0, 1.0), 0.2, at_allocation=False, shared=False)[1] == "waiting"


def test_allocation_is_the_request_or_the_share_of_an_oversubscribed_host():
    busy_at_045 = load(busy=1.0, cpu_used=0.45, busy_cpu=0.45, requested=0.5)
    assert model.allocation(busy_at_045, Host("h", 2.0, 1.2)).cores == 0.5  # host not full: the request
    full = model.allocation(busy_at_045, Host("h", 2.0, 1.95))
    assert (full.cores, full.shared) == (0.45, True)
    assert model.allocation(load(requested=None), None).cores == 1.0  # one thread: one core at most
    assert model.allocation(load(requested=4.0), None).cores == 1.0
    assert not Host("h", None, 5.0).oversubscribed  # unknown cores: never claimed


def test_cpu_for_a_rate_is_never_above_the_allocation():
    assert model.cpu_for(load(cpu_ms=1.0), 160.0, 0.2, margin=0.2, step=0.05) == 0.2  # 0.192 -> 0.2
    assert model.cpu_for(load(cpu_ms=1.0), 300.0, 0.2, margin=0.2, step=0.05) == 0.2  # 0.36 capped
    assert model.cpu_for(load(cpu_ms=0.04), 400.0, 0.5, margin=0.2, step=0.05) == 0.05  # at least one step


def test_symptoms_name_their_figures():
    t = Thresholds()
    assert symptoms(load(busy=0.99, cpu_used=0.02), 0.5, 60.0, t) == [
        "busy 99% of the time", "holds its upstream in backpressure (spouts 60% of the time)"]
    assert symptoms(load(busy=0.5, cpu_used=0.49), 0.5, 0.0, t) == [
        "runs at its CPU allocation (0.49 of 0.5 cores)"]
    assert symptoms(load(busy=0.5, cpu_used=0.1), 0.5, 60.0, t) == []


def recs_of(report):
    return {r["component"]: r for r in {t.name: t for t in report.tables}["recommendations"].rows}


def test_io_bound_bolt_of_the_issue_needs_eight(spark, tmp_path):
    # A spout at 3,000/s feeds a bolt that waits 2 ms per tuple (about 470/s, busy all the time, 2 % cpu).
    run = SyntheticRun("io", (
        C("spout", "spout", 1, rate=3000.0, capacity=20000.0, cpu_share=0.2),
        C("wait", "bolt", 1, rate=3000.0, capacity=470.0, cpu_share=0.02),
    ), buckets=20, containers=1)
    options = CapacityOptions(metrics=write_run(str(tmp_path), run), targets=parse_targets(["wait=3000"]),
                              charts=False)
    wait = recs_of(capacity_report(options, spark))["wait"]
    assert wait["capacity_basis"] == "waiting"
    assert wait["capacity_per_instance"] == pytest.approx(470.0)
    assert wait["recommended_parallelism"] == 8  # ceil(3,000 × 1.2 / 470); 7 is the least that carries 3,000
    assert wait["symptoms"].startswith("busy 100% of the time")


def test_word_count_on_an_oversubscribed_host_keeps_a_plan_that_carries_its_input(spark, tmp_path):
    # Two count instances, each busy all the time on a full 2-core host, each getting 0.45 of its
    # 0.5 cores: 0.45 cores per 4,000 tuples/s. The plan must carry the observed 8,000/s.
    run = SyntheticRun("wc", (
        C("sentence", "spout", 1, rate=2000.0, capacity=4000.0, cpu_requested=0.5, cpu_share=0.4),
        C("split", "bolt", 2, rate=2000.0, capacity=1000.0, cpu_requested=0.5, fanout=4.0, cpu_share=0.45),
        C("count", "bolt", 2, rate=8000.0, capacity=4000.0, cpu_requested=0.5, cpu_share=0.45),
    ), buckets=20, containers=1)
    options = CapacityOptions(metrics=write_run(str(tmp_path), run), targets=parse_targets(["2000"]),
                              host_cores=2.0, charts=False)
    report = capacity_report(options, spark)
    hosts = {t.name: t for t in report.tables}["hosts"].rows
    assert hosts[0]["oversubscribed"] and hosts[0]["cores"] == 2.0
    assert any("was oversubscribed" in line for line in report.summary)
    count = recs_of(report)["count"]
    assert count["allocated_cpu_cores"] == pytest.approx(0.45)
    assert count["capacity_basis"] == "host share"
    assert count["recommended_parallelism"] >= 2
    assert count["recommended_parallelism"] * count["capacity_per_instance"] >= 8000 * 1.2
    assert "more instances on that host get less each" in count["notes"]


def test_chained_components_are_noted_and_a_recommendation_that_splits_a_chain_says_so():
    recs = [{"component": c, "recommended_parallelism": p, "notes": n}
            for c, p, n in [("spout", 2, ""), ("split", 2, "skew 1.50"), ("count", 4, ""), ("sink", 1, "")]]
    recommend.note_chains(recs, [("spout", "split"), ("count", "sink")])
    notes = {r["component"]: r["notes"] for r in recs}
    assert notes["spout"] == "chained: spout -> split"
    assert notes["split"] == "skew 1.50; chained: spout -> split"
    assert notes["count"] == notes["sink"] == (
        "chained: count -> sink (the recommendation splits the chain: its processes restart unchained)")
