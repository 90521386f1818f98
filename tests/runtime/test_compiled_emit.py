"""The compiled emit (``runtime/instance/_emit.c``) sends, counts, returns and fails exactly as the pure
Python emit does, for every kind of call: its own fast cases and each call it hands on; at most once,
and at least once a spout's tuples with ids and a bolt's anchored emits, spans and acks included."""
import random

import msgpack
import pytest

from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder
from squall.idl import schema
from squall.logical import task_ids, with_overrides
from squall.runtime import acking
from squall.runtime.instance import emit as emit_module
from squall.runtime.instance.compiled import BUILT, _emit
from squall.runtime.instance import make_instance
from squall.runtime.protocol import ACK, CONTROL, DATA_HEADER_SIZE, FrameReader, data_frame, frame_dest

pytestmark = pytest.mark.skipif(not BUILT,
                                reason="the compiled emit (runtime/instance/_emit.c) was not built here")


class Src(Spout):
    outputs = [Stream(["key", "n"]), Stream(["key", "n"], name="side"), Stream(["x"], name="unused")]

    def __init__(self):
        self.acked = []

    def ack(self, tup_id):
        self.acked.append(tup_id)


class Mid(Bolt):
    outputs = [Stream(["key", "n"]), Stream(["key", "n"], name="side"), Stream(["x"], name="unused")]


class Sink(Bolt):
    pass


def mid_instance(monkeypatch, kind, batch_size, mode="ATMOST_ONCE", component=None, name="mid", seeded=True):
    """The task ``name`` (mid, or src) of src -> mid -> sink (3 tasks by key, and ``side`` shuffled), with the
    ``kind`` of emit; at least once, its random span values drawn from one seeded sequence."""
    b = TopologyBuilder("compiled")
    src = b.add_spout("src", Src)
    mid = b.add_bolt("mid", Mid, inputs={src: Grouping.SHUFFLE, src["side"]: Grouping.SHUFFLE})
    b.add_bolt("sink", Sink, par=3, inputs={mid: Grouping.fields("key"), mid["side"]: Grouping.SHUFFLE})
    topology = with_overrides(b.build().plan, {"topology.reliability.mode": mode})
    tasks = task_ids(topology)
    locations = [schema.InstanceLocation(id=schema.InstanceId(c, t, i), container=1, pid=1)
                 for c, ts in tasks.items() for i, t in enumerate(ts)]
    plan = schema.PhysicalPlan(topology_name="compiled", packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
                               tmaster=None, stmgrs=[], instances=locations)
    if kind == "pure":
        monkeypatch.setenv("SQUALL_PURE_PYTHON", "1")
    else:
        monkeypatch.delenv("SQUALL_PURE_PYTHON", raising=False)
    if seeded:
        bits = random.Random(11).getrandbits  # the same span values, drawn in the same order, for both emits
        monkeypatch.setattr(acking, "random_bits", bits)
        monkeypatch.setattr(emit_module, "random_bits", bits)
    component = Mid() if component is None else component
    inst = make_instance(topology, name, tasks[name][0], 1, {}, batch_size=batch_size, component_obj=component)
    random.seed(7)  # the shuffle's first task
    inst.on_physical_plan(plan)
    return inst, component


def sent(inst):
    """[(dest, stream, values), ...] in the order the frames left."""
    inst.flush_all()
    out = [(frame_dest(f), stream, values) for f in FrameReader().feed(bytes(inst.out))
           for stream, vals in msgpack.unpackb(f[DATA_HEADER_SIZE:])[1] for values in vals]
    inst.out.clear()
    return out


def frames(inst):
    """[(type, dest, body), ...]: the DATA and ACK frames ``inst`` sent (flushed), spans and acks included."""
    inst.flush_all()
    out = [(f[4], frame_dest(f), msgpack.unpackb(f[DATA_HEADER_SIZE:])) for f in FrameReader().feed(bytes(inst.out))
           if f[4] != CONTROL]
    inst.out.clear()
    return out


CALLS = [  # (args, kwargs) of bolt.emit: the fast case, and every call it hands to the Python emit
    *((([f"w{n % 5}", n],), {}) for n in range(20)),  # known and new str keys
    (([1, 20],), {}), (([1.0, 21],), {}), (([True, 22],), {}), (([None, 23],), {}),
    (([[1, 2], 24],), {}),  # an unhashable key: the chooser
    ((("w1", 25),), {}),  # a tuple of values
    (([b"w2", 26],), {}),
    *((([f"w{n}", n], "side"), {}) for n in range(27, 30)),  # a stream given positionally
    *((([f"w{n}", n],), {"stream": "side"}) for n in range(30, 33)),
    ((["w3", 33],), {"anchors": []}),
    ((["x"],), {"stream": "unused"}),  # nothing subscribes
    *((([f"w{n % 3}", n],), {}) for n in range(34, 60)),  # batches of 4 fill and leave in between
]


