"""The compiled emit (``runtime/instance/_emit.c``) sends, counts, returns and fails exactly as the pure
Python emit does, for a bolt's every kind of call: its own fast case and each call it hands on."""
import random

import msgpack
import pytest

from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder
from squall.idl import schema
from squall.logical import task_ids
from squall.runtime.instance import emit as emit_module
from squall.runtime.instance import make_instance
from squall.runtime.protocol import DATA_HEADER_SIZE, FrameReader, frame_dest

pytestmark = pytest.mark.skipif(emit_module.CompiledEmit is None,
                                reason="the compiled emit (runtime/instance/_emit.c) was not built here")


class Src(Spout):
    outputs = ["key", "n"]


class Mid(Bolt):
    outputs = [Stream(["key", "n"]), Stream(["key", "n"], name="side"), Stream(["x"], name="unused")]


class Sink(Bolt):
    pass


def mid_instance(monkeypatch, kind, batch_size):
    b = TopologyBuilder("compiled")
    src = b.add_spout("src", Src)
    mid = b.add_bolt("mid", Mid, inputs={src: Grouping.SHUFFLE})
    b.add_bolt("sink", Sink, par=3, inputs={mid: Grouping.fields("key"), mid["side"]: Grouping.SHUFFLE})
    topology = b.build().plan
    tasks = task_ids(topology)
    locations = [schema.InstanceLocation(id=schema.InstanceId(c, t, i), container=1, pid=1)
                 for c, ts in tasks.items() for i, t in enumerate(ts)]
    plan = schema.PhysicalPlan(topology_name="compiled", packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
                               tmaster=None, stmgrs=[], instances=locations)
    if kind == "pure":
        monkeypatch.setenv("SQUALL_PURE_PYTHON", "1")
    else:
        monkeypatch.delenv("SQUALL_PURE_PYTHON", raising=False)
    component = Mid()
    inst = make_instance(topology, "mid", tasks["mid"][0], 1, {}, batch_size=batch_size, component_obj=component)
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
    assert isinstance(compiled[0], emit_module.CompiledEmit)
    assert not isinstance(pure[0], emit_module.CompiledEmit)
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
