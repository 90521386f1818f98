"""Map-side combining (runtime/instance/combine.py): the combine buffer alone, then a sending instance's
batches as they leave. No sockets."""
import json
import os

import msgpack
import pytest

from squall import Spout
from squall.idl import schema
from squall.loader import load_topology_file
from squall.runtime.instance import make_instance
from squall.runtime.instance.batch import Batch
from squall.runtime.instance.combine import CombineError, Combiner, one_span
from squall.logical import topology_config
from squall.runtime.protocol import DATA, DEST_COUNT, HEADER_SIZE, FrameReader
from squall.stateful import stable_hash

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY = load_topology_file(os.path.join(HERE, "topologies", "rt_combine.py")).plan


def add(a, b):
    return [a[0], a[1] + b[1]]


def test_one_partial_per_key_in_the_order_keys_first_came():
    combine = Combiner("count", "default", add, [0])
    vals = [["b", 1], ["a", 2], ["b", 3], ["c", 4], ["a", 5]]
    assert combine(vals) == [["b", 4], ["a", 7], ["c", 4]]


def test_a_partial_folds_its_key_s_tuples_in_emit_order():
    combine = Combiner("count", "default", lambda a, b: [a[0], a[1] + b[1]], [0])
    assert combine([["k", "x"], ["j", "-"], ["k", "y"], ["k", "z"]]) == [["k", "xyz"], ["j", "-"]]


def test_keys_are_told_apart_as_the_fields_grouping_hashes_them():
    """1, 1.0 and True are one dict key but three msgpack encodings (three keys of stable_hash); lists work."""
    combine = Combiner("count", "default", add, [0])
    vals = [[1, 1], [1.0, 1], [True, 1], [1, 1], [[1, 2], 1], [[1, 2], 1], [None, 1], [None, 1]]
    assert combine(vals) == [[1, 2], [1.0, 1], [True, 1], [[1, 2], 2], [None, 2]]


def test_a_key_of_several_fields_is_their_values_together():
    combine = Combiner("count", "default", lambda a, b: [a[0], a[1] + b[1], a[2]], [0, 2])
    vals = [["a", 1, "x"], ["a", 1, "y"], ["a", 1, "x"]]
    assert combine(vals) == [["a", 2, "x"], ["a", 1, "y"]]


def test_nothing_to_fold_leaves_the_run_as_it_was():
    never = Combiner("count", "default", lambda a, b: pytest.fail("combine called without two tuples of a key"), [0])
    vals = [["a", 1], ["b", 1]]
    assert never(vals) is vals


@pytest.mark.parametrize("bad, what", [(lambda a, b: ["other", a[1] + b[1]], "key"),
                                       (lambda a, b: [a[0]], "fields")])
def test_a_combine_that_changes_the_key_or_the_width_is_named(bad, what):
    with pytest.raises(CombineError, match=r"count.combine returned .* for tuples of stream 'default': a partial "
                                           r"must keep their 2 fields and their key"):
        Combiner("count", "default", bad, [0])([["a", 1], ["a", 2]])


class Emitter(Spout):
    def initialize(self, config, context):
        pass


def plan():
    locations = [schema.InstanceLocation(id=schema.InstanceId(c, t, i), container=1, pid=t)
                 for c, t, i in (("words", 1, 0), ("count", 2, 0), ("count", 3, 1), ("tally", 4, 0))]
    return schema.PhysicalPlan(
        topology_name=TOPOLOGY.name, packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation(topology_name=TOPOLOGY.name, host="h", control_port=1, pid=1, run_id="r"),
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)], instances=locations)


def sent_runs(inst, spans=False):
    """{destination task: (tuples in the header, [[stream, values list(, spans)], ...])} of the DATA frames
    sent."""
    out = {}
    for frame in FrameReader().feed(bytes(inst.out)):
        assert frame[4] == DATA
        dest, count = DEST_COUNT.unpack_from(frame, HEADER_SIZE)
        _src, runs, _epoch = msgpack.unpackb(frame[HEADER_SIZE + DEST_COUNT.size:])
        assert dest not in out
        out[dest] = (count, runs if spans else [run[:2] for run in runs])
    inst.out.clear()
    return out


WORDS = "a b a d e b a d a".split()  # both count tasks get a word twice (d, e: task 2; a, b: 3)


