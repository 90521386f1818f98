"""Exact plans for small hand-worked cases, padding, ordering and refusals."""
import pytest

from squall.idl import encode
from squall.loader import load_topology_file
from squall.packing import PackingError, pack, tmaster_container_resources, validate_plan
from squall.packing.request import ALGORITHMS
from packing_helpers import comp, layout, res, topo

WORD_COUNT = "examples/word_count.py"


@pytest.fixture(scope="module")
def word_count():
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return load_topology_file(os.path.join(root, WORD_COUNT)).plan


def test_roundrobin_task_deals_largest_first_then_by_name(word_count):
    # all sizes equal -> components by name: count0 count1 sentence0 split0 split1, dealt over 2
    plan = pack(word_count, algorithm="roundrobin")
    assert (plan.algorithm, plan.granularity) == ("roundrobin", "task")
    assert layout(plan) == [(1, ["count0", "sentence0", "split1"]), (2, ["count1", "split0"])]
    # 3 x (0.5, 256, 256) + stmgr (0.25, 128, 64) + metricsmgr (0.1, 96, 256)
    assert res(plan.containers[0].resources) == (1.85, 992, 1088)
    assert res(plan.containers[0].padding) == (0.35, 224, 320)
    assert res(plan.containers[1].resources) == (1.35, 736, 832)
    assert [i.id.task_id for i in plan.containers[0].instances] == [1, 3, 5]


def test_roundrobin_worker_spreads_the_jstorm_way(word_count):
    # upstream first: sentence0 -> 1; split0 -> 2 (fewer tasks), split1 -> 1;
    # count0 -> 2 (fewer tasks, upstream tie), count1 -> 1
    plan = pack(word_count, algorithm="roundrobin", granularity="worker")
    assert layout(plan) == [(1, ["count1", "sentence0", "split1"]), (2, ["count0", "split0"])]
    assert all(res(c.resources) == (2.0, 2048, 4096) for c in plan.containers)


def test_jstorm_spread_prefers_upstream_neighbours():
    # a0 -> 1, c0 -> 2; b ties on task counts and goes next to its upstream c
    t = topo([comp("a", 1), comp("c", 1), comp("b", 1, inputs=["c"])], {"topology.workers": 2})
    plan = pack(t, algorithm="roundrobin", granularity="worker")
    assert layout(plan) == [(1, ["a0"]), (2, ["b0", "c0"])]


MIXED = [comp("a", 2, ram=5000), comp("b", 3, ram=3000), comp("c", 2, ram=2000)]
MIXED_CONFIG = {
    "squall.packing.padding.percentage": 0,
    "squall.container.max.ram.mb": 8192,
    "squall.container.max.cpu": 100,
    "squall.container.max.disk.mb": 100000,
}


def test_ffd_first_fit_decreasing_by_ram():
    plan = pack(topo(MIXED, MIXED_CONFIG), algorithm="ffd")
    assert layout(plan) == [(1, ["a0", "b0"]), (2, ["a1", "b1"]), (3, ["b2", "c0", "c1"])]
    assert [c.resources.ram_mb for c in plan.containers] == [8000, 8000, 7000]


def test_rcrr_opens_a_container_instead_of_exceeding_the_cap():
    plan = pack(topo(MIXED, {**MIXED_CONFIG, "topology.workers": 1}), algorithm="rcrr")
    assert layout(plan) == [(1, ["a0", "b1"]), (2, ["a1", "b0"]), (3, ["b2", "c0", "c1"])]


def test_roundrobin_refuses_instead_of_shrinking_instances():
    with pytest.raises(PackingError, match=r"roundrobin: container 1 would need ram 13000 .*squall.container.max.ram.mb=8192 \(it holds b x2, a x1, c x1\)"):
        pack(topo(MIXED, {**MIXED_CONFIG, "topology.workers": 2}), algorithm="roundrobin")


def test_ffd_sort_by_cpu():
    # cpu first: x0 x1 y0 y1 -> 2 containers; ram first: y0 y1 x0 x1 -> 3
    components = [comp("x", 2, cpu=2), comp("y", 2, cpu=1.5, ram=2000)]
    by_cpu = topo(components, {"squall.packing.ffd.sort": "cpu", "squall.container.max.cpu": 4})
    assert layout(pack(by_cpu, algorithm="ffd")) == [(1, ["x0", "y0"]), (2, ["x1", "y1"])]
    by_ram = topo(components, {"squall.packing.ffd.sort": "ram", "squall.container.max.cpu": 4})
    assert layout(pack(by_ram, algorithm="ffd")) == [(1, ["y0", "y1"]), (2, ["x0"]), (3, ["x1"])]


