"""The validator's every refusal, and repacking's exact moves."""
import copy

import pytest

from squall.idl import schema
from squall.packing import PackingError, diff_plans, pack, repack, validate_plan, with_parallelism
from packing_helpers import comp, layout, topo

T = topo([comp("a", 2), comp("b", 3, inputs=["a"])], {"topology.workers": 2})


def broken(mutate):
    plan = copy.deepcopy(pack(T))
    mutate(plan)
    return plan


def _drop_instance(p):
    p.containers[0].instances.pop()


def _dup_task(p):
    p.containers[1].instances[0].id.task_id = p.containers[0].instances[0].id.task_id


def _gap_index(p):
    p.containers[0].instances[0].id.component_index = 7


def _dup_index(p):
    i = p.containers[0].instances[0]
    p.containers[1].instances.append(schema.InstancePlan(
        id=schema.InstanceId(component=i.id.component, task_id=99, component_index=i.id.component_index),
        resources=i.resources))


def _resources_low(p):
    p.containers[0].resources = schema.Resources(cpu=0.5, ram_mb=256, disk_mb=256)


def _padding_low(p):
    p.containers[0].padding = schema.Resources(cpu=0.0, ram_mb=0, disk_mb=0)


def _over_cap(p):
    c = p.containers[0]
    c.resources = schema.Resources(cpu=99.0, ram_mb=c.resources.ram_mb, disk_mb=c.resources.disk_mb)


def _wrong_size(p):
    p.containers[0].instances[0].resources = schema.Resources(cpu=0.5, ram_mb=1, disk_mb=256)


def _container_zero(p):
    p.containers[0].id = 0


def _empty(p):
    p.containers.append(schema.ContainerPlan(id=9, instances=[], resources=p.containers[0].resources,
                                             padding=p.containers[0].padding))


def _unknown_component(p):
    p.containers[0].instances[0].id.component = "ghost"


@pytest.mark.parametrize("mutate, message", [
    (_drop_instance, r"component 'b' has 2 of 3 instances placed \(missing component indexes \[2\]\)"),
    (_dup_task, r"task id used twice"),
    (_gap_index, r"component index outside 0..1"),
    (_dup_index, r"component index placed twice"),
    (_resources_low, r"container 1: resources .* are below its instances"),
    (_padding_low, r"container 1: padding .* is below"),
    (_over_cap, r"cpu 99 is above the container capacity squall.container.max.cpu"),
    (_wrong_size, r"component 'a' asks for"),
    (_container_zero, r"container ids start at 1"),
    (_empty, r"container 9: holds no instances"),
    (_unknown_component, r"has no component 'ghost'"),
])
def test_validator_names_what_is_wrong(mutate, message):
    validate_plan(T, pack(T))
    with pytest.raises(PackingError, match=message):
        validate_plan(T, broken(mutate))


def test_worker_plan_must_have_the_worker_size():
    plan = copy.deepcopy(pack(T, granularity="worker"))
    plan.containers[0].resources = schema.Resources(cpu=1.9, ram_mb=2048, disk_mb=4096)
    with pytest.raises(PackingError, match="a worker has the fixed size"):
        validate_plan(T, plan)


# ------------------------------------------------------------------ repack

def test_scale_up_keeps_everything_in_place():
    plan = pack(T, algorithm="ffd")
    new, diff = repack(T, plan, {"b": 5})
    assert diff.moved == [] and diff.removed == []
    assert [(i.component, i.task_id, i.component_index) for i in diff.added] == [("b", 6, 3), ("b", 7, 4)]
    validate_plan(with_parallelism(T, {"b": 5}), new)
    old = {i.id.task_id: c.id for c in plan.containers for i in c.instances}
    now = {i.id.task_id: c.id for c in new.containers for i in c.instances}
    assert all(now[t] == old[t] for t in old)


def test_scale_up_roundrobin_spreads_new_tasks_over_existing_containers():
    plan = pack(T, algorithm="roundrobin")
    assert layout(plan) == [(1, ["a0", "b0", "b2"]), (2, ["a1", "b1"])]
    new, diff = repack(T, plan, {"b": 4})
    assert layout(new) == [(1, ["a0", "b0", "b2"]), (2, ["a1", "b1", "b3"])]
    assert diff.moved == []


def test_scale_down_frees_the_container_it_can_empty():
    t = topo([comp("a", 1), comp("b", 3)], {"topology.workers": 1})
    plan = pack(t, algorithm="ffd", granularity="worker")  # 3 per worker
    assert layout(plan) == [(1, ["a0", "b0", "b1"]), (2, ["b2"])]
    new, diff = repack(t, plan, {"b": 2})
    assert layout(new) == [(1, ["a0", "b0", "b1"])]
    assert [i.task_id for i in diff.removed] == [4] and diff.moved == [] and diff.renumbered == []


