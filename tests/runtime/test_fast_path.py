"""The instance's fast emit path routes, batches and counts exactly like the generic one: every test
twice, with the compiled emit (``runtime/instance/_emit.c``, where it was built) and the pure Python."""
import msgpack
import pytest

from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder
from squall.idl import schema
from squall.logical import task_ids
from squall.runtime.instance.compiled import BUILT
from squall.runtime.instance import make_instance
from squall.runtime.protocol import DATA_HEADER_SIZE, FrameReader, frame_dest
from squall.runtime.routing import RoutingError, stable_hash


@pytest.fixture(autouse=True, params=["compiled", "pure"])
def emit_kind(request, monkeypatch):
    """The emit the instances made in the test get (``emit.compiled_emit`` reads the environment)."""
    if request.param == "pure":
        monkeypatch.setenv("SQUALL_PURE_PYTHON", "1")
    elif not BUILT:
        pytest.skip("the compiled emit (runtime/instance/_emit.c) was not built here")
    else:
        monkeypatch.delenv("SQUALL_PURE_PYTHON", raising=False)
    return request.param


class Src(Spout):
    outputs = [Stream(["key", "n"]), Stream(["key", "n"], name="side"), Stream(["x"], name="unused"),
               Stream(["key", "n"], name="direct", direct=True)]


class Sink(Bolt):
    pass


class CountingSrc(Src):
    """Overrides emit: the runtime must keep the override."""

    calls = 0

    def emit(self, values, tup_id=None, stream="default", direct_task=None):
        CountingSrc.calls += 1
        return super().emit(values, tup_id, stream, direct_task)


def build(grouping, par=5, src_class=Src):
    b = TopologyBuilder("fast")
    src = b.add_spout("src", src_class)
    b.add_bolt("sink", Sink, par=par, inputs={src: grouping, src["side"]: grouping,
                                              src["direct"]: Grouping.DIRECT})
    return b.build().plan


def instance(topology, component_obj, batch_size=1000):
    tasks = task_ids(topology)
    locations = [schema.InstanceLocation(id=schema.InstanceId(c, t, i), container=1, pid=1)
                 for c, ts in tasks.items() for i, t in enumerate(ts)]
    plan = schema.PhysicalPlan(topology_name="fast", packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
                               tmaster=None, stmgrs=[], instances=locations)
    inst = make_instance(topology, "src", tasks["src"][0], 1, {}, batch_size=batch_size, component_obj=component_obj)
    inst.on_physical_plan(plan)
    return inst, tasks["sink"]


def frames(inst):
    inst.flush_all()
    out = {}
    for f in FrameReader().feed(bytes(inst.out)):
        out.setdefault(frame_dest(f), []).extend(msgpack.unpackb(f[DATA_HEADER_SIZE:])[1])
    inst.out.clear()
    return out


def test_fields_keys_of_every_type_land_where_stable_hash_says():
    # with 5 tasks, "1", 1, 1.0 and True all hash to different tasks: a key cache
    # that confused equal-comparing keys would send 1.0 and True to 1's task
    keys = [1, "1", 1.0, True, None, b"1", [1, 2], "a", "1", 1, 1.0, True, [1, 2], "a"]
    assert len({stable_hash([k]) % 5 for k in ("1", 1, 1.0, True)}) == 4
    spout = Src()
    inst, sinks = instance(build(Grouping.fields("key")), spout)
    for n, key in enumerate(keys):
        sent = spout.emit([key, n])
        assert sent == (sinks[stable_hash([key]) % 5],), key
    got = frames(inst)
    assert sorted(n for runs in got.values() for _stream, vals in runs for _key, n in vals) == list(range(len(keys)))
    for dest, runs in got.items():
        assert all(sinks[stable_hash([key]) % 5] == dest for _s, vals in runs for key, _n in vals)


