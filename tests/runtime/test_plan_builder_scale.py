"""PlanBuilder at 1,000 containers x 20 instances: the plan it builds, and when it builds one.

The topology master asks for the plan after every registration; these check that what it gets is
exactly the plan of the packing plan and registrations (written out here the plain way), at every
step, through an update and a lost stream manager."""
from squall.idl import schema
from squall.runtime.tmaster import PlanBuilder

RES = schema.Resources(cpu=0.1, ram_mb=64, disk_mb=16)
CONTAINERS, PER_CONTAINER = 1000, 20


def packing(plan_id, containers, per_container, first_task=1):
    return schema.PackingPlan(id=plan_id, algorithm="x", granularity="task", containers=[
        schema.ContainerPlan(id=c, resources=RES, padding=RES, instances=[
            schema.InstancePlan(id=schema.InstanceId("comp", t, t - first_task), resources=RES)
            for t in range(first_task + (c - 1) * per_container, first_task + c * per_container)])
        for c in range(1, containers + 1)])


def registration(container_plan, pid_base=100_000):
    cid = container_plan.id
    return schema.RegisterStMgr(
        stmgr=schema.StMgrLocation(container=cid, host="h", data_port=2000 + cid, pid=cid),
        instances=[schema.InstanceLocation(id=schema.InstanceId(i.id.component, i.id.task_id, -1), container=cid,
                                           pid=pid_base + i.id.task_id) for i in container_plan.instances])


def expected(plan, regs):
    """The physical plan, the plain way: containers by id, each one's instances by task id."""
    instances = []
    for c in sorted(plan.containers, key=lambda c: c.id):
        pids = {i.id.task_id: i.pid for i in regs[c.id].instances}
        instances += [schema.InstanceLocation(id=i.id, container=c.id, pid=pids[i.id.task_id])
                      for i in sorted(c.instances, key=lambda i: i.id.task_id)]
    return schema.PhysicalPlan(topology_name="t", packing_plan_id=plan.id, status=schema.TopologyStatus.RUNNING,
                               tmaster=None, stmgrs=[regs[c.id].stmgr for c in sorted(plan.containers,
                                                                                         key=lambda c: c.id)],
                               instances=instances)


def test_a_thousand_containers_build_the_plan_once_all_registered():
    plan = packing("p1", CONTAINERS, PER_CONTAINER)
    regs = {c.id: registration(c) for c in plan.containers}
    builder = PlanBuilder("t", None, plan, schema.TopologyStatus.RUNNING)
    for cid in reversed(range(1, CONTAINERS + 1)):  # registrations in any order
        assert builder.build() is None
        assert builder.register(regs[cid]) is None
    pplan = builder.build()
    assert pplan == expected(plan, regs)
    assert len(pplan.instances) == CONTAINERS * PER_CONTAINER and builder.missing() == {}


def test_a_lost_stream_manager_and_a_partial_registration_hold_the_plan_back():
    plan = packing("p1", CONTAINERS, PER_CONTAINER)
    regs = {c.id: registration(c) for c in plan.containers}
    builder = PlanBuilder("t", None, plan, schema.TopologyStatus.RUNNING)
    for reg in regs.values():
        builder.register(reg)
    builder.unregister(500)
    assert builder.build() is None and builder.missing() == {500: "stmgr"}
    partial = regs[500].instances[:-1]
    builder.register(schema.RegisterStMgr(stmgr=regs[500].stmgr, instances=partial))
    assert builder.build() is None and builder.missing() == {500: [500 * PER_CONTAINER]}
    assert builder.waiting() == f"1 containers: {{500: [{500 * PER_CONTAINER}]}}"
    builder.register(regs[500])
    assert builder.build() == expected(plan, regs)


def test_an_update_waits_for_the_changed_containers_only_and_drops_gone_ones():
    plan = packing("p1", CONTAINERS, PER_CONTAINER)
    builder = PlanBuilder("t", None, plan, schema.TopologyStatus.RUNNING)
    for c in plan.containers:
        builder.register(registration(c))
    # one more task in every container but the last, which goes: its tasks move to the others
    bigger = packing("p2", CONTAINERS - 1, PER_CONTAINER + 1)
    builder.set_packing(bigger)
    assert CONTAINERS not in builder.registrations and builder.known_containers() == set(range(1, CONTAINERS))
    assert builder.build() is None and len(builder.missing()) == CONTAINERS - 1
    assert builder.waiting().startswith(f"{CONTAINERS - 1} containers: {{1: [") and "and 994 more" in builder.waiting()
    regs = {c.id: registration(c, pid_base=200_000) for c in bigger.containers}
    for cid, reg in regs.items():
        assert builder.build() is None
        builder.register(reg)
    assert builder.build() == expected(bigger, regs)
    refused = builder.register(registration(plan.containers[-1]))
    assert refused == (f"container {CONTAINERS} is not in packing plan p2 (containers: 1, 2, 3, 4, 5, 6, 7, 8, 9, "
                       f"10, ... ({CONTAINERS - 1} in all))")