def run_calls(monkeypatch, kind):
    inst, bolt = mid_instance(monkeypatch, kind, batch_size=4)
    returned = [bolt.emit(*args, **kwargs) for args, kwargs in CALLS]
    errors = []
    for args in ((["only the key"],), (["k", 1], "nope")):
        with pytest.raises(Exception) as failed:
            bolt.emit(*args)
        errors.append((type(failed.value), str(failed.value)))
    with pytest.raises(TypeError):
        bolt.emit(5)  # no len(): Python's own error
    return type(bolt).__dict__["emit"], returned, errors, inst.emit_count, sent(inst)


def test_a_bolt_s_emits_leave_the_same_through_the_compiled_and_the_pure_emit(monkeypatch):
    compiled, pure = run_calls(monkeypatch, "compiled"), run_calls(monkeypatch, "pure")
    assert isinstance(compiled[0], _emit.CompiledEmit)
    assert not isinstance(pure[0], _emit.CompiledEmit)
    assert compiled[1:] == pure[1:]
    _, returned, errors, emits, frames = compiled
    assert emits == len(CALLS)  # every call counted once, the handed-on ones included
    assert returned[-1] != () and returned[CALLS.index(((["x"],), {"stream": "unused"}))] == ()
    assert [e[0].__name__ for e in errors] == ["RoutingError", "RoutingError"]
    assert sorted(n for _dest, _stream, (_key, n) in frames) == list(range(60))
    assert len({dest for dest, _s, _v in frames}) == 3


def test_the_compiled_emit_binds_as_a_method_and_hands_every_other_call_on(monkeypatch):
    inst, bolt = mid_instance(monkeypatch, "compiled", batch_size=1000)
    emit = type(bolt).__dict__["emit"]
    assert type(bolt).emit is emit  # looked up on the class: itself, as a function is
    assert bolt.emit.__self__ is bolt  # on the component: bound to it
    assert emit(bolt, ["w1", 1]) == bolt.emit(["w1", 2])
    assert emit.fallback(bolt, ["w1", 3], "side") != ()
    assert inst.emit_count == 3


SPOUT_CALLS = [  # (args, kwargs) of a spout's emit at least once: with an id either way, without, and handed on
    *((([f"w{n % 5}", n],), {"tup_id": f"t{n}"}) for n in range(12)),
    *((([f"w{n % 4}", n], f"t{n}"), {}) for n in range(12, 20)),  # the id positionally
    ((["w1", 20],), {}), ((["w2", 21],), {"tup_id": None}),  # untracked: a span of no tree
    *((([f"w{n % 3}", n],), {"tup_id": n}) for n in range(22, 30)),
    ((["w1", 30],), {"tup_id": "s", "stream": "side"}), ((["w1", 31], "u", "side"), {}),  # a stream: handed on
    ((["x"],), {"tup_id": "nobody", "stream": "unused"}),  # nothing subscribes: complete at once
    (([[1], 32],), {"tup_id": "unhashable"}),
    *((([f"w{n % 2}", n],), {"tup_id": n}) for n in range(33, 50)),  # batches of 4 fill and leave in between
]


def run_spout_calls(monkeypatch, kind):
    inst, spout = mid_instance(monkeypatch, kind, 4, "ATLEAST_ONCE", Src(), "src")
    returned = [spout.emit(*args, **kwargs) for args, kwargs in SPOUT_CALLS]
    trees = {root: entry[:2] for root, entry in inst.tracker.trees.items()}
    return type(spout).__dict__["emit"], returned, inst.emit_count, spout.acked, trees, frames(inst)


def test_a_spout_s_tuples_with_ids_leave_the_same_through_the_compiled_and_the_pure_emit(monkeypatch):
    compiled, pure = run_spout_calls(monkeypatch, "compiled"), run_spout_calls(monkeypatch, "pure")
    assert isinstance(compiled[0], _emit.CompiledEmit) and not isinstance(pure[0], _emit.CompiledEmit)
    assert compiled[1:] == pure[1:]
    _, returned, emits, acked, trees, sent_frames = compiled
    assert emits == len(SPOUT_CALLS) and acked == ["nobody"]
    ids = {tup_id for args, kwargs in SPOUT_CALLS for tup_id in [kwargs.get("tup_id", args[1] if len(args) > 1 else None)]
           if tup_id is not None and tup_id != "nobody"}
    assert sorted(map(str, (tup_id for tup_id, _xor in trees.values()))) == sorted(map(str, ids))
    spans = [span for _t, _d, body in sent_frames for run in body[1] for span in zip(*[iter(run[2])] * 3)]
    in_trees = {root: value for _start, root, value in spans if root is not None}
    assert {root: (tup_id, xor) for root, (tup_id, xor) in trees.items()} == \
        {root: (tup_id, in_trees[root]) for root, (tup_id, _x) in trees.items()}  # a span a tree, its value the xor
    untracked = [values for _t, _d, body in sent_frames for run in body[1]
                 for (start, roots, _v), end in zip(zip(*[iter(run[2])] * 3), [*run[2][3::3], len(run[1])])
                 if roots is None for values in run[1][start:end]]
    assert untracked == [["w1", 20], ["w2", 21]]  # the two emits without an id: in spans of no tree


