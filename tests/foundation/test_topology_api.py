"""Topology API -> logical plan, and the plan's Thrift round trip."""
import pytest
from api_components import EvenGrouping, MultiSpout, PassBolt, SinkBolt, WordSpout

from squall import Bolt, Grouping, Topology, TopologyBuilder, Tuple
from squall.idl import decode, encode, schema
from squall.logical import component_config, task_ids, topology_config
from squall.stream import decode_custom


def build_full():
    b = TopologyBuilder("full")
    words = b.add_spout("words", WordSpout, par=2, config={"squall.component.cpu": 0.25})
    multi = b.add_spout("multi", MultiSpout)
    b.add_bolt("shuffle", PassBolt, par=3, inputs=[words])
    b.add_bolt(
        "many",
        SinkBolt,
        par=4,
        inputs={
            words: Grouping.fields("word"),
            multi["pairs"]: Grouping.partial_key("a"),
            ("multi", "direct"): Grouping.DIRECT,
            "shuffle": Grouping.custom(EvenGrouping(3)),
        },
        config={"squall.component.ram.mb": 512, "user.key": [1, 2]},
    )
    b.add_bolt("glob", SinkBolt, inputs={multi: Grouping.GLOBAL, "shuffle": Grouping.ALL})
    b.set_config({"topology.workers": 3, "topology.debug": True})
    return b.build()


def test_plan_has_every_component_stream_and_grouping():
    plan = build_full().plan
    assert [c.name for c in plan.components] == ["words", "multi", "shuffle", "many", "glob"]
    multi = plan.components[1]
    assert [(s.name, s.fields, s.direct) for s in multi.outputs] == [
        ("default", ["word"], False),
        ("pairs", ["a", "b"], False),
        ("direct", ["x"], True),
    ]
    many = plan.components[3]
    G = schema.GroupingKind
    assert [(i.component, i.stream, i.grouping, i.fields) for i in many.inputs] == [
        ("words", "default", G.FIELDS, ["word"]),
        ("multi", "pairs", G.PARTIAL_KEY, ["a"]),
        ("multi", "direct", G.DIRECT, []),
        ("shuffle", "default", G.CUSTOM, []),
    ]
    assert many.inputs[3].custom.class_name == "api_components:EvenGrouping"
    assert plan.components[2].inputs[0].grouping == G.SHUFFLE
    assert plan.components[0].class_name == "api_components:WordSpout"
    assert plan.components[0].kind == schema.ComponentKind.SPOUT


def test_thrift_round_trip_is_lossless():
    plan = build_full().plan
    again = decode(schema.Topology, encode(plan))
    assert again == plan
    assert encode(again) == encode(plan)


def test_custom_grouping_is_rebuilt_with_its_state():
    custom = build_full().plan.components[3].inputs[3].custom
    obj = decode_custom(custom.class_name, custom.state_json)
    assert isinstance(obj, EvenGrouping) and obj.modulo == 3
    obj.prepare(None, "shuffle", "default", [7, 8, 9])
    assert obj.choose_tasks(["ab"]) == [9]


def test_config_layers_resolve_per_component():
    plan = build_full().plan
    many = component_config(plan, "many")
    assert many["squall.component.ram.mb"] == 512
    assert many["user.key"] == [1, 2]
    assert many["topology.workers"] == 3
    assert many["squall.component.cpu"] == 0.5  # the default
    assert component_config(plan, "words")["squall.component.cpu"] == 0.25
    assert topology_config(plan)["topology.debug"] is True


def test_task_ids_are_contiguous_in_component_name_order():
    ids = task_ids(build_full().plan)
    assert ids == {"glob": [1], "many": [2, 3, 4, 5], "multi": [6], "shuffle": [7, 8, 9], "words": [10, 11]}


class DSL(Topology):
    config = {"topology.workers": 2}
    words = WordSpout.spec(par=2)
    sink = SinkBolt.spec(par=3, inputs={words: Grouping.fields("word")})


def test_class_dsl_builds_the_same_plan_as_the_builder():
    b = TopologyBuilder("DSL")
    words = b.add_spout("words", WordSpout, par=2)
    b.add_bolt("sink", SinkBolt, par=3, inputs={words: Grouping.fields("word")})
    b.set_config({"topology.workers": 2})
    assert encode(DSL().plan) == encode(b.build().plan)


def test_tuple_field_access():
    t = Tuple(1, "words", "default", 3, ["hello", 2], ("word", "n"))
    assert (t[0], t["word"], t.values, len(t), t.task, t.fields) == ("hello", "hello", ["hello", 2], 2, 3, ("word", "n"))
    with pytest.raises(KeyError, match="no field 'x'"):
        t["x"]
    with pytest.raises(AttributeError):
        t.x


def test_emit_before_attach_says_why():
    with pytest.raises(RuntimeError, match="not running"):
        WordSpout().emit(["a", 1])


def test_replace_copies_a_struct_with_changed_fields():
    from squall.idl import replace

    plan = build_full().plan
    renamed = replace(plan, name="other")
    assert renamed.name == "other" and plan.name == "full"
    assert renamed.components == plan.components and renamed.config == plan.config
    with pytest.raises(TypeError, match="Topology has no field 'nope'"):
        replace(plan, nope=1)


class TickingSink(Bolt):
    """A sink that commits on time: it asks for its own ticks."""

    tick_secs = 0.5


def test_a_bolt_that_needs_ticks_gets_its_own_frequency_unless_its_config_names_one():
    import json

    b = TopologyBuilder("ticks")
    source = b.add_spout("source", WordSpout)
    b.add_bolt("sink", TickingSink, inputs=[source])
    b.add_bolt("slow", TickingSink, inputs=[source], config={"topology.tick.tuple.freq.secs": 5})
    b.add_bolt("plain", PassBolt, inputs=[source])
    plan = b.build().plan
    ticks = {c.name: c.config.get("topology.tick.tuple.freq.secs") for c in plan.components}
    assert {k: json.loads(v) if v else None for k, v in ticks.items()} == {
        "source": None, "sink": 0.5, "slow": 5, "plain": None}
