"""Ready means ready: frames for a restarted instance wait for it, and RUNNING waits for it too."""
import glob
import json
import os
import signal

from e2e_harness import wait_until

from squall.idl import schema
from squall.state import Kind
from squall.state.status import unconnected


def show(cluster, name):
    return json.loads(cluster.squall("show", name, "--json")[0])


def sink_pid(data):
    return next(p["pid"] for p in data["processes"] if p["process"].startswith("instance sink"))


def stmgr_rows(run_dir):
    rows = []
    for path in glob.glob(os.path.join(run_dir, "metrics", "container-*.jsonl")):
        with open(path) as f:
            rows += [r for r in map(json.loads, f) if r["process"] == "stmgr"]
    return rows


def test_no_frame_is_dropped_for_a_restarted_instance_before_it_connects(cluster, tmp_path):
    out = str(tmp_path / "out")
    os.mkdir(out)
    cluster.submit("slow_spout", f"e2e.out.dir={out}", "e2e.ids=1000000", "e2e.sleep=0.005",
                   "topology.builtin.metrics.bucket.size.secs=0.5")
    before = show(cluster, "slow_spout")
    old = sink_pid(before)
    wait_until(lambda: glob.glob(os.path.join(out, f"seen-*-{old}.log")), what="the sink to process ids")
    os.kill(old, signal.SIGKILL)
    wait_until(lambda: sink_pid(show(cluster, "slow_spout")) not in (None, old), timeout=30,
               what="the sink to be restarted")
    new = sink_pid(show(cluster, "slow_spout"))
    wait_until(lambda: show(cluster, "slow_spout")["status"] == "RUNNING", timeout=30, what="RUNNING again")
    physical = cluster.state().get(Kind.PHYSICAL_PLAN, "slow_spout")
    assert new in {i.pid for i in physical.instances}, "RUNNING before the restarted sink rejoined the plan"
    wait_until(lambda: glob.glob(os.path.join(out, f"seen-*-{new}.log")), what="the restarted sink to process ids")
    run_dir = cluster.run_dir("slow_spout")
    wait_until(lambda: len(stmgr_rows(run_dir)) >= 8, what="stream manager metrics after the restart")
    cluster.squall("kill", "slow_spout")
    dropped = sum(r["user"]["frames_dropped"] for r in stmgr_rows(run_dir))
    assert dropped == 0, f"{dropped} frames dropped while the sink was restarting"


class _Record:
    def __init__(self, container, processes):
        self.container, self.processes = container, processes


class _Process:
    def __init__(self, name, pid):
        self.name, self.pid = name, pid


def test_status_names_what_the_physical_plan_still_lists_with_a_dead_pid():
    pplan = schema.PhysicalPlan(
        topology_name="t", packing_plan_id="p", status=schema.TopologyStatus.RUNNING, tmaster=None,
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=1, pid=10)],
        instances=[schema.InstanceLocation(id=schema.InstanceId("count", 3, 0), container=1, pid=30),
                   schema.InstanceLocation(id=schema.InstanceId("split", 4, 0), container=1, pid=40)])
    records = {1: _Record(1, [_Process("stmgr", 10), _Process("instance-3-count", 30),
                              _Process("instance-4-split", 40)])}
    assert unconnected(pplan, records) == []
    records[1].processes[1] = _Process("instance-3-count", 31)  # restarted, not yet in the plan
    records[1].processes[0] = _Process("stmgr", 11)
    assert unconnected(pplan, records) == [
        "container 1: its stream manager (pid 11) has not registered yet",
        "container 1: instance count task 3 has not connected to its stream manager yet"]
    records[1].processes[1] = _Process("instance-3-count", 0)  # down: its old pid is not connected either
    records[1].processes[0] = _Process("stmgr", 10)
    assert unconnected(pplan, records) == [
        "container 1: instance count task 3 has not connected to its stream manager yet"]
    records[1].processes[1] = _Process("chain-3-count", 30)  # a process running a chain: tasks share its pid
    records[1].processes[2] = _Process("metricsmgr", 99)
    pplan.instances[1].pid = 30
    assert unconnected(pplan, records) == []


def test_submit_returns_once_every_instance_ran_initialize(cluster, tmp_path):
    """initialize() takes 3 s, longer than a registered instance used to be watched: submit waits for it
    (its executor records it: runtime/readiness.py), and so does a restarted instance's status."""
    out = tmp_path / "out"
    out.mkdir()
    cluster.submit("slow_init", f"e2e.out.dir={out}")
    assert sorted(p.name for p in out.iterdir()) == ["initialized-2", "initialized-3"]
    records = cluster.state().container_records("slow_init")
    flags = {p.name: p.initialized for r in records for p in r.processes}
    assert {n: f for n, f in flags.items() if n.startswith("instance")} == {
        "instance-1-idle": True, "instance-2-slow": True, "instance-3-slow": True}
    assert all(f is None for n, f in flags.items() if not n.startswith("instance"))

    def slow_process():
        return next(p for r in cluster.state().container_records("slow_init") for p in r.processes
                    if p.name == "instance-2-slow")

    victim = slow_process().pid
    os.kill(victim, signal.SIGKILL)

    def restarted():
        fresh = slow_process()
        return fresh if fresh.pid not in (0, victim) else None

    def shown_state():
        return next(p["state"] for p in show(cluster, "slow_init")["processes"] if p["pid"] == fresh.pid)

    fresh = wait_until(restarted, timeout=30, what="the killed instance to be restarted")
    assert fresh.initialized is False  # a new process: not through initialize() yet
    assert shown_state() == "starting"  # (its initialize() takes 3 s)
    wait_until(lambda: restarted().initialized, timeout=30, what="the restarted instance to say it is initialized")
    assert shown_state() == "up"
    cluster.squall("kill", "slow_init")