def own_generator_trees(monkeypatch, n):
    """A spout's compiled emit with random_bits as the runtime has it: its trees after ``n`` emits with ids."""
    inst, spout = mid_instance(monkeypatch, "compiled", 1000, "ATLEAST_ONCE", Src(), "src", seeded=False)
    assert isinstance(type(spout).__dict__["emit"], _emit.CompiledEmit)
    for n in range(n):
        spout.emit([f"w{n % 5}", n], tup_id=n)
    return inst.tracker.trees


def test_a_spout_s_compiled_emit_draws_span_values_of_its_own_and_a_forked_child_other_ones(monkeypatch):
    import json
    import os
    import time

    before = time.monotonic()
    trees = own_generator_trees(monkeypatch, 1000)
    after = time.monotonic()
    values = [xor for _tup_id, xor, _at in trees.values()]
    assert len(set(values)) == len(trees) == 1000 and all(0 < v < 1 << 64 for v in values)
    assert sum(v.bit_length() > 60 for v in values) > 900  # 64 random bits, not a counter
    assert all(before <= at <= after for _tup_id, _xor, at in trees.values())  # time.monotonic's clock
    assert len({root >> acking.TASK_SHIFT for root in trees}) == 1  # the spout task's, above the value's bits
    assert all(root & acking.ROOT_BITS == xor & acking.ROOT_BITS for root, (_tup_id, xor, _at) in trees.items())
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child draws; the parent draws as many: the two must differ
        drawn = [xor for _t, xor, _a in own_generator_trees(monkeypatch, 10).values()]
        os.write(write, json.dumps(drawn).encode())
        os._exit(0)
    os.close(write)
    mine = [xor for _t, xor, _a in own_generator_trees(monkeypatch, 10).values()]
    with os.fdopen(read) as f:
        child = json.loads(f.read())
    os.waitpid(pid, 0)
    assert len(child) == 10 and not set(child) & set(mine)


class Scripted(Mid):
    """Emits for each tuple what ``SCRIPT`` says its n does: anchored (the default), after acking the
    tuple (unanchored), on another stream, or by failing it or raising (``auto_fail``)."""

    def process(self, tup):
        key, n = tup.values
        for step in SCRIPT.get(n % 6, ()):
            if step == "ack":
                self.ack(tup)
            elif step == "fail":
                self.fail(tup)
            elif step == "raise":
                raise ValueError(f"tuple {n}")
            elif step == "side":
                self.emit([key, n], "side")
            else:
                self.emit([f"{key}{step}", n])


SCRIPT = {0: ("a", "b", "c"), 1: ("a",), 2: ("a", "ack", "b"), 3: ("side", "a", "side", "b"), 4: ("a", "fail", "b"),
          5: ("a", "raise")}


def received(n, spans):
    """A DATA frame from src to mid: the tuples [w<n % 3>, n] for n in range(n), in ``spans`` (flat)."""
    run = ["default", [[f"w{i % 3}", i] for i in range(n)], spans]
    return data_frame(2, msgpack.packb([1, [run], 0]), n)


