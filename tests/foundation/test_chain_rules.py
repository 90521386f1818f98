"""Which components chain (squall/chaining.py): the rules, each able to fail on its own."""
import pytest

from squall import Bolt, Grouping, Spout, TopologyBuilder
from squall.chaining import chain_instances, chains
from squall.idl import schema


class S(Spout):
    outputs = ["x"]


class B(Bolt):
    outputs = ["x"]


class SelfAcking(Bolt):
    outputs = ["x"]
    auto_ack = False


def topology(pars=(1, 1, 1), grouping=Grouping.SHUFFLE, config=None, split_config=None, count_cls=B, **extra):
    b = TopologyBuilder("t")
    s = b.add_spout("spout", S, par=pars[0])
    sp = b.add_bolt("split", B, par=pars[1], inputs={s: Grouping.SHUFFLE}, config=split_config)
    b.add_bolt("count", count_cls, par=pars[2], inputs={sp: grouping})
    # three components within one core: the cpu rule (tests/packing/test_chain_reasons.py) keeps out of the way
    b.set_config({"squall.chaining": "auto", "squall.component.cpu": 0.25, **(config or {})})
    return b.build().plan


def test_forward_edges_of_equal_parallelism_chain():
    assert chains(topology((2, 2, 2))) == [("spout", "split", "count")]
    assert chains(topology((2, 2, 2), grouping=Grouping.LOCAL_OR_SHUFFLE)) == [("spout", "split", "count")]
    assert chains(topology((2, 2, 2), grouping=Grouping.NONE)) == [("spout", "split", "count")]


def test_a_keyed_grouping_or_another_parallelism_breaks_the_chain():
    assert chains(topology((2, 2, 2), grouping=Grouping.fields("x"))) == [("spout", "split")]
    assert chains(topology((1, 2, 2))) == [("split", "count")]
    assert chains(topology((2, 2, 3))) == [("spout", "split")]


def test_with_one_task_each_any_grouping_but_direct_and_custom_chains():
    assert chains(topology((1, 1, 1), grouping=Grouping.fields("x"))) == [("spout", "split", "count")]
    assert chains(topology((1, 1, 1), grouping=Grouping.ALL)) == [("spout", "split", "count")]
    assert chains(topology((1, 1, 1), grouping=Grouping.GLOBAL)) == [("spout", "split", "count")]


def test_chaining_off_for_the_topology_or_a_component():
    assert chains(topology(config={"squall.chaining": "off"})) == []
    assert chains(topology(split_config={"squall.chaining": "off"})) == []
    # head: split starts a new chain (not fused with its spout), and may lead one
    assert chains(topology(split_config={"squall.chaining": "head"})) == [("split", "count")]


def test_at_least_once_a_bolt_that_acks_itself_is_not_chained():
    reliable = {"topology.reliability.mode": "ATLEAST_ONCE"}
    assert chains(topology(count_cls=SelfAcking, config=reliable)) == [("spout", "split")]
    assert chains(topology(count_cls=SelfAcking)) == [("spout", "split", "count")]  # at most once it does


def test_a_component_chains_to_one_successor_the_first_by_name():
    b = TopologyBuilder("t")
    s = b.add_spout("spout", S)
    b.add_bolt("zeta", B, inputs={s: Grouping.SHUFFLE})
    b.add_bolt("alpha", B, inputs={s: Grouping.SHUFFLE})
    b.set_config({"squall.chaining": "auto"})
    assert chains(b.build().plan) == [("spout", "alpha")]


def test_chain_instances_pair_tasks_by_component_index():
    plan = topology((2, 2, 2))
    ids = [schema.InstanceId("spout", 5, 0), schema.InstanceId("spout", 6, 1), schema.InstanceId("split", 3, 0),
           schema.InstanceId("split", 4, 1), schema.InstanceId("count", 1, 0), schema.InstanceId("count", 2, 1)]
    assert chain_instances(chains(plan), ids) == {
        5: [("spout", 5), ("split", 3), ("count", 1)], 6: [("spout", 6), ("split", 4), ("count", 2)]}
    # a member in another container: no chain instance here
    assert chain_instances(chains(plan), ids[:1] + ids[2:3]) == {}


@pytest.mark.parametrize("value", [False, "off"])
def test_off_from_yaml_is_off(value):
    """YAML reads a bare `off` (a config file, --config-property) as false."""
    assert chains(topology(config={"squall.chaining": value})) == []
