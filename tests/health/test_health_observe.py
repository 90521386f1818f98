"""The sensors on a recorded window: ``squall metrics io_bound --json`` of a real run of
tests/reports/topologies/io_bound.py (a paced spout offering 1,500 tuples/s to a bolt waiting 2 ms a
tuple, one task each; 10 s window), with its packing plan, read as the health manager reads it."""
from __future__ import annotations

import json
import os

from brain_helpers import settings
from packing_helpers import comp, topo

from squall.health.diagnose import diagnose
from squall.health.observe import observe
from squall.health.resolve import resolve
from squall.idl import schema
from squall.logical import topology_config
from squall.packing import plan_from_json

DATA = os.path.join(os.path.dirname(__file__), "data")
OFFERED = 1500.0


def recorded() -> tuple:
    with open(os.path.join(DATA, "io_bound_saturated.metrics.json")) as f:
        metrics = json.load(f)
    with open(os.path.join(DATA, "io_bound_saturated.packing.json")) as f:
        _, plan = plan_from_json(json.load(f))
    topology = topo([comp("source", 1), comp("wait", 1, inputs=["source"])], name="io_bound")
    execution = schema.ExecutionState(topology_name="io_bound", run_id="r", run_dir="/tmp/r", submit_time=0.0,
                                      submitter="me", status=schema.TopologyStatus.RUNNING, secret="s",
                                      cluster="local", python="python")
    return metrics, topology, plan, execution


def test_observe_reads_the_window_the_tasks_and_the_plan() -> None:
    metrics, topology, plan, execution = recorded()
    obs = observe(metrics, topology, plan, execution, topology_config(topology), now=100.0)
    assert (obs.time, obs.topology, obs.status, obs.containers) == (100.0, "io_bound", "running", 1)
    assert obs.reliability == "ATMOST_ONCE" and obs.max_spout_pending == 1000 and not obs.busy_elsewhere
    assert round(obs.window_secs, 2) == 10.09
    source, wait = obs.components["source"], obs.components["wait"]
    assert (source.kind, wait.kind, wait.parallelism, wait.cpu_requested, wait.ram_mb_requested) == (
        "spout", "bolt", 1, 0.5, 256.0)
    assert wait.grouping == "SHUFFLE" and source.grouping is None and wait.chain is None
    bolt = wait.tasks[2]
    assert (bolt.container, bolt.queue_depth, round(bolt.busy, 3), round(bolt.execute_latency_ms, 2)) == (
        1, 180, 0.998, 2.29)
    assert round(source.tasks[1].backpressure_ms) == 9454 and round(source.tasks[1].emit_rate) == 443


def test_the_recorded_saturated_bolt_is_under_provisioned_and_sized_for_the_offered_rate() -> None:
    metrics, topology, plan, execution = recorded()
    obs = observe(metrics, topology, plan, execution, topology_config(topology), now=100.0)
    found = diagnose(obs, [], settings())
    assert [(d.name, d.component) for d in found] == [("under_provisioned", "wait")]
    e = found[0].evidence
    # held back 94 % of the window, yet offered 3.4 times what it carried: the estimate is capped at 4 times
    assert e["backpressure"] == 0.937 and e["observed_rate"] == 435.9
    assert e["demand"] == 1743.7 and e["demand"] >= OFFERED  # 4 × 435.9, rounded
    decision = resolve(found[0], obs, [], settings(), [])
    # 1 / 2.29 ms = 437 tuples/s an instance: ceil(1,743.7 × 1/0.7 / 436.7) = 6 (5 carry 1,500 at 70 %)
    assert decision.action.parallelism == 6
    assert decision.expected["capacity_per_instance"] == 436.7
