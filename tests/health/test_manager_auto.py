"""Auto mode end to end (real processes on the local cluster): an over-loaded bolt is scaled up by the health
manager and, at least once, every id the spout emitted is acked."""
import glob
import json
import os

from health_paced import topology

from squall.state import Kind
from squall.testing import wait_until

TOPOLOGIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "topologies")
IDS = 12000


def acked(out_dir):
    ids = []
    for path in glob.glob(os.path.join(out_dir, "acked-*.json")):
        with open(path) as f:
            ids += json.load(f)["acked"]
    return ids


def test_auto_scales_the_overloaded_bolt_up_and_every_id_is_acked(squall_cluster, tmp_path):
    """``paced`` offers 1,000 ids/s to a sink that carries 500/s per task (2 ms a tuple)."""
    cluster = squall_cluster
    out_dir = str(tmp_path / "out")
    os.mkdir(out_dir)
    cluster.submit(topology, {"health.out.dir": out_dir, "health.ids": IDS, "squall.health.mode": "auto",
                              "squall.health.interval.secs": 1, "squall.health.stabilization.secs": 2})

    def sink_tasks():
        plan = cluster.state.get(Kind.PACKING_PLAN, "paced")
        return sum(1 for c in plan.containers for i in c.instances if i.id.component == "sink")

    wait_until(lambda: sink_tasks() > 1, timeout=60, what="the health manager to scale the sink up")
    wait_until(lambda: len(set(acked(out_dir))) == IDS, timeout=90, what=f"all {IDS} ids acked")
    assert sorted(set(acked(out_dir))) == list(range(IDS))
    cluster.kill("paced")
