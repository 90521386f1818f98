"""Why each edge is or is not chained (squall/chaining.py's ``chain_plan``), and the rule that a chain
never costs: within one core of cpu, cut rather than refused where it would not fit a container."""
import pytest

from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder
from squall.chaining import Edge, chain_plan
from squall.testing.words import counting_topology


class S(Spout):
    outputs = ["x"]


class B(Bolt):
    outputs = ["x"]


class DirectSpout(Spout):
    outputs = [Stream(["x"], direct=True)]


class SelfAcking(Bolt):
    outputs = ["x"]
    auto_ack = False


def line(cpus=(0.25, 0.25, 0.25), pars=(2, 2, 2), grouping=Grouping.SHUFFLE, config=None, count_cls=B, **sizes):
    """spout -> split -> count; ``sizes``: a component's own config (``split={"squall.component.ram.mb": 4096}``)."""
    b = TopologyBuilder("t")
    s = b.add_spout("spout", S, par=pars[0], config={"squall.component.cpu": cpus[0], **sizes.get("spout", {})})
    sp = b.add_bolt("split", B, par=pars[1], inputs={s: Grouping.SHUFFLE},
                    config={"squall.component.cpu": cpus[1], **sizes.get("split", {})})
    b.add_bolt("count", count_cls, par=pars[2], inputs={sp: grouping},
               config={"squall.component.cpu": cpus[2], **sizes.get("count", {})})
    b.set_config(config or {})
    return b.build().plan


def reasons(plan):
    return {(e.up, e.down): e.reason for e in chain_plan(plan).edges}


def test_edges_within_one_core_chain_and_say_so():
    plan = chain_plan(line())
    assert plan.chains == (("spout", "split", "count"),)
    assert plan.edges == (Edge("split", "count"), Edge("spout", "split"))
    assert all(e.chained for e in plan.edges)
    assert Edge("a", "b", "fields grouping").to_json() == {"from": "a", "to": "b", "chained": False,
                                                           "reason": "fields grouping"}


def test_a_chain_is_cut_into_its_longest_prefix_runs_within_one_core():
    plan = chain_plan(line(cpus=(0.5, 0.5, 0.5)))  # the defaults: the first two fill a core
    assert plan.chains == (("spout", "split"),)
    assert reasons(line(cpus=(0.5, 0.5, 0.5))) == {("spout", "split"): "",
                                                   ("split", "count"): "cpu 0.5+0.5+0.5 > 1 core"}
    assert chain_plan(line(cpus=(0.75, 0.25, 0.5))).chains == (("spout", "split"),)
    assert chain_plan(line(cpus=(0.75, 0.5, 0.5))).chains == (("split", "count"),)  # a new run starts at the cut
    assert reasons(line(cpus=(0.75, 0.5, 0.5)))[("spout", "split")] == "cpu 0.75+0.5 > 1 core"


def test_members_of_more_than_a_core_each_pipeline():
    plan = line(cpus=(1.5, 1.5, 1.5))
    assert chain_plan(plan).chains == ()
    assert reasons(plan) == {("spout", "split"): "cpu 1.5+1.5 > 1 core", ("split", "count"): "cpu 1.5+1.5 > 1 core"}


def test_a_chain_that_would_not_fit_a_container_is_cut_naming_the_dimension_and_key():
    big = {"squall.component.ram.mb": 5000}
    plan = line(split=big, count=big)  # each fits a container of 8192 MB beside its daemons (224 MB); two do not
    assert chain_plan(plan).chains == (("spout", "split"),)
    assert reasons(plan)[("split", "count")] == (
        "would not fit a container: ram 10256 MB + 224 MB for the stream and metrics managers > "
        "squall.container.max.ram.mb=8192 MB")
    worker = line(config={"squall.packing.granularity": "worker", "squall.worker.disk.mb": 1024})
    assert reasons(worker)[("split", "count")].endswith("> squall.worker.disk.mb=1024 MB")
    padded = line(config={"squall.packing.padding.percentage": 50}, split=big)  # 5000 + 50%: over 8192 with count
    assert chain_plan(padded).chains == (("spout", "split"),)


@pytest.mark.parametrize("grouping, reason", [
    (Grouping.fields("x"), "fields grouping"), (Grouping.ALL, "all grouping"), (Grouping.GLOBAL, "global grouping")])
def test_a_grouping_that_does_not_keep_task_i_with_task_i_is_named(grouping, reason):
    assert reasons(line(grouping=grouping))[("split", "count")] == reason
    assert reasons(line(pars=(1, 1, 1), grouping=grouping))[("split", "count")] == ""  # one task to go to


def test_direct_grouping_is_never_chained():
    b = TopologyBuilder("t")
    s = b.add_spout("spout", DirectSpout)
    b.add_bolt("sink", B, inputs={s: Grouping.DIRECT})
    b.set_config({"squall.component.cpu": 0.25})
    assert reasons(b.build().plan) == {("spout", "sink"): "direct grouping"}


def test_each_rule_names_itself():
    assert reasons(line(pars=(2, 2, 3)))[("split", "count")] == "different parallelism (2 and 3)"
    assert set(reasons(line(config={"squall.chaining": "off"})).values()) == {"squall.chaining: off"}
    assert reasons(line(config={"topology.reliability.mode": "ATLEAST_ONCE"}, count_cls=SelfAcking))[
        ("split", "count")] == "at least once, 'count' acks its tuples itself (auto_ack off)"
    assert reasons(counting_topology("t", 10, 10.0, config={"squall.component.cpu": 0.25}).plan) == {
        ("sentences", "split"): "checkpointing", ("split", "count"): "checkpointing"}
    assert reasons(line(count={"squall.chaining": "head"}))[("split", "count")] == \
        "squall.chaining: head ('count' starts a chain)"
    assert reasons(line(split={"squall.chaining": "off"})) == {
        ("spout", "split"): "squall.chaining: off", ("split", "count"): "squall.chaining: off"}


def test_one_successor_and_one_predecessor_each_and_the_losers_say_who_won():
    b = TopologyBuilder("t")
    s = b.add_spout("spout", S)
    t = b.add_spout("tap", S)
    alpha = b.add_bolt("alpha", B, inputs={s: Grouping.SHUFFLE})
    b.add_bolt("zeta", B, inputs={s: Grouping.SHUFFLE})
    b.add_bolt("join", B, inputs={alpha: Grouping.SHUFFLE, t: Grouping.SHUFFLE})
    b.set_config({"squall.component.cpu": 0.25})
    plan = chain_plan(b.build().plan)
    assert plan.chains == (("spout", "alpha", "join"),)
    assert {(e.up, e.down): e.reason for e in plan.edges} == {
        ("alpha", "join"): "", ("spout", "alpha"): "", ("spout", "zeta"): "'spout' is chained to 'alpha'",
        ("tap", "join"): "'join' is chained from 'alpha'"}
