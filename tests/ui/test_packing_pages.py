"""The packing view a page of containers at a time (a 1,000-container topology has 20,000 instances): which
containers, instances, processes and part of the physical plan each page holds, and a page out of range."""
import pytest

from squall.idl import schema
from squall.packing.pack import pack
from squall.state import Kind, LocalStateManager, StateAddress, member
from squall.testing.control_plane import FAKE_PID, SimulatedContainer, instance_locations, scale_topology, write_run
from squall.ui.metrics import BadRequest, MetricsCache
from squall.ui.views import PACKING_PAGE, packing

CONTAINERS = 60  # with container 0: pages of 50 and 11


def test_each_page_holds_its_containers_their_processes_and_their_part_of_the_physical_plan(tmp_path):
    with LocalStateManager(str(tmp_path / "state")) as state:
        topology = scale_topology("big", CONTAINERS)
        plan = pack(topology)
        write_run(state, StateAddress("local", str(tmp_path / "state")), str(tmp_path / "run"), topology, plan)
        regs = [SimulatedContainer(c.id, instance_locations(c)).registration() for c in plan.containers]
        state.put(Kind.PHYSICAL_PLAN, "big", schema.PhysicalPlan(
            topology_name="big", packing_plan_id=plan.id, status=1,
            tmaster=schema.TMasterLocation(topology_name="big", host="h", control_port=1, pid=2, run_id="r"),
            stmgrs=[r.stmgr for r in regs], instances=[i for r in regs for i in r.instances]))
        for c in plan.containers:
            state.create(Kind.CONTAINER, member("big", c.id), schema.ContainerStatus(
                container=c.id, host="h", executor_pid=FAKE_PID - c.id, updated=1.0,
                processes=[schema.ProcessStatus(name="stmgr", pid=FAKE_PID - c.id, restarts=0, crashes=0,
                                                 log_file="stmgr.log")]))
        metrics = MetricsCache(state)
        pages = [packing(state, metrics, "big", page) for page in (1, 2)]
        wanted = [list(range(0, 50)), list(range(50, CONTAINERS + 1))]
        by_id = {c.id: c for c in plan.containers}
        for page, ids in zip(pages, wanted):
            assert page["page"] == {"page": pages.index(page) + 1, "pages": 2, "per_page": PACKING_PAGE,
                                    "containers": CONTAINERS + 1, "instances": 20 * CONTAINERS}
            assert [c["id"] for c in page["containers"]] == ids
            shown = [c for c in ids if c]
            assert [[i["task_id"] for i in c["instances"]] for c in page["containers"] if c["id"]] == [
                sorted(i.id.task_id for i in by_id[c].instances) for c in shown]
            assert [s["container"] for s in page["physical_plan"]["stmgrs"]] == shown
            assert sorted(i["task_id"] for i in page["physical_plan"]["instances"]) == sorted(
                i.id.task_id for c in shown for i in by_id[c].instances)
            assert [(p["container"], p["process"]) for p in page["processes"]] == [
                x for c in shown for x in ((c, "executor"), (c, "stmgr"))]
            assert page["metrics_error"] and "no running topology master" in page["metrics_error"]
        for bad in (0, 3):
            with pytest.raises(BadRequest, match=rf"page {bad}: topology 'big' has 2 pages of 50 containers \(1-2\)"):
                packing(state, metrics, "big", bad)
