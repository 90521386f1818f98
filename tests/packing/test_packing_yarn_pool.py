"""YARN shapes and dynamic resource pools: exact numbers and trajectories."""
import pytest

from squall.conf import base_config
from squall.idl import schema
from squall.packing import (Amount, NodePool, PackingError, PoolSample, normalise, pack, place,
                            tmaster_container_resources, yarn_shapes)
from packing_helpers import comp, topo


def R(cpu, ram, disk=0):
    return schema.Resources(cpu=cpu, ram_mb=ram, disk_mb=disk)


def test_normalise_rounds_memory_up_and_vcores_up():
    config = base_config()
    assert normalise(R(1.85, 992), config) == (1024, 2)
    assert normalise(R(2.0, 1025), config) == (2048, 2)
    assert normalise(R(0.1, 1), config) == (1024, 1)
    assert normalise(R(3.001, 3072), config) == (3072, 4)


def plan_of(*sizes):
    return schema.PackingPlan(id="p", algorithm="ffd", granularity="task", containers=[
        schema.ContainerPlan(id=i + 1, instances=[], resources=R(cpu, ram), padding=R(0, 0)) for i, (cpu, ram) in enumerate(sizes)
    ])


def test_shapes_and_rounding_waste():
    shapes = yarn_shapes(plan_of((1.5, 900), (1.2, 1000), (3.5, 3000)))
    assert [(s.memory_mb, s.vcores, s.containers) for s in shapes.shapes] == [(1024, 2, (1, 2)), (3072, 4, (3,))]
    assert shapes.rounding_waste_mb == (1024 - 900) + (1024 - 1000) + (3072 - 3000)
    assert shapes.rounding_waste_vcores == pytest.approx(0.5 + 0.8 + 0.5)
    assert shapes.merge_waste_mb == 0


def test_merging_shapes_reports_the_waste_it_adds():
    plan = plan_of((1, 1000), (1, 1000), (1, 2000), (4, 8000))
    merged = yarn_shapes(plan, max_shapes=2)
    # 1024/1 x2 and 2048/1 merge (cheapest), 8192/4 stays
    assert [(s.memory_mb, s.vcores, s.containers) for s in merged.shapes] == [(2048, 1, (1, 2, 3)), (8192, 4, (4,))]
    assert merged.merge_waste_mb == 2048 and merged.merge_waste_vcores == 0
    one = yarn_shapes(plan, max_shapes=1)
    assert [(s.memory_mb, s.vcores) for s in one.shapes] == [(8192, 4)]
    assert one.merge_waste_mb == 3 * 8192 - (1024 + 1024 + 2048)


def test_tmaster_container_zero_is_included_on_request():
    shapes = yarn_shapes(plan_of((1, 1000)), tmaster=tmaster_container_resources())
    assert shapes.by_container[0] == (1024, 1)


def test_too_big_for_yarn_names_the_component():
    big = {"squall.container.max.ram.mb": 16384, "squall.container.max.cpu": 8}  # above YARN's caps
    t = topo([comp("small", 1, ram=512), comp("hog", 3, ram=3000)], big)
    plan = pack(t, algorithm="ffd")  # one container of ~10 GB: allowed by squall, not by YARN
    with pytest.raises(PackingError, match=r"container 1 needs 10240 MB .*squall.yarn.max.allocation.mb=8192; component 'hog' makes it that big \(3 instances, 9000 MB\)"):
        yarn_shapes(plan)
    cpu_hog = topo([comp("spin", 9, cpu=0.5, ram=64)], big)
    with pytest.raises(PackingError, match=r"needs 5 vcores .*squall.yarn.max.allocation.vcores=4; component 'spin'"):
        yarn_shapes(pack(cpu_hog, algorithm="ffd"))
    worker = topo([comp("a", 1)], {"squall.worker.ram.mb": 9000})
    with pytest.raises(PackingError, match="lower squall.worker.ram.mb"):
        yarn_shapes(pack(worker, granularity="worker"))


# ------------------------------------------------------------------ pools

def pool(**kw):
    return NodePool("n1", Amount(8.0, 16000.0), target=0.8, high=0.9, low=0.7, alpha=0.5, **kw)


def test_free_is_the_smaller_of_unallocated_and_target_headroom():
    p = pool()
    assert p.free() == Amount(6.4, 12800.0)  # nothing measured: target share of capacity
    p.allocate(Amount(2.0, 4000.0))
    p.observe(PoolSample(1.0, 2000.0))
    # cpu: min(8 - 2, 6.4 - 1) = 5.4; ram: min(16000 - 4000, 12800 - 2000) = 10800
    assert p.free() == Amount(5.4, 10800.0)
    p.release(Amount(2.0, 4000.0))
    assert p.free() == Amount(5.4, 10800.0)


def test_ewma_and_hysteresis_trajectory():
    p = pool()
    trajectory = []
    for cpu in [4.0, 8.0, 8.0, 8.0, 4.0, 4.0, 4.0, 2.0, 2.0]:
        p.observe(PoolSample(cpu, 1000.0))
        trajectory.append((round(p.measured.cpu, 4), p.overloaded, round(p.free().cpu, 4)))
    assert trajectory == [
        (4.0, False, 2.4),
        (6.0, False, 0.4),
        (7.0, False, 0.0),      # 0.875 of capacity: not yet above the high mark
        (7.5, True, 0.0),       # 0.9375 > 0.9: overloaded, offers nothing
        (5.75, True, 0.0),      # 0.72: still above the low mark
        (4.875, False, 1.525),  # 0.609 < 0.7: back
        (4.4375, False, 1.9625),
        (3.2188, False, 3.1813),
        (2.6094, False, 3.7906),
    ]


def test_pool_does_not_flap_around_the_high_mark():
    p = pool()
    states = []
    for cpu in [7.3, 7.1, 7.3, 7.1, 7.3, 7.1]:  # around 0.9 of 8 = 7.2
        p.observe(PoolSample(cpu, 0.0))
        states.append(p.overloaded)
    assert states == [True] * 6


def test_pool_config_validation():
    with pytest.raises(PackingError, match=r"squall.pool.low.mark \(0.95\) <= squall.pool.high.mark \(0.9\)"):
        NodePool("n", Amount(1, 1), low=0.95, high=0.9)
    p = NodePool.from_config("n", Amount(2, 4096), base_config())
    assert (p.target, p.high, p.low, p.alpha) == (0.8, 0.9, 0.7, 0.3)


def test_place_best_fit_decreasing_and_reports_the_unplaceable():
    plan = plan_of((1.0, 3000), (1.0, 1000), (0.5, 6000), (4.0, 9000))
    big = NodePool("big", Amount(8.0, 10000.0), target=1.0)
    small = NodePool("small", Amount(4.0, 4000.0), target=1.0)
    placement = place(plan, [small, big])
    # largest first: 9000 only fits big; 6000 then fits nowhere (1000 left on big, 4000 on
    # small); 3000 -> small; 1000 -> big, which it fills exactly (the tighter fit)
    assert placement.assigned == {4: "big", 1: "small", 2: "big"}
    assert placement.unplaced == [(3, "needs cpu 0.5, ram 6000 MB; the most any node offers is cpu 4.00, ram 4000 MB (small)")]


def test_overloaded_nodes_offer_nothing_to_place():
    p = NodePool("busy", Amount(2.0, 4000.0), alpha=1.0)
    p.observe(PoolSample(1.95, 100.0))  # e.g. Spark executors
    placement = place(plan_of((0.5, 100)), [p])
    assert placement.assigned == {} and placement.unplaced == [(1, "every node is overloaded")]
