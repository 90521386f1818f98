"""A chain and its edges without sockets: real bolt objects driven through ``Chain.on_frame``, checking what
each member processed and emitted, the acks and fails, and the XOR values of the trees.

Topology: ``a_src`` (spout, task 1) -> ``b_mid`` (task 2) -> ``c_out`` (task 3), one task each, so any two
neighbours can be chained (squall/chaining.py). ``b_mid`` upper-cases words and drops "skip";
``c_out`` records what it gets and fails or raises on "fail"/"raise".
"""
import msgpack
import pytest

from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder
from squall.idl import schema
from squall.runtime.acking import TASK_SHIFT, root_task
from squall.runtime.instance import make_instance
from squall.runtime.instance.chain import Chain
from squall.runtime.instance.edge import SAMPLE_EVERY, UserError
from squall.runtime.protocol import ACK, CONTROL, DATA, DATA_HEADER_SIZE, FrameReader, control_frame, data_frame, \
    frame_dest
from squall.runtime.routing import RoutingError

SRC, MID, OUT = 1, 2, 3


class Src(Spout):
    outputs = ["word"]

    def __init__(self, words=(), ids=True, many=False):
        self.todo = list(words)
        self.ids, self.many = ids, many
        self.acked, self.failed = [], []

    def next_tuple(self):
        if not self.todo:
            return
        if self.many:  # emit_many: one call for all
            words, self.todo = self.todo, []
            self.emit_many([[w] for w in words], tup_ids=list(words) if self.ids else None)
        else:
            word = self.todo.pop(0)
            self.emit([word], tup_id=word if self.ids else None)

    def ack(self, tup_id):
        self.acked.append(tup_id)

    def fail(self, tup_id):
        self.failed.append(tup_id)


class Mid(Bolt):
    outputs = ["word"]

    def process(self, tup):
        if tup["word"] != "skip":
            self.emit([tup["word"].upper()])


class Out(Bolt):
    outputs = [Stream(["word"], name="unused")]

    def __init__(self):
        self.seen = []
        self.roots = []

    def process(self, tup):
        self.seen.append((tup.component, tup.stream, tup.task, tup["word"]))
        self.roots.append(tup.roots)
        if tup["word"] == "FAIL":
            self.fail(tup)
        elif tup["word"] == "RAISE":
            raise RuntimeError("planted")


class BatchOut(Out):
    def process_batch(self, batch):
        self.seen.append([values[0] for values in batch.values])
        self.roots.append(batch.roots)
        if ["FAIL"] in batch.values:
            self.fail(batch)


def topology(mode="ATMOST_ONCE"):
    b = TopologyBuilder("chain_units")
    src = b.add_spout("a_src", Src)
    mid = b.add_bolt("b_mid", Mid, inputs={src: Grouping.SHUFFLE})
    b.add_bolt("c_out", Out, inputs={mid: Grouping.SHUFFLE})
    b.set_config({"topology.reliability.mode": mode, "topology.message.timeout.secs": 30,
                  "topology.max.spout.pending": None})
    return b.build().plan


def plan_frame():
    names = {SRC: "a_src", MID: "b_mid", OUT: "c_out"}
    return control_frame(physical_plan=schema.PhysicalPlan(
        topology_name="chain_units", packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation(topology_name="chain_units", host="h", control_port=1, pid=1, run_id="r"),
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)],
        instances=[schema.InstanceLocation(id=schema.InstanceId(names[t], t, 0), container=1, pid=t) for t in names]))


def make(topo, name, task, obj, chained_to=None, fast_path=True):
    nxt = {SRC: "b_mid", MID: "c_out"}
    return make_instance(topo, name, task, 1, None, component_obj=obj, fast_path=fast_path,
                         chained={nxt[task]: chained_to} if chained_to else None)


def sent(process):
    """The frames ``process`` sent (flushed), by type: {DATA: [(dest, runs)], ACK: [(dest, acks, fails)]}."""
    process.flush_all()
    out = {DATA: [], ACK: [], CONTROL: []}
    for f in FrameReader().feed(bytes(process.out)):
        if f[4] == CONTROL:
            out[CONTROL].append(f)
            continue
        body = msgpack.unpackb(f[DATA_HEADER_SIZE:])
        out[f[4]].append((frame_dest(f), *body[1:3]) if f[4] == ACK else (frame_dest(f), body[1]))
    process.out.clear()
    return out