def emitted(mode, tracked=False):
    """A words task under ``mode`` after emitting WORDS to count (fields grouping) and tally (shuffle);
    ``tracked``: each word with an id (its index), a tree of its own."""
    config = topology_config(TOPOLOGY).with_layer({"topology.reliability.mode": mode}, "test")
    inst = make_instance(TOPOLOGY, "words", 1, 1, config, component_obj=Emitter())
    inst.on_physical_plan(plan())
    for i, word in enumerate(WORDS):
        inst.component.emit([word, 1], tup_id=i if tracked else None)
    inst.flush_all()
    return inst


def owner(word):
    """The count task of ``word`` (fields grouping: stable_hash over the two count tasks 2 and 3)."""
    return [2, 3][stable_hash([word]) % 2]


def test_at_most_once_each_count_task_gets_one_partial_per_word_and_tally_every_word():
    inst = emitted("ATMOST_ONCE")
    frames = sent_runs(inst)
    assert frames[4] == (9, [["default", [[w, 1] for w in WORDS]]])  # shuffled into tally: not combined
    expected = {2: [], 3: []}
    for word in dict.fromkeys(WORDS):
        expected[owner(word)].append([word, WORDS.count(word)])
    for task in (2, 3):
        partials = expected[task]
        if partials:
            assert frames[task] == (len(partials), [["default", partials]])
        else:
            assert task not in frames
    assert sum(len(p) for p in expected.values()) == 4
    user = json.loads(inst.metrics_row(0.0, 1.0).user)
    assert (user["combined_in"], user["combined_out"]) == (9, 4)
    assert json.loads(inst.metrics_row(0.0, 1.0).user)["combined_in"] == 0, "counted per bucket"


def test_a_columnar_run_is_combined_as_rows():
    config = topology_config(TOPOLOGY).with_layer({"topology.reliability.mode": "ATMOST_ONCE"}, "test")
    inst = make_instance(TOPOLOGY, "words", 1, 1, config, component_obj=Emitter())
    inst.on_physical_plan(plan())
    batch = Batch(2, 1000)
    batch.add_columns("default", [WORDS, [1] * len(WORDS)], len(WORDS), None, False)
    inst.combining.combine(batch)
    assert batch.runs == [["default", [[w, WORDS.count(w)] for w in dict.fromkeys(WORDS)]]]
    assert batch.count() == 4
    # emitted as columns to two subscribers (count, tally): rows, as emit_many sends them
    inst.component.emit_columns([WORDS, [1] * len(WORDS)])
    inst.flush_all()
    assert sent_runs(inst)[4] == (9, [["default", [[w, 1] for w in WORDS]]])


def test_at_least_once_a_run_s_partials_are_one_span_in_every_tree_of_the_run():
    inst = emitted("ATLEAST_ONCE", tracked=True)
    frames = sent_runs(inst, spans=True)
    trees = inst.tracker.trees  # root -> [tup_id, xor of its open values, emitted at]
    assert sorted(entry[0] for entry in trees.values()) == list(range(len(WORDS)))
    (_, tallied, tally_spans), = frames[4][1]
    assert tallied == [[w, 1] for w in WORDS] and len(tally_spans) == 3 * len(WORDS)  # a span a word, as ever
    acked = {}
    for k in range(0, len(tally_spans), 3):
        acked[tally_spans[k + 1]] = tally_spans[k + 2]
    for task in (2, 3):
        (stream, partials, spans), = frames[task][1]
        words = [w for w in WORDS if owner(w) == task]
        assert sorted(partials) == sorted([w, words.count(w)] for w in set(words))
        start, roots, values = spans
        assert start == 0 and len(roots) == len(words)  # one span: every word's tree
        for root, value in zip(roots, values):
            acked[root] = acked.get(root, 0) ^ value
    for root, (tup_id, xor, _) in trees.items():  # acking every span sent closes every tree exactly
        assert acked.pop(root) == xor, f"tree of word {tup_id}"
    assert acked == {}


def test_one_span_keeps_each_root_s_xor_and_leaves_untracked_tuples_out():
    spans = [0, 7, 0b0011, 2, None, 0, 3, [7, 9], [0b0101, 0b1000], 5, [9, 11], 0b1111]
    assert one_span(spans) == [0, [7, 9, 11], [0b0011 ^ 0b0101, 0b1000 ^ 0b1111, 0b1111]]
    assert one_span([0, None, 0, 4, 5, 6]) == [0, 5, 6]
    assert one_span([0, None, 0]) == [0, None, 0]
