"""Role state machines without sockets: executor diff, plan builder, metrics (the stream manager's:
test_stmgr_state.py)."""
import json

from squall import Bolt, Spout
from squall.idl import schema
from squall.runtime.executor import ProcessSpec, diff, wanted_processes
from squall.metrics_schema import FIELD_NAMES
from squall.runtime.metricsmgr import row_dict
from squall.runtime.tmaster import MetricsStore, PlanBuilder

RES = schema.Resources(cpu=1.0, ram_mb=128, disk_mb=1)


def cplan(cid, tasks):
    return schema.ContainerPlan(id=cid, resources=RES, padding=RES, instances=[
        schema.InstancePlan(id=schema.InstanceId(comp, t, i), resources=RES) for i, (comp, t) in enumerate(tasks)])


def test_executor_diff_touches_only_the_difference():
    before = wanted_processes(1, cplan(1, [("a", 1), ("b", 2)]))
    after = wanted_processes(1, cplan(1, [("a", 1), ("b", 3)]))
    assert set(before) == {"metricsmgr", "stmgr", "instance-1-a", "instance-2-b"}
    start, stop = diff(before, after)
    assert [s.name for s in start] == ["instance-3-b"] and stop == ["instance-2-b"]
    assert diff(after, after) == ([], [])
    assert set(wanted_processes(0, None)) == {"metricsmgr", "health", "tmaster"}
    assert wanted_processes(0, None)["tmaster"] == ProcessSpec("tmaster", "tmaster")
    assert set(wanted_processes(0, None, tmasters=2)) == {"metricsmgr", "health", "tmaster-0", "tmaster-1"}


def reg(cid, tasks, pid=10):
    return schema.RegisterStMgr(
        stmgr=schema.StMgrLocation(container=cid, host="h", data_port=1000 + cid, pid=pid),
        instances=[schema.InstanceLocation(id=schema.InstanceId(c, t, -1), container=cid, pid=pid + t)
                   for c, t in tasks])


def test_plan_builder_waits_for_everything_and_refuses_unknown_containers():
    packing = schema.PackingPlan(id="p1", algorithm="x", granularity="task",
                                 containers=[cplan(1, [("a", 1)]), cplan(2, [("b", 2), ("b", 3)])])
    b = PlanBuilder("t", None, packing, schema.TopologyStatus.RUNNING)
    assert "not in packing plan" in b.register(reg(9, []))
    b2 = PlanBuilder("t", None, packing, 1)
    b2.register(reg(1, [("a", 1), ("a", 7)]))
    b2.register(reg(2, [("b", 2), ("b", 3)]))
    assert [i.id.task_id for i in b2.build().instances] == [1, 2, 3]  # extra (retiring) task left out
    assert b.register(reg(1, [("a", 1)])) is None
    assert b.build() is None and b.missing() == {2: "stmgr"}
    b.register(reg(2, [("b", 2)]))
    assert b.build() is None and b.missing() == {2: [3]}
    b.register(reg(2, [("b", 2), ("b", 3)]))
    pplan = b.build()
    assert [(i.id.task_id, i.container, i.pid, i.id.component_index) for i in pplan.instances] == [
        (1, 1, 11, 0), (2, 2, 12, 0), (3, 2, 13, 1)]
    b.status = schema.TopologyStatus.PAUSED
    assert b.build().status == schema.TopologyStatus.PAUSED
    assert b.build().max_spout_pending is None
    b.max_spout_pending = 200  # set while running (squall health's pending tuner)
    assert b.build().max_spout_pending == 200