def rows(chain):
    return {row.task_id: row for row in chain.metrics_rows(0.0, 1.0, 0, 0.0)}


def words_frame(words, spans=None):
    """A DATA frame from a_src to b_mid with ``words`` (at least once: ``spans``, flat)."""
    run = ["default", [[w] for w in words]] + ([spans] if spans is not None else [])
    return data_frame(MID, msgpack.packb([SRC, [run], 0]), len(words))


FAST = pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path-on", "fast-path-off"])


# at most once -------------------------------------------------------------------------------
@FAST
def test_a_bolt_head_hands_each_tuple_to_the_next_member_by_call(fast_path):
    topo = topology()
    out = Out()
    chain = Chain([make(topo, "b_mid", MID, Mid(), chained_to=OUT, fast_path=fast_path),
                   make(topo, "c_out", OUT, out, fast_path=fast_path)])
    chain.on_frame(plan_frame(), 0.0)
    chain.on_frame(words_frame(["a", "skip", "b"] * 20), 0.0)
    assert out.seen == [("b_mid", "default", MID, w) for w in ["A", "B"] * 20]
    frames = sent(chain)
    assert frames[DATA] == [] and frames[ACK] == [], "nothing leaves the chain: the tuples went by call"
    assert [len(f) for f in frames[CONTROL]] != [], "the head reports what it consumed"
    r = rows(chain)
    assert (r[MID].execute_count, r[MID].emit_count) == (60, 40)
    assert (r[OUT].execute_count, r[OUT].emit_count, r[OUT].ack_count) == (40, 0, 0)


def test_a_batched_member_gets_an_emit_many_as_one_batch_and_an_emit_as_a_batch_of_one():
    class ManyMid(Mid):
        def process(self, tup):
            words = tup["word"].split()
            if len(words) > 1:
                self.emit_many([[w] for w in words])
            else:
                self.emit(words)

    topo = topology()
    out = BatchOut()
    chain = Chain([make(topo, "b_mid", MID, ManyMid(), chained_to=OUT), make(topo, "c_out", OUT, out)])
    chain.on_frame(plan_frame(), 0.0)
    chain.on_frame(words_frame(["x y z", "w"]), 0.0)
    assert out.seen == [["x", "y", "z"], ["w"]]
    assert rows(chain)[OUT].execute_count == 4


def test_an_emit_with_the_wrong_number_of_values_names_the_stream():
    class Wrong(Mid):
        def process(self, tup):
            self.emit([tup["word"], 1])

    topo = topology()
    chain = Chain([make(topo, "b_mid", MID, Wrong(), chained_to=OUT), make(topo, "c_out", OUT, Out())])
    chain.on_frame(plan_frame(), 0.0)
    with pytest.raises(RoutingError, match=r"stream b_mid/default has fields \['word'\], got 2 values"):
        chain.on_frame(words_frame(["a"]), 0.0)


def test_at_most_once_a_raise_in_the_next_member_names_it_and_stops_the_chain():
    topo = topology()
    down = make(topo, "c_out", OUT, Out())
    chain = Chain([make(topo, "b_mid", MID, Mid(), chained_to=OUT), down])
    chain.on_frame(plan_frame(), 0.0)
    with pytest.raises(UserError, match=r"task 3 \(c_out\) raised"):
        chain.on_frame(words_frame(["raise"]), 0.0)
    assert down.errors.count


def test_a_member_not_made_for_a_chain_is_refused():
    topo = topology()
    with pytest.raises(ValueError, match=r"task 2 \(b_mid\) was not made as a chain member"):
        Chain([make(topo, "b_mid", MID, Mid()), make(topo, "c_out", OUT, Out())])