@pytest.mark.parametrize("grouping, expect", [
    (Grouping.SHUFFLE, "even"), (Grouping.NONE, "even"), (Grouping.LOCAL_OR_SHUFFLE, "even"),
    (Grouping.GLOBAL, "lowest"), (Grouping.partial_key("key"), "two per key"),
])
def test_value_free_and_partial_key_groupings(grouping, expect):
    spout = Src()
    inst, sinks = instance(build(grouping, par=3), spout)
    seen: dict = {}
    for n in range(300):
        (task,) = spout.emit([f"k{n % 4}", n])
        seen.setdefault(task, []).append(f"k{n % 4}")
    assert inst.emit_count == 300
    if expect == "even":
        assert sorted(len(v) for v in seen.values()) == [100, 100, 100]
    elif expect == "lowest":
        assert list(seen) == [min(sinks)]
    else:
        per_key = {k: {t for t, ks in seen.items() if k in ks} for k in ("k0", "k1", "k2", "k3")}
        assert all(1 <= len(ts) <= 2 for ts in per_key.values())
    assert sum(len(vals) for runs in frames(inst).values() for _s, vals in runs) == 300


def test_streams_keep_their_order_per_destination_across_both_paths():
    spout = Src()
    inst, sinks = instance(build(Grouping.GLOBAL, par=2), spout)
    low = min(sinks)
    spout.emit(["a", 1])
    spout.emit(["b", 2], stream="side")
    with pytest.raises(RoutingError, match="not declared direct"):
        spout.emit(["c", 3], direct_task=low)  # nothing queued
    spout.emit(["d", 4], stream="direct", direct_task=low)  # the generic path
    spout.emit(["e", 5])
    spout.emit(["f", 6])
    assert frames(inst) == {low: [["default", [["a", 1]]], ["side", [["b", 2]]], ["direct", [["d", 4]]],
                                  ["default", [["e", 5], ["f", 6]]]]}


def test_batches_hold_at_most_the_batch_size_when_streams_alternate():
    spout = Src()
    inst, sinks = instance(build(Grouping.GLOBAL, par=1), spout, batch_size=4)
    for n in range(3):
        spout.emit(["k", n], stream="default" if n % 2 == 0 else "side")
    assert not inst.out
    spout.emit(["k", 3], stream="side")  # the 4th tuple for that task: the batch leaves
    reader = FrameReader().feed(bytes(inst.out))
    assert [frame_dest(f) for f in reader] == sinks
    assert msgpack.unpackb(reader[0][DATA_HEADER_SIZE:])[1] == [
        ["default", [["k", 0]]], ["side", [["k", 1]]], ["default", [["k", 2]]], ["side", [["k", 3]]]]


def test_unsubscribed_stream_wrong_arity_and_overridden_emit():
    spout = Src()
    inst, _ = instance(build(Grouping.GLOBAL), spout)
    assert spout.emit(["x"], stream="unused") == () and inst.emit_count == 1
    with pytest.raises(RoutingError, match="has fields"):
        spout.emit(["only the key"])
    with pytest.raises(RoutingError, match="no output stream"):
        spout.emit(["k", 1], stream="nope")
    CountingSrc.calls = 0
    counting = CountingSrc()
    inst, sinks = instance(build(Grouping.GLOBAL, src_class=CountingSrc), counting)
    assert counting.emit(["k", 1]) == (min(sinks),) and CountingSrc.calls == 1
    assert type(counting).emit is CountingSrc.emit


def test_the_runtime_class_keeps_the_component_s_name_and_type():
    spout = Src()
    instance(build(Grouping.GLOBAL), spout)
    assert isinstance(spout, Src) and type(spout).__name__ == "Src" and type(spout).__module__ == __name__


def per_destination(inst):
    """{dest: [(stream, values), ...]} of what ``inst`` sent, and the largest frame's tuple count."""
    inst.flush_all()
    out: dict = {}
    largest = 0
    for f in FrameReader().feed(bytes(inst.out)):
        runs = msgpack.unpackb(f[DATA_HEADER_SIZE:])[1]
        largest = max(largest, sum(len(vals) for _s, vals in runs))
        out.setdefault(frame_dest(f), []).extend((stream, v) for stream, vals in runs for v in vals)
    inst.out.clear()
    return out, largest