def test_padding_percentage_replaces_daemons_and_rounds_up():
    t = topo([comp("a", 3, cpu=0.3, ram=256, disk=100)], {"squall.packing.padding.percentage": 10})
    plan = pack(t, algorithm="ffd")
    c = plan.containers[0]
    # 768 MB * 10% = 76.8 -> 77; cpu 0.9 * 10% = 0.09; disk 300 -> 30
    assert res(c.padding) == (0.09, 77, 30)
    assert res(c.resources) == (0.99, 845, 330)


def test_cpu_is_never_rounded_down():
    plan = pack(topo([comp("a", 3, cpu=1 / 3)]), algorithm="ffd")
    c = plan.containers[0]
    assert c.instances[0].resources.cpu == 0.334  # rounded up to the millicore
    assert c.resources.cpu >= 3 * (1 / 3) + 0.35
    assert c.resources.cpu == 1.352


def test_worker_granularity_packs_into_fixed_bins():
    t = topo([comp("a", 7, cpu=0.5, ram=256)])
    plan = pack(t, algorithm="ffd", granularity="worker")
    # room per worker: cpu 2 - 0.35 = 1.65 -> 3 instances
    assert [len(c.instances) for c in plan.containers] == [3, 3, 1]
    assert all(res(c.resources) == (2.0, 2048, 4096) for c in plan.containers)


def test_rcrr_starts_with_topology_workers_containers():
    plan = pack(topo([comp("a", 4)], {"topology.workers": 3}), algorithm="rcrr")
    assert layout(plan) == [(1, ["a0", "a3"]), (2, ["a1"]), (3, ["a2"])]
    # more workers than tasks: one container per task, no empty ones
    plan = pack(topo([comp("a", 2)], {"topology.workers": 5}), algorithm="rcrr")
    assert len(plan.containers) == 2


def test_component_config_overrides_size():
    t = topo([comp("a", 1, ram=1000), comp("b", 1)], {"squall.component.ram.mb": 300})
    plan = pack(t, algorithm="ffd")
    sizes = {i.id.component: i.resources.ram_mb for i in plan.containers[0].instances}
    assert sizes == {"a": 1000, "b": 300}


def test_plans_are_deterministic_byte_for_byte(word_count):
    for algorithm in ALGORITHMS:
        for granularity in ("task", "worker"):
            a = pack(word_count, algorithm=algorithm, granularity=granularity)
            b = pack(word_count, algorithm=algorithm, granularity=granularity)
            assert encode(a) == encode(b)
            validate_plan(word_count, a)
    assert pack(word_count).id != pack(word_count, algorithm="ffd").id


def test_tmaster_container_is_not_in_the_plan(word_count):
    plan = pack(word_count)
    assert min(c.id for c in plan.containers) == 1
    assert res(tmaster_container_resources()) == (0.35, 224, 320)


@pytest.mark.parametrize(
    "components, config, kwargs, message",
    [
        ([comp("huge", 1, ram=20000)], {}, {},
         r"component 'huge': one instance needs ram 20000 MB \(squall.component.ram.mb\) plus 224 MB padding.*squall.container.max.ram.mb=8192"),
        ([comp("fat", 1, cpu=1.8)], {}, {"granularity": "worker"},
         r"component 'fat': one instance needs cpu 1.8 .*worker holds: squall.worker.cpu=2"),
        ([comp("a", 2)], {"topology.workers": 3}, {},
         r"topology.workers=3 is more than the topology's 2 tasks: a container would be empty"),
        ([comp("a", 2)], {"topology.workers": 3}, {"algorithm": "roundrobin"},
         r"topology.workers=3 is more than the topology's 2 tasks: round-robin would leave containers empty"),
        ([comp("a", 2)], {}, {"algorithm": "bestfit"},
         r"unknown algorithm 'bestfit' \(squall.packing.algorithm\)"),
        ([comp("a", 2)], {}, {"granularity": "slot"},
         r"unknown granularity 'slot' \(squall.packing.granularity\)"),
        ([comp("a", 5)], {"squall.worker.cpu": 1, "topology.workers": 1},
         {"algorithm": "roundrobin", "granularity": "worker"},
         r"roundrobin: worker 1 would need cpu 2.85 .*squall.worker.cpu=1 \(it holds a x5\)"),
    ],
)
def test_impossible_requests_name_the_culprit(components, config, kwargs, message):
    with pytest.raises(PackingError, match=message):
        pack(topo(components, config), **kwargs)
