"""Every validation error is refused at build time, with a message naming the fault."""
import pytest
from api_components import MultiSpout, NeedsPath, NotAGrouping, PassBolt, SinkBolt, Unserialisable, WordSpout

from squall import Bolt, Grouping, Spout, TopologyBuilder, TopologyError


def build(configure):
    b = TopologyBuilder("t")
    configure(b)
    return b.build()


def with_spout(b):
    return b.add_spout("words", WordSpout)


CASES = [
    ("duplicate", lambda b: (with_spout(b), b.add_bolt("words", SinkBolt, inputs=["words"])),
     r"components.words: duplicate component name 'words'"),
    ("unknown input", lambda b: (with_spout(b), b.add_bolt("s", SinkBolt, inputs=["nope"])),
     r"components.s.inputs\[0\]: input from unknown component 'nope'"),
    ("undeclared stream", lambda b: (with_spout(b), b.add_bolt("s", SinkBolt, inputs={("words", "other"): Grouping.SHUFFLE})),
     r"components.s.inputs\[0\]: component 'words' declares no stream 'other' \(declared: default\)"),
    ("fields on missing field", lambda b: (with_spout(b), b.add_bolt("s", SinkBolt, inputs={"words": Grouping.fields("wrd")})),
     r"fields grouping on field 'wrd', but stream words/default declares \['word', 'n'\]"),
    ("partial key on missing field", lambda b: (with_spout(b), b.add_bolt("s", SinkBolt, inputs={"words": Grouping.partial_key("x")})),
     r"partial_key grouping on field 'x'"),
    ("direct on non-direct", lambda b: (with_spout(b), b.add_bolt("s", SinkBolt, inputs={"words": Grouping.DIRECT})),
     r"direct grouping on stream words/default, which is not declared direct"),
    ("shuffle on direct", lambda b: (b.add_spout("m", MultiSpout), b.add_bolt("s", SinkBolt, inputs={("m", "direct"): Grouping.SHUFFLE})),
     r"stream m/direct is direct; consume it with Grouping.DIRECT"),
    ("parallelism zero", lambda b: b.add_spout("words", WordSpout, par=0),
     r"components.words.par: parallelism must be a positive integer, got 0"),
    ("parallelism str", lambda b: b.add_spout("words", WordSpout, par="2"),
     r"components.words.par: parallelism must be a positive integer, got '2'"),
    ("parallelism bool", lambda b: b.add_spout("words", WordSpout, par=True),
     r"parallelism must be a positive integer, got True"),
    ("no spout", lambda b: b.add_bolt("s", SinkBolt),
     r"topology 't' has no spout"),
    ("negative resource", lambda b: b.add_spout("words", WordSpout, config={"squall.component.cpu": -1}),
     r"squall.component.cpu \(components.words.config\): must be >= 0, got -1"),
    ("non-numeric resource", lambda b: b.add_spout("words", WordSpout, config={"squall.component.ram.mb": "lots"}),
     r"squall.component.ram.mb \(components.words.config\): expected an integer, got 'lots'"),
    ("config wrong type", lambda b: (with_spout(b), b.set_config({"topology.max.spout.pending": "abc"})),
     r"topology.max.spout.pending \(config\): expected an integer, got 'abc' \(str\)"),
    ("bad choice", lambda b: (with_spout(b), b.set_config({"squall.packing.algorithm": "best"})),
     r"squall.packing.algorithm \(config\): expected one of auto, roundrobin, rcrr, ffd, got 'best'"),
    ("spout class not a spout", lambda b: b.add_spout("words", PassBolt),
     r"components.words.class: expected a subclass of squall.Spout"),
    ("not a grouping", lambda b: (with_spout(b), b.add_bolt("s", SinkBolt, inputs={"words": "shuffle"})),
     r"components.s.inputs\[0\].grouping: expected a Grouping, got 'shuffle'"),
    ("custom without methods", lambda b: (with_spout(b), b.add_bolt("s", SinkBolt, inputs={"words": Grouping.custom(NotAGrouping())})),
     r"custom grouping NotAGrouping has no prepare\(\) method"),
    ("custom state not json", lambda b: (with_spout(b), b.add_bolt("s", SinkBolt, inputs={"words": Grouping.custom(Unserialisable())})),
     r"attributes must be JSON values"),
    ("bad name", lambda b: b.add_spout("__sys", WordSpout),
     r"components\[0\]: name '__sys'"),
]