@pytest.mark.parametrize("batch_size", [3, 1000])
def test_emit_many_sends_what_emit_one_at_a_time_sends(batch_size):
    # keys of every type (a known str, a new one, ints, an unhashable list), two streams, batches
    # filled and sent mid-list: each destination gets the same tuples in the same order
    lists = [[[f"w{n % 7}", n] for n in range(50)], [[[1, 2], 50], [1, 51], [True, 52], ["w1", 53]],
             [[f"new{n}", n] for n in range(54, 60)]]
    one, many = Src(), Src()
    inst_one, _ = instance(build(Grouping.fields("key")), one, batch_size)
    inst_many, _ = instance(build(Grouping.fields("key")), many, batch_size)
    for k, values_list in enumerate(lists):
        stream = "side" if k == 1 else "default"
        for values in values_list:
            one.emit(values, stream=stream)
        many.emit_many(values_list, stream=stream)
    assert type(many).emit_many is not Spout.emit_many  # the bulk path, not a loop of emits
    (sent_one, _), (sent_many, largest) = per_destination(inst_one), per_destination(inst_many)
    assert sent_many == sent_one and len(sent_one) > 1
    assert largest <= batch_size
    assert inst_many.emit_count == inst_one.emit_count == 60


class Row(list):
    """A row of a type of its own: the compiled cut (``cut_rows``) leaves it to the Python path."""


def test_emit_many_by_known_keys_sends_what_emit_one_at_a_time_sends_and_checks_its_values():
    # the second time round every key is known (the cut by key in C, where built): rows as lists,
    # tuples and a list subclass, all to one destination or spread, then one row too short
    rows = [[f"w{n % 7}", n] for n in range(40)] + [("w3", 40), Row(["w5", 41])]
    one, many = Src(), Src()
    inst_one, _ = instance(build(Grouping.fields("key")), one, 7)
    inst_many, _ = instance(build(Grouping.fields("key")), many, 7)
    one_destination = [r for r in rows if r[0] == "w2"]
    for values_list in (rows, rows, one_destination):
        for values in values_list:
            one.emit(values)
        many.emit_many(values_list)
    (sent_one, _), (sent_many, _) = per_destination(inst_one), per_destination(inst_many)
    assert sent_many == sent_one and len(sent_one) > 1
    assert inst_many.emit_count == inst_one.emit_count == 2 * len(rows) + len(one_destination)
    with pytest.raises(RoutingError, match="has fields"):
        many.emit_many([["w1", 1], ["w2"]])


def test_emit_many_of_a_shuffled_stream_spreads_evenly_and_checks_its_values():
    spout = Src()
    inst, sinks = instance(build(Grouping.SHUFFLE, par=3), spout)
    spout.emit_many([["k", n] for n in range(150)])
    spout.emit_many(["k", n] for n in range(150, 300))  # any iterable
    sent, _ = per_destination(inst)
    assert sorted(sent) == sorted(sinks) and [len(v) for v in sent.values()] == [100, 100, 100]
    assert sorted(v[1] for vs in sent.values() for _s, v in vs) == list(range(300))
    with pytest.raises(RoutingError, match="has fields"):
        spout.emit_many([["k", 1], ["only the key"]])
    with pytest.raises(ValueError, match="2 values but 1 tup_ids"):
        spout.emit_many([["k", 1], ["k", 2]], tup_ids=[1])


class IdSrc(Src):
    def initialize(self, config, context):
        self.acked = []

    def ack(self, tup_id):
        self.acked.append(tup_id)


def reliable_instance(spout):
    """``spout``'s instance at least once, its default stream shuffled to two tasks."""
    from squall.logical import with_overrides

    return instance(with_overrides(build(Grouping.SHUFFLE, par=2), {"topology.reliability.mode": "ATLEAST_ONCE"}),
                    spout)[0]


def test_a_spout_s_list_with_ids_on_a_stream_nothing_subscribes_to_completes_at_once():
    spout = IdSrc()
    inst = reliable_instance(spout)
    spout.emit_many([["x1"], ["x2"]], tup_ids=["a", "b"], stream="unused")
    assert spout.acked == ["a", "b"] and inst.emit_count == 2 and not frames(inst)


@pytest.mark.parametrize("call", ["emit_many", "emit_columns"])
def test_a_spout_s_list_with_some_ids_none_tracks_only_the_tuples_with_ids(call):
    inst = reliable_instance(IdSrc())
    if call == "emit_many":
        inst.component.emit_many([["k", 1], ["k", 2], ["k", 3]], tup_ids=["a", None, "c"])
    else:
        inst.component.emit_columns([["k", "k", "k"], [1, 2, 3]], tup_ids=["a", None, "c"])
    assert sorted(entry[0] for entry in inst.tracker.trees.values()) == ["a", "c"] and inst.emit_count == 3
    assert sum(len(vals) for runs in frames(inst).values() for _s, vals, _spans in runs) == 3