@pytest.mark.parametrize("auto_anchor", [True, False])
@pytest.mark.parametrize("batch_size", [4, 100])  # batches leave within spans; a span's ack rides on its last child
def test_a_bolt_s_anchored_emits_leave_the_same_through_the_compiled_and_the_pure_emit(monkeypatch, auto_anchor,
                                                                                      batch_size):
    root = 1 << acking.TASK_SHIFT

    def run(kind):
        bolt = type("Bolt", (Scripted,), {"auto_anchor": auto_anchor})()
        inst, bolt = mid_instance(monkeypatch, kind, batch_size, "ATLEAST_ONCE", bolt)
        assert (inst.auto_acked_loop is not None) == (kind == "compiled")  # the receive loop in C, or in Python
        for spans in ([0, root | 1, 0x11, 3, root | 2, 0x22, 7, None, 0, 9, [root | 3, root | 4], [0x33, 0x44]],
                      [0, root | 5, 0x55], [0, None, 0, 2, root | 6, 0x66],
                      [0, root | 7, 0x77, 3, None, 0, 6, root | 8, 0x88, 9, None, 0],  # acked: their acks ride
                      [0, root | 10, 0xAA, 5, root | 11, 0xBB]):  # a span's first tuple raises
            inst.on_frame(received(12, spans), 0.0)
        return type(bolt).__dict__["emit"], inst.emit_count, inst.ack_count, inst.fail_count, frames(inst)

    compiled, pure = run("compiled"), run("pure")
    assert isinstance(compiled[0], _emit.CompiledEmit) and not isinstance(pure[0], _emit.CompiledEmit)
    assert compiled[1:] == pure[1:]
    _, emits, _acks, fails, sent_frames = compiled
    assert emits == 5 * sum(len(SCRIPT.get(n % 6, ())) - SCRIPT.get(n % 6, ()).count("ack")
                            - SCRIPT.get(n % 6, ()).count("fail") - SCRIPT.get(n % 6, ()).count("raise")
                            for n in range(12))
    assert fails == 5 * 4
    spans = [span for t, _d, body in sent_frames if t != ACK for run in body[1] for span in zip(*[iter(run[2])] * 3)]
    anchored = [roots for _start, roots, _value in spans if roots is not None]
    assert bool(anchored) == auto_anchor  # without auto_anchor every span is of no tree


def test_cut_rows_cuts_as_per_destination_does_or_leaves_the_list_to_it():
    a, b, c = object(), object(), object()  # three destinations' batches
    known = {"x": a, "y": b, "z": c}
    route = (2, 0, known, None, None, None)  # (width, key index, known keys' batches, ...): emit.py's route
    rows = [["x", 1], ("y", 2), ["x", 3], ["z", 4], ["y", 5]]
    assert _emit.cut_rows(known, 0, 2, rows) == emit_module.per_destination(route, {}, rows) == [
        (a, [["x", 1], ["x", 3]]), (b, [("y", 2), ["y", 5]]), (c, [["z", 4]])]
    alone = [["y", 1], ["y", 2]]
    assert _emit.cut_rows(known, 0, 2, alone)[0][1] is alone  # one destination: the list itself, as in Python
    assert _emit.cut_rows({1: a}, 1, 2, [["x", 1]]) == [(a, [["x", 1]])]  # the key's index, any key the dict has

    class Row(list):
        pass

    for not_cut in ([["x", 1], ["y"]], [["x", 1], ["new", 2]], [["x", 1], [["unhashable"], 2]],
                    [["x", 1], Row(["y", 2])], [["x", 1], "xy"]):
        assert _emit.cut_rows(known, 0, 2, not_cut) is None, not_cut
    with pytest.raises(ValueError, match="key_index"):
        _emit.cut_rows(known, 2, 2, rows)


def test_process_rows_runs_a_run_as_the_python_loop_does():
    from squall.component import TupleSource
    from squall.runtime.instance.tuples import ReceivedTuple, process_run

    class Recorder(Bolt):
        def __init__(self, rows):
            self.rows, self.seen = rows, []

        def process(self, tup):
            self.seen.append((type(tup), tup.values, tup.source, tup.id, tup.roots, getattr(tup, "made", False)))
            if tup.values == ["grow"]:
                self.rows.append(["grown"])  # a row the run gets while it runs: taken, after the others
            if tup.values == ["raise"]:
                raise ValueError("at this tuple")

    class Initialised(ReceivedTuple):  # its own __init__: made by calling it, its values set by name
        __slots__ = ("made",)

        def __init__(self):
            self.made = True

    source = TupleSource("up", "default", 3, ("word",))
    runs = {"python": lambda bolt: process_run(bolt, False, bolt.rows, source),
            "c": lambda bolt: _emit.process_rows(ReceivedTuple, bolt.process, bolt.rows, source),
            "c, a make with its own __init__": lambda bolt: _emit.process_rows(Initialised, bolt.process, bolt.rows,
                                                                                source)}
    seen = {}
    for kind, run in runs.items():
        bolt = Recorder([["a"], ["grow"], ["b"], ["raise"], ["never"]])
        with pytest.raises(ValueError, match="at this tuple"):  # the raise ends the run and goes on up
            run(bolt)
        seen[kind] = bolt.seen
    expected = [(ReceivedTuple, values, source, None, None, False) for values in (["a"], ["grow"], ["b"], ["raise"])]
    assert seen["python"] == seen["c"] == expected
    assert seen["c, a make with its own __init__"] == [(Initialised, *s[1:5], True) for s in expected]
    bolt = Recorder([["grow"]])
    _emit.process_rows(ReceivedTuple, bolt.process, bolt.rows, source)
    assert [s[1] for s in bolt.seen] == [["grow"], ["grown"]]