def test_metrics_rows_have_the_documented_columns_and_totals():
    row = schema.MetricsRow(ts=1.0, interval_secs=2.0, process="instance", component="c", task_id=3,
                            emit_count=10, execute_count=4, ack_count=0, fail_count=0, execute_latency_ms=0.5,
                            process_latency_ms=None, complete_latency_ms=None, queue_depth=0,
                            backpressure_ms=0.0, user=json.dumps({"m": 1}), pid=1, container=1)
    line = row_dict(row, "t", "r", "h", (12.5, 30.0, 2), {3: (0.5, 256)})
    assert tuple(line) == FIELD_NAMES and line["cpu_requested"] == 0.5 and line["user"] == {"m": 1}
    store = MetricsStore()
    store.add(row)
    store.add(row)
    resp = store.response()
    assert resp.components[0].emitted == 20 and resp.components[0].emit_rate == 5.0
    assert resp.tasks[0].execute_latency_ms == 0.5


def test_columns_match_docs_metrics_md():
    import os
    import re

    doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "metrics.md")
    names = re.findall(r"^\| `([a-z_]+)` \|", open(doc).read(), re.M)
    assert tuple(names) == FIELD_NAMES


def test_spout_burst_stops_at_the_first_complete_batch():
    """A spout emits no more than one batch ahead of what its socket took (backpressure reaches next_tuple)."""
    import os

    from squall.loader import load_topology_file
    from squall.runtime.instance import make_instance

    here = os.path.dirname(os.path.abspath(__file__))
    topology = load_topology_file(os.path.join(here, "topologies", "rt_busy.py")).plan

    class Hundred(Spout):
        def initialize(self, config, context):
            pass

        def next_tuple(self):
            for i in range(100):
                self._collector.emit([i], "default", None, None, None)

    inst = make_instance(topology, "busy", 1, 1, None, batch_size=1000, component_obj=Hundred())
    pplan = schema.PhysicalPlan(
        topology_name=topology.name, packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation(topology_name=topology.name, host="h", control_port=1, pid=1, run_id="r"),
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)],
        instances=[schema.InstanceLocation(id=schema.InstanceId("busy", 1, 0), container=1, pid=1),
                   schema.InstanceLocation(id=schema.InstanceId("sink", 2, 0), container=1, pid=2)])
    inst.on_physical_plan(pplan)
    assert inst.spout_burst(64)
    assert inst.emit_count == 1000 and inst.out  # one batch of 1000 tuples, not 64 x 100
    inst.out.clear()
    assert inst.spout_burst(64) and inst.emit_count == 2000


def test_frames_from_a_sender_newer_than_the_plan_wait_for_the_plan():
    """A scale-up can reach a new sender before its receiver: its tuples keep their fields."""
    import os

    import msgpack

    from squall.loader import load_topology_file
    from squall.runtime.instance import make_instance
    from squall.runtime.protocol import data_frame

    here = os.path.dirname(os.path.abspath(__file__))
    topology = load_topology_file(os.path.join(here, "topologies", "rt_busy.py")).plan

    seen = []

    class Recorder(Bolt):
        def initialize(self, config, context):
            pass

        def process(self, tup):
            seen.append((tup.component, tup.task, tup["n"]))

    def plan(*busy_tasks):
        locations = [schema.InstanceLocation(id=schema.InstanceId("sink", 9, 0), container=1, pid=9)]
        locations += [schema.InstanceLocation(id=schema.InstanceId("busy", t, i), container=1, pid=t)
                      for i, t in enumerate(busy_tasks)]
        return schema.PhysicalPlan(
            topology_name=topology.name, packing_plan_id=f"p{len(busy_tasks)}", status=schema.TopologyStatus.RUNNING,
            tmaster=schema.TMasterLocation(topology_name=topology.name, host="h", control_port=1, pid=1, run_id="r"),
            stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)], instances=locations)

    inst = make_instance(topology, "sink", 9, 1, None, component_obj=Recorder())
    inst.on_physical_plan(plan(1))
    frame = data_frame(9, msgpack.packb([2, [["default", [[7]]]], 0]))  # from task 2: not in the plan yet
    assert inst.on_data(frame, 0.0) is None and seen == []
    inst.on_physical_plan(plan(1, 2))
    assert inst.on_data(frame, 0.0) == 1
    assert seen == [("busy", 2, 7)]
