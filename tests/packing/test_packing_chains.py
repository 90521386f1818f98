"""A chain instance (task i of each chained component) is packed as one unit, in one container."""
import pytest

from squall import Bolt, Grouping, Spout, TopologyBuilder
from squall.chaining import chains
from squall.idl import replace
from squall.packing import PackingError, pack, repack, validate_plan, with_parallelism


class S(Spout):
    outputs = ["x"]


class B(Bolt):
    outputs = ["x"]


def topology(pars=(4, 4, 4), chaining="auto", algorithm="auto", split_ram=1024, **config):
    b = TopologyBuilder("t")
    s = b.add_spout("spout", S, par=pars[0])
    sp = b.add_bolt("split", B, par=pars[1], inputs={s: Grouping.SHUFFLE},
                    config={"squall.component.cpu": 0.5, "squall.component.ram.mb": split_ram})
    b.add_bolt("count", B, par=pars[2], inputs={sp: Grouping.fields("x")})
    b.set_config({"squall.chaining": chaining, "squall.packing.algorithm": algorithm, **config})
    return b.build().plan


def containers_of(plan):
    return {(i.id.component, i.id.component_index): c.id for c in plan.containers for i in c.instances}


def assert_together(plan, chain=("spout", "split")):
    where = containers_of(plan)
    indexes = {index for (name, index) in where if name == chain[0]}
    assert indexes, "no chain instance"
    for index in indexes:
        assert len({where[(m, index)] for m in chain}) == 1, f"chain instance {index} is split: {where}"


@pytest.mark.parametrize("algorithm", ["auto", "ffd", "rcrr", "roundrobin"])
def test_every_algorithm_puts_a_chain_instance_in_one_container(algorithm):
    t = topology(algorithm=algorithm, **({"topology.workers": 3} if algorithm == "roundrobin" else {}))
    plan = pack(t)
    assert_together(plan)
    validate_plan(t, plan)
    # each task keeps its own size and its own task id
    sizes = {(i.id.component, i.resources.cpu, i.resources.ram_mb) for c in plan.containers for i in c.instances}
    assert ("split", 0.5, 1024) in sizes and ("spout", 0.5, 256) in sizes
    assert sorted(i.id.task_id for c in plan.containers for i in c.instances) == list(range(1, 13))


def test_a_chain_instance_too_big_for_a_container_is_split_not_refused():
    t = topology(**{"squall.container.max.ram.mb": 1400})  # split (1024 + 224 padding) fits alone; with its spout not
    assert chains(t) == []
    plan = pack(t)
    validate_plan(t, plan)
    assert sorted(i.id.task_id for c in plan.containers for i in c.instances) == list(range(1, 13))


def test_scaling_a_chain_up_adds_whole_units_and_moves_nothing():
    t = topology()
    plan = pack(t)
    new, diff = repack(t, plan, {"spout": 7, "split": 7})
    assert_together(new)
    validate_plan(with_parallelism(t, {"spout": 7, "split": 7}), new)
    assert not diff.moved and len(diff.added) == 6
    before = containers_of(plan)
    after = containers_of(new)
    assert all(after[k] == v for k, v in before.items())


def test_an_update_that_forms_a_chain_brings_its_tasks_together():
    t = topology(pars=(2, 3, 3))  # spout 2, split 3: no chain (yet)
    plan = pack(t)
    new, diff = repack(t, plan, {"spout": 3})
    assert_together(new)
    validate_plan(with_parallelism(t, {"spout": 3}), new)
    ids = {i.id.task_id for c in new.containers for i in c.instances}
    assert len(ids) == 9  # every task keeps an id of its own


def test_the_validator_refuses_a_plan_that_splits_a_chain():
    t = topology()
    unchained = pack(topology(chaining="off", algorithm="roundrobin", **{"topology.workers": 3}))
    where = containers_of(unchained)
    assert any(where[("spout", i)] != where[("split", i)] for i in range(4)), "round-robin split no chain"
    with pytest.raises(PackingError, match=r"chain 'spout\+split': its tasks of index \d are in containers"):
        validate_plan(t, replace(unchained, algorithm="auto"))


def test_topology_workers_above_the_chain_instances_gives_one_container_each():
    t = topology(pars=(2, 2, 2), **{"topology.workers": 5})  # 6 tasks, 4 units: 2 chain instances, 2 counts
    assert len(pack(t).containers) == 4
    with pytest.raises(PackingError, match="topology.workers=7 is more than the topology's 6 tasks"):
        pack(topology(pars=(2, 2, 2), **{"topology.workers": 7}))


def test_a_chain_is_cut_for_the_granularity_the_packing_is_asked_for():
    t = topology(split_ram=1700)  # with its spout: fits a 8192 MB container, not a 2048 MB worker beside the daemons
    assert chains(t) == [("spout", "split")]
    assert chains(t, granularity="worker") == []
    plan = pack(t, granularity="worker")
    validate_plan(t, plan)
    assert plan.granularity == "worker"
