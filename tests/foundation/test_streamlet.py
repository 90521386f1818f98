"""The Streamlet API: what a builder compiles to, and the mistakes it refuses."""
import json

import pytest
import streamlet_components as sc

from squall import Builder, TopologyError, Window
from squall.chaining import chains
from squall.idl import schema
from squall.importing import import_object
from squall.loader import load_topology_file


def inputs(topology, name):
    return [(i.component, i.stream, i.grouping, list(i.fields)) for i in topology.component(name).inputs]


def test_word_count_compiles_into_an_ordinary_topology():
    t = sc.word_count.build()
    assert t.name == "wc"
    assert [(c.name, c.parallelism, c.kind) for c in t.components] == [
        ("source0", 1, schema.ComponentKind.SPOUT), ("flat_map1", 1, schema.ComponentKind.BOLT),
        ("key_by2", 1, schema.ComponentKind.BOLT), ("count", 3, schema.ComponentKind.BOLT),
        ("sink4", 1, schema.ComponentKind.BOLT)]
    assert inputs(t, "count") == [("key_by2", "default", schema.GroupingKind.FIELDS, ["key"])]
    assert inputs(t, "flat_map1") == [("source0", "default", schema.GroupingKind.SHUFFLE, [])]
    assert [list(s.fields) for s in t.component("key_by2").outputs] == [["key", "value"]]
    assert t.component("count").class_name == "streamlet_components:word_count.compiled.count"
    assert import_object(t.component("count").class_name) is sc.word_count.compiled.count  # what a process imports
    assert chains(t.plan) == [("source0", "flat_map1")]  # 0.5 cpu each by default: key_by2 would pass a core


def test_a_connectors_spout_and_bolt_take_their_config_as_source_and_sink():
    t = sc.connected.build()
    assert [(c.name, c.class_name) for c in t.components] == [
        ("source0", "streamlet_components:Pairs"), ("map1", "streamlet_components:connected.compiled.map1"),
        ("sink2", "streamlet_components:Store")]
    assert json.loads(t.component("source0").config["pairs.topic"]) == "in"
    assert json.loads(t.component("sink2").config["store.path"]) == "/data/out"
    assert inputs(t, "sink2") == [("map1", "default", schema.GroupingKind.SHUFFLE, [])]
    with pytest.raises(TypeError, match="Streamlet.sink: expected a function or a Bolt subclass, got <class 'int'>"):
        Builder("other").source(range(2)).sink(int)


def test_windowed_operators_are_windowed_bolts_with_their_window():
    t = sc.windows.build()
    assert t.name == "streamlet_components"  # no name: the module's
    assert t.component("source0").class_name == "streamlet_components:Pairs"  # a user's spout as it is
    sums = sc.windows.compiled.sums
    assert sums.window == Window.sliding(duration=4, every=2) and sums.keyed_in and not sums.whole
    assert sc.windows.compiled.key_by1.whole  # Pairs has two fields: the element is their list
    assert json.loads(t.component("sums").config["topology.tick.tuple.freq.secs"]) == 0.2  # processing time
    assert inputs(t, "join6") == [("key_by1", "default", schema.GroupingKind.FIELDS, ["key"]),
                                  ("key_by5", "default", schema.GroupingKind.FIELDS, ["key"])]
    assert sc.windows.compiled.join6.left == "key_by1"


def test_windowed_streamlets_are_checked_as_windowed_bolts():
    with pytest.raises(TopologyError, match=r"components.reduce_by_key_and_window2: reduce_by_key_and_window2's "
                                            r"tumbling 40 s window holds a tuple up to 80 s"):
        sc.slow.build()


def test_mistakes_are_refused_naming_the_streamlet():
    b = Builder("t")
    words = b.source(["a"]).named("words")
    keyed = words.key_by(str)
    with pytest.raises(ValueError, match="join: a streamlet cannot be joined with itself"):
        keyed.join(keyed, Window.tumbling(count=2), max)
    with pytest.raises(ValueError, match=r"union: 'words' carries \['value'\] and 'key_by1' \['key', 'value'\]"):
        words.union(keyed)
    with pytest.raises(ValueError, match="map: 'sink2' is a sink, which emits nothing"):
        words.sink(print).map(str)
    with pytest.raises(TypeError, match="expected a squall.Window"):
        keyed.reduce_by_key_and_window(10, max)
    with pytest.raises(ValueError, match="lag without timestamp"):
        keyed.reduce_by_key_and_window(Window.tumbling(count=2), max, lag=3)
    with pytest.raises(TypeError, match="Builder.source: expected an iterable"):
        b.source(42)
    with pytest.raises(ValueError, match=r"named\('a.b'\)"):
        words.named("a.b")
    with pytest.raises(ValueError, match="belongs to another Builder"):
        Builder().source([1]).union(words)


def test_a_builder_not_at_module_level_is_refused():
    def make():
        local = Builder("local")
        local.source([1]).log()
        return local.build()

    with pytest.raises(TopologyError, match="streamlet builder 'local' is not a module-level variable of "
                                            "test_streamlet"):
        make()


def test_two_streamlets_with_one_name_are_refused():
    twice.source([1]).named("same").log()
    twice.source([2]).named("same").log()
    with pytest.raises(TopologyError, match="streamlets: two are named 'same'"):
        twice.build()


twice = Builder("twice")


def test_a_topology_file_may_expose_a_builder(tmp_path):
    path = tmp_path / "streamlet_file.py"
    path.write_text("from squall import Builder\nb = Builder()\nb.source(range(3)).map(str).log()\n")
    t = load_topology_file(str(path))
    assert t.name == "streamlet_file" and [c.name for c in t.components] == ["source0", "map1", "log2"]
    assert t.plan.source_file == str(path)
    two = tmp_path / "two_builders.py"
    two.write_text("from squall import Builder\na = Builder()\nb = Builder()\n")
    with pytest.raises(Exception, match="exposes 2 streamlet builders: a, b; keep one"):
        load_topology_file(str(two))


def test_by_key_operators_take_pairs_as_heronpy_does():
    b = Builder("pairs")
    counts = b.source(["a", "b"]).map(lambda w: (w, 1)).reduce_by_key(max)
    assert [(s.op, s.keyed) for s in counts.parents] == [("key_by", True)]  # keyed for it: (w, 1) -> w, 1
    key_by = counts.parents[0]
    assert key_by.details["fn"](["w", 1]) == "w" and key_by.details["value"](("w", 1)) == 1
    with pytest.raises(TypeError, match=r"a by-key operator got 'word': it needs \(key, value\) pairs, or a "
                                        r"keyed streamlet \(key_by\)"):
        key_by.details["fn"]("word")
    assert Window.sliding(duration=4, every=2).duration == 4 and Window.tumbling(count=3).count == 3
    assert Window.tumbling(count=3).duration is None and Window.tumbling(duration=1).count is None
