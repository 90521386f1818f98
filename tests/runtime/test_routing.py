import subprocess
import sys
from collections import Counter

import msgpack
import pytest

from squall.runtime.instance import make_instance
from squall.runtime.protocol import DATA_HEADER_SIZE, FrameReader, frame_dest
from squall.runtime.routing import RoutingError, build_routes, stable_hash

import rt_groupings


def routes_for(topology, component="src", containers=None):
    from squall.logical import task_ids

    tasks = task_ids(topology)
    containers = containers or {t: 1 + t % 2 for ts in tasks.values() for t in ts}
    return tasks, build_routes(topology, component, tasks, containers, 1)


def test_stable_hash_is_the_same_in_another_process():
    keys = [["alpha"], ["beta", 3], [1.5, None, "ü"]]
    here = [stable_hash(k) for k in keys]
    code = ("import sys, json; from squall.runtime.routing import stable_hash; "
            f"print(json.dumps([stable_hash(k) for k in {keys!r}]))")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123"}).stdout
    assert here == __import__("json").loads(there)


def test_groupings_route_as_documented():
    topo = rt_groupings.topology.plan
    tasks, routes = routes_for(topo)
    r = routes["default"]
    sinks = {c: tasks[c] for c in ("shuffle", "fields", "all", "glob", "local", "pkey", "custom")}
    seen = {c: Counter() for c in sinks}
    owner = {t: c for c, ts in sinks.items() for t in ts}
    by_key: dict = {}
    for i in range(300):
        values = [f"k{i % 10}", i]
        for t in r.targets(values, None):
            seen[owner[t]][t] += 1
            if owner[t] == "fields":
                by_key.setdefault(values[0], set()).add(t)
    # shuffle: even spread
    assert sorted(seen["shuffle"].values()) == [100, 100, 100]
    # fields: each key to one task
    assert all(len(ts) == 1 for ts in by_key.values())
    # all: every task every tuple
    assert all(seen["all"][t] == 300 for t in tasks["all"])
    # global: lowest task only
    assert set(seen["glob"]) == {min(tasks["glob"])}
    # local-or-shuffle: container 1 tasks only (those exist)
    assert set(seen["local"]) == {t for t in tasks["local"] if 1 + t % 2 == 1}
    # partial key: each key on at most two tasks
    assert sum(seen["pkey"].values()) == 300
    # custom: the object chose
    assert set(seen["custom"]) == {max(tasks["custom"])}


def test_direct_streams():
    topo = rt_groupings.topology.plan
    tasks, routes = routes_for(topo)
    d = routes["direct"]
    target = tasks["direct_sink"][1]
    assert d.targets(["x", 1], target) == [target]
    with pytest.raises(RoutingError, match="direct_task=<task id>"):
        d.targets(["x", 1], None)
    with pytest.raises(RoutingError, match="does not consume"):
        d.targets(["x", 1], 9999)
    with pytest.raises(RoutingError, match="not declared direct"):
        routes["default"].targets(["x", 1], target)


def _plan(topology, containers):
    from squall.idl import schema
    from squall.logical import task_ids

    insts = []
    for comp, ts in task_ids(topology).items():
        for i, t in enumerate(ts):
            insts.append(schema.InstanceLocation(id=schema.InstanceId(comp, t, i), container=containers(t), pid=1))
    return schema.PhysicalPlan(topology_name=topology.name, packing_plan_id="p", status=1, tmaster=None,
                               stmgrs=[], instances=insts)


def test_instance_batches_per_destination_and_keeps_stream_order():
    topo = rt_groupings.topology.plan
    from squall.logical import task_ids

    src_task = task_ids(topo)["src"][0]
    inst = make_instance(topo, "src", src_task, 1, {}, batch_size=4, component_obj=rt_groupings.Src())
    inst.on_physical_plan(_plan(topo, lambda t: 1))
    glob_task = min(task_ids(topo)["glob"])
    for i in range(3):
        inst.emit([f"k{i}", i], "default", None, None, None)
    inst.emit(["d", 9], "direct", None, None, task_ids(topo)["direct_sink"][0])
    assert not inst.out  # below the batch size: nothing sent yet
    inst.emit(["k3", 3], "default", None, None, None)  # 4th tuple to the global task: batch full
    frames = {frame_dest(f): f for f in FrameReader().feed(bytes(inst.out))}
    # full batches went out (global, all, custom targets); shuffled ones (3 targets) did not
    assert glob_task in frames and not set(frames) & set(task_ids(topo)["shuffle"])
    src, runs, _epoch = msgpack.unpackb(frames[glob_task][DATA_HEADER_SIZE:])
    assert src == src_task and runs == [["default", [["k0", 0], ["k1", 1], ["k2", 2], ["k3", 3]]]]
    inst.out.clear()
    inst.flush_all()
    dests = [frame_dest(f) for f in FrameReader().feed(bytes(inst.out))]
    assert task_ids(topo)["direct_sink"][0] in dests and glob_task not in dests
    with pytest.raises(RoutingError, match="has fields"):
        inst.emit(["only one"], "default", None, None, None)
    with pytest.raises(RoutingError, match="no output stream"):
        inst.emit(["a", 1], "nope", None, None, None)