@pytest.mark.parametrize("configure,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_with_message(configure, message):
    with pytest.raises(TopologyError, match=message):
        build(configure)


def test_local_classes_are_refused():
    class LocalSpout(Spout):
        outputs = ["x"]

    with pytest.raises(TopologyError, match=r"components.s.class: .*LocalSpout is defined inside a function"):
        build(lambda b: b.add_spout("s", LocalSpout))


def test_local_custom_grouping_is_refused():
    class LocalGrouping:
        def prepare(self, *a):
            pass

        def choose_tasks(self, values):
            return []

    with pytest.raises(TopologyError, match=r"LocalGrouping is defined inside a function"):
        build(lambda b: (with_spout(b), b.add_bolt("s", SinkBolt, inputs={"words": Grouping.custom(LocalGrouping())})))


def test_main_module_classes_are_refused():
    Main = type("MainSpout", (Spout,), {"__module__": "__main__", "outputs": ["x"]})
    with pytest.raises(TopologyError, match=r"MainSpout is defined in __main__"):
        build(lambda b: b.add_spout("s", Main))


def test_unknown_key_warns_with_closest_known_key():
    topology = build(lambda b: (with_spout(b), b.set_config({"topology.max.spout.pendin": 5, "my.app.key": 1})))
    assert topology.warnings == [
        "config: unknown config key 'topology.max.spout.pendin'; did you mean 'topology.max.spout.pending'?"
    ]


def test_an_unknown_key_in_squalls_namespace_is_refused_in_every_layer(tmp_path):
    """A typo, or a key this version does not have: read as a user key it would be silently ignored."""
    from squall.conf import ConfigError, base_config
    from squall.conf.resolve import parse_properties
    from squall.logical import with_overrides

    with pytest.raises(TopologyError, match=r"^config: unknown config key 'squall\.zzz' \(see `squall config list`\)$"):
        build(lambda b: (with_spout(b), b.set_config({"squall.zzz": 1})))
    with pytest.raises(TopologyError, match=r"^components\.words\.config: unknown config key 'squall\.chaning'; "
                                            r"did you mean 'squall\.chaining'\?$"):
        build(lambda b: b.add_spout("words", WordSpout, config={"squall.chaning": "off"}))
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text("squall.state.manger: zookeeper\n")
    with pytest.raises(ConfigError, match=r"cluster\.yaml: unknown config key 'squall\.state\.manger'; did you mean "
                                          r"'squall\.state\.manager'\?$"):
        base_config(str(cluster_file))
    plan = build(with_spout).plan
    with pytest.raises(ConfigError, match=r"^--config-property: unknown config key 'squall\.health\.autopilot'"):
        with_overrides(plan, parse_properties(["squall.health.autopilot=on"]))


def test_bad_field_names_in_grouping_constructor():
    with pytest.raises(ValueError, match="fields grouping needs one or more field names"):
        Grouping.fields()


def test_outputs_must_be_names_or_streams():
    class BadOutputs(Bolt):
        outputs = ["a", 3]

    with pytest.raises(TopologyError, match=r"components.words.outputs: outputs must be field names or Stream objects, got 3"):
        build(lambda b: b.add_spout("words", type("S", (Spout,), {"outputs": ["a", 3], "__module__": __name__})))


def test_a_components_own_checks_name_it_when_loaded_and_at_submit(tmp_path):
    """``check_config`` sees the config its tasks will get (a required key may come from the command line,
    so ``build()`` does not call it); ``preflight`` looks outside before a launch."""
    from squall.logical import with_overrides
    from squall.preflight import check_components, preflight

    builder = TopologyBuilder("checks")
    words = builder.add_spout("words", WordSpout)
    builder.add_bolt("sink", NeedsPath, inputs=[words])
    plan = builder.build().plan  # needs.path may still come from --config-property
    with pytest.raises(TopologyError, match=r"^components\.sink: needs\.path is not set: name a directory$"):
        check_components(plan)
    with pytest.raises(TopologyError, match=r"^components\.sink: needs\.path is not set"):
        preflight(plan)
    plan = with_overrides(plan, {"needs.path": str(tmp_path / "nowhere")})
    check_components(plan)
    with pytest.raises(TopologyError, match=r"^components\.sink: needs\.path .*nowhere is not a directory$"):
        preflight(plan)
    (tmp_path / "nowhere").mkdir()
    preflight(plan)