def test_delivered_calls_are_timed_one_in_sample_every_and_their_time_moves_to_the_callee():
    topo = topology()
    up = make(topo, "b_mid", MID, Mid(), chained_to=OUT)
    chain = Chain([up, make(topo, "c_out", OUT, Out())])
    chain.on_frame(plan_frame(), 0.0)
    chain.on_frame(words_frame(["a"] * (SAMPLE_EVERY * 3)), 0.0)
    calls, sampled, samples = up.edge.take_counts()
    assert (calls, samples) == (SAMPLE_EVERY * 3, 3) and sampled > 0
    assert up.edge.take_counts() == (0, 0.0, 0), "taking the counts resets them"


# at least once ------------------------------------------------------------------------------
def at_least_once_spout_chain(src, out, fast_path=True):
    """a_src -> b_mid chained; c_out its own process. Returns (chain, c_out's instance)."""
    topo = topology("ATLEAST_ONCE")
    chain = Chain([make(topo, "a_src", SRC, src, chained_to=MID, fast_path=fast_path),
                   make(topo, "b_mid", MID, Mid(), fast_path=fast_path)])
    sink = make(topo, "c_out", OUT, out, fast_path=fast_path)
    chain.on_frame(plan_frame(), 0.0)
    sink.on_frame(plan_frame(), 0.0)
    return chain, sink


@FAST
def test_a_tree_that_never_leaves_the_chain_is_complete_when_the_emit_returns(fast_path):
    src = Src(["skip", "skip"])
    chain, _ = at_least_once_spout_chain(src, Out(), fast_path)
    while src.todo:
        chain.spout_burst()
    assert src.acked == ["skip", "skip"] and len(chain.head.tracker) == 0
    frames = sent(chain)
    assert frames[DATA] == [] and frames[ACK] == [], "no frame and no random value for a tree inside the chain"


@FAST
def test_a_tree_that_leaves_the_chain_opens_with_the_shares_of_what_left(fast_path):
    src, out = Src(["a", "b"]), Out()
    chain, sink = at_least_once_spout_chain(src, out, fast_path)
    while src.todo:
        chain.spout_burst()
    spout = chain.head
    assert src.acked == [] and len(spout.tracker) == 2
    ((dest, runs),) = sent(chain)[DATA]
    ((_stream, vals, spans),) = runs
    assert dest == OUT and vals == [["A"], ["B"]]
    by_root = {spans[k + 1]: spans[k + 2] for k in range(0, len(spans), 3)}
    assert {root: entry[1] for root, entry in spout.tracker.trees.items()} == by_root, \
        "each tree's XOR is the value of its one span that left the chain"
    assert all(root_task(root) == SRC for root in by_root)
    sink.on_frame(data_frame(OUT, msgpack.packb([MID, runs, 0]), 2), 0.0)
    ((ack_dest, acks, fails),) = sent(sink)[ACK]
    assert ack_dest == SRC and fails == []
    chain.on_frame(data_frame(SRC, msgpack.packb([OUT, acks, fails]), 0, ACK), 0.0)
    assert sorted(src.acked) == ["a", "b"] and len(spout.tracker) == 0
    r = rows(chain)
    assert (r[SRC].ack_count, r[MID].execute_count, r[MID].ack_count, r[MID].emit_count) == (2, 2, 2, 2)


@FAST
@pytest.mark.parametrize("how", ["fail", "raise"])
def test_a_fail_in_the_next_member_fails_the_spout_s_tree(how, fast_path):
    class Failing(Mid):
        def process(self, tup):
            if tup["word"] == how:
                if how == "fail":
                    self.fail(tup)
                else:
                    raise RuntimeError("planted")  # auto_fail
            else:
                super().process(tup)

    topo = topology("ATLEAST_ONCE")
    src = Src(["ok", how])
    chain = Chain([make(topo, "a_src", SRC, src, chained_to=MID, fast_path=fast_path),
                   make(topo, "b_mid", MID, Failing(), fast_path=fast_path)])
    chain.on_frame(plan_frame(), 0.0)
    while src.todo:
        chain.spout_burst()
    assert src.failed == [how] and src.acked == []
    assert len(chain.head.tracker) == 1, "the other tree waits for c_out"
    r = rows(chain)
    assert (r[MID].execute_count, r[MID].ack_count, r[MID].fail_count) == (2, 1, 1)
    assert (r[SRC].fail_count, r[SRC].ack_count) == (1, 0)