def test_scale_down_keeps_indexes_contiguous_by_renumbering():
    t = topo([comp("a", 1), comp("b", 3)], {"topology.workers": 1})
    plan = pack(t, algorithm="ffd", granularity="worker")
    new, diff = repack(t, plan, {"b": 1})
    # b2 (alone in container 2) goes first, then b1 from container 1; survivor b0 keeps index 0
    assert layout(new) == [(1, ["a0", "b0"])]
    t2 = topo([comp("a", 1), comp("b", 4)], {"topology.workers": 2})
    plan2 = pack(t2, algorithm="ffd", granularity="worker")
    assert layout(plan2) == [(1, ["a0", "b0", "b1"]), (2, ["b2", "b3"])]
    new2, diff2 = repack(t2, plan2, {"b": 2})
    # container 2 (fewest instances, all b) is emptied; b0 b1 stay
    assert layout(new2) == [(1, ["a0", "b0", "b1"])]
    new3, diff3 = repack(t2, plan2, {"b": 3, "a": 1})
    assert layout(new3) == [(1, ["a0", "b0", "b1"]), (2, ["b2"])]
    # remove from the container with the fewest instances: b3 goes
    t4 = topo([comp("a", 2), comp("b", 3)], {"topology.workers": 1})
    plan4 = pack(t4, algorithm="ffd", granularity="worker")
    assert layout(plan4) == [(1, ["a0", "a1", "b0"]), (2, ["b1", "b2"])]
    new4, diff4 = repack(t4, plan4, {"b": 2, "a": 1})
    # a: a1 removed from container 1 (only holder); b: container 2 has fewer -> b2 removed; then b1 fits
    # container 1's freed room and moves there: container 2 is given back
    assert layout(new4) == [(1, ["a0", "b0", "b1"])]
    assert diff4.renumbered == [] and [i.component_index for i in diff4.moved] == [1]
    new5, diff5 = repack(t4, plan4, {"b": 1})
    # b2 then b1 leave container 2 (emptied); b0 keeps index 0
    assert layout(new5) == [(1, ["a0", "a1", "b0"])]


def test_renumbered_instances_keep_task_id_and_container():
    t = topo([comp("a", 3)], {"topology.workers": 1})
    plan = pack(t, algorithm="ffd", granularity="worker")
    assert layout(plan) == [(1, ["a0", "a1", "a2"])]
    t3 = topo([comp("a", 1), comp("x", 2, cpu=0.5)], {"topology.workers": 1})
    plan3 = pack(t3, algorithm="ffd", granularity="worker")
    assert layout(plan3) == [(1, ["a0", "x0", "x1"])]
    # put a's index 0 where removal is preferred, so the survivor must take index 0
    t5 = topo([comp("a", 2), comp("x", 2)], {"topology.workers": 1})
    plan5 = pack(t5, algorithm="ffd", granularity="worker")
    assert layout(plan5) == [(1, ["a0", "a1", "x0"]), (2, ["x1"])]
    swapped = copy.deepcopy(plan5)
    c1, c2 = swapped.containers
    c1.instances[2], c2.instances[0] = c2.instances[0], c1.instances[2]  # x1 in 1, x0 alone in 2
    new, diff = repack(t5, swapped, {"x": 1})
    assert layout(new) == [(1, ["a0", "a1", "x0"])]
    assert [(o.component_index, n.component_index, n.task_id) for o, n in diff.renumbered] == [(1, 0, 4)]
    assert diff.moved == [] and [i.task_id for i in diff.removed] == [3]


def test_roundrobin_new_container_count_moves_only_what_balances():
    t = topo([comp("a", 6)], {"topology.workers": 2})
    plan = pack(t, algorithm="roundrobin")
    new, diff = repack(t, plan, {}, containers=3)
    assert [len(c.instances) for c in new.containers] == [2, 2, 2]
    assert len(diff.moved) == 2 and diff.added == [] and diff.removed == []
    fewer, diff2 = repack(t, plan, {}, containers=1)
    assert layout(fewer) == [(1, ["a0", "a1", "a2", "a3", "a4", "a5"])]
    assert sorted(i.component_index for i in diff2.moved) == [1, 3, 5]


def test_repack_refusals():
    plan = pack(T, algorithm="ffd")
    with pytest.raises(PackingError, match="only roundrobin takes a container count; ffd chooses it"):
        repack(T, plan, {}, containers=3)
    with pytest.raises(PackingError, match="component 'nope': the topology has no such component"):
        repack(T, plan, {"nope": 2})
    with pytest.raises(PackingError, match="component 'a': parallelism must be a positive integer, got 0"):
        repack(T, plan, {"a": 0})
    with pytest.raises(PackingError, match=r"containers=9: round-robin needs between 1 and the topology's 5 tasks"):
        repack(T, pack(T, algorithm="roundrobin"), {}, containers=9)
    with pytest.raises(PackingError, match="only roundrobin takes a container count; auto chooses it"):
        repack(T, pack(T), {}, containers=3)


def test_repack_moves_instances_out_of_a_container_that_no_longer_fits():
    t = topo([comp("a", 4, ram=1000)], {"squall.container.max.ram.mb": 4500})
    plan = pack(t, algorithm="ffd")
    assert layout(plan) == [(1, ["a0", "a1", "a2", "a3"])]
    bigger = topo([comp("a", 4, ram=2000)], {"squall.container.max.ram.mb": 4500})
    new, diff = repack(bigger, plan, {})
    assert layout(new) == [(1, ["a0", "a1"]), (2, ["a2", "a3"])]
    assert [i.task_id for i in diff.moved] == [3, 4]


def test_unchanged_repack_is_the_same_plan():
    plan = pack(T, algorithm="rcrr")
    new, diff = repack(T, plan, {})
    assert new == plan and diff == diff_plans(plan, plan)
    assert diff.added == diff.removed == diff.moved == []


def test_a_spout_task_id_above_what_a_tree_root_holds_is_refused_naming_the_spout():
    from squall.logical import MAX_SPOUT_TASK

    plan = copy.deepcopy(pack(T))
    spout = next(i for c in plan.containers for i in c.instances if i.id.component == "a")
    spout.id.task_id = MAX_SPOUT_TASK + 1
    with pytest.raises(PackingError, match=rf"spout 'a': task id {MAX_SPOUT_TASK + 1} is above {MAX_SPOUT_TASK}"):
        validate_plan(T, plan)
    bolt = next(i for c in plan.containers for i in c.instances if i.id.component == "b")
    spout.id.task_id, bolt.id.task_id = bolt.id.task_id, MAX_SPOUT_TASK + 1  # a bolt's id is not bounded
    validate_plan(T, plan)