def test_an_emit_many_of_a_spout_head_is_one_span_of_one_tree_and_a_failed_batch_fails_each_tuple():
    topo = topology("ATLEAST_ONCE")
    src, out = Src(["a", "fail", "c"], many=True), BatchOut()

    class Upper(Mid):
        def process_batch(self, batch):
            self.emit_many([[values[0].upper()] for values in batch.values])

    chain = Chain([make(topo, "a_src", SRC, src, chained_to=MID), make(topo, "b_mid", MID, Upper(), chained_to=OUT),
                   make(topo, "c_out", OUT, out)])
    chain.on_frame(plan_frame(), 0.0)
    chain.spout_burst()
    assert out.seen == [["A", "FAIL", "C"]]
    (root,) = out.roots
    assert root_task(root) == SRC, "one span of one tree for the call"
    assert sorted(src.failed) == ["a", "c", "fail"] and src.acked == []
    r = rows(chain)
    assert (r[OUT].execute_count, r[OUT].fail_count, r[OUT].ack_count) == (3, 3, 0), "each tuple of it failed"
    assert (r[SRC].fail_count, r[MID].execute_count) == (3, 3)


@pytest.mark.parametrize("call", ["emit_many", "emit_columns"])
def test_a_spout_head_s_call_with_some_ids_none_tracks_only_the_tuples_with_ids(call):
    class SomeIds(Src):
        def next_tuple(self):
            words, self.todo = self.todo, []
            if call == "emit_many":
                self.emit_many([[w] for w in words], tup_ids=["a", None, "c"])
            else:
                self.emit_columns([words], tup_ids=["a", None, "c"])

    topo = topology("ATLEAST_ONCE")
    src, out = SomeIds(["a", "b", "c"]), Out()
    chain = Chain([make(topo, "a_src", SRC, src, chained_to=MID), make(topo, "b_mid", MID, Mid(), chained_to=OUT),
                   make(topo, "c_out", OUT, out)])
    chain.on_frame(plan_frame(), 0.0)
    chain.spout_burst()
    assert [w for *_, w in out.seen] == ["A", "B", "C"]
    assert [roots is None for roots in out.roots] == [False, True, False]
    assert src.acked == ["a", "c"] and not chain.head.tracker


def test_a_bolt_head_s_tuples_are_processed_in_the_span_they_came_in():
    topo = topology("ATLEAST_ONCE")
    out = Out()
    chain = Chain([make(topo, "b_mid", MID, Mid(), chained_to=OUT), make(topo, "c_out", OUT, out)])
    chain.on_frame(plan_frame(), 0.0)
    root, other = (SRC << TASK_SHIFT) | 0x1234, (SRC << TASK_SHIFT) | 0x5678
    chain.on_frame(words_frame(["a", "b", "fail"], spans=[0, root, 0x77, 2, other, 0x99]), 0.0)
    assert out.seen == [("b_mid", "default", MID, w) for w in ("A", "B", "FAIL")]
    assert out.roots == [root, root, other], "a delivered tuple is in the caller's trees"
    frames = sent(chain)[ACK]
    assert {dest for dest, _, _ in frames} == {SRC}
    assert [x for _, acks, _ in frames for x in acks] == [root, 0x77], \
        "nothing left the chain: the span's ack is its value as it came"
    assert [x for _, _, fails in frames for x in fails] == [other], "the failed tuple fails its tree"
    r = rows(chain)
    assert (r[MID].execute_count, r[MID].ack_count) == (3, 3)
    assert (r[OUT].execute_count, r[OUT].ack_count, r[OUT].fail_count) == (3, 2, 1)


def test_a_next_member_that_acks_itself_is_refused_at_least_once():
    class AcksItself(Out):
        auto_ack = False

    topo = topology("ATLEAST_ONCE")
    with pytest.raises(ValueError, match=r"task 3 \(c_out\) acks its tuples itself"):
        Chain([make(topo, "b_mid", MID, Mid(), chained_to=OUT), make(topo, "c_out", OUT, AcksItself())])
