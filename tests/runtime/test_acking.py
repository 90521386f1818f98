"""At-least-once without sockets: the tracker's rules, and instances wired by hand (frames moved by the test).

The wired scenarios run in every shape a task can take (``SHAPES``): ``ids -> double`` chained (one
process, double's tuples handed to it by call: ``runtime/instance/edge.py``) or not, and with the
instance's fast emit path (``runtime/instance/emit.py``) on or off (``make_instance(fast_path=...)``).
"""
import os
import random

import pytest

from squall import Bolt, Spout
from squall.idl import schema
from squall.loader import load_topology_file
from squall.runtime.acking import AckTracker, CallIds, new_value, new_root, root_task
from squall.runtime.instance import make_instance
from squall.runtime.instance.chain import Chain
from squall.runtime.instance.compiled import _emit
from squall.runtime.protocol import ACK, CONTROL, DATA, FrameReader, control_frame, decode_control, frame_dest

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = [pytest.param((chained, fast),
                       id=f"{'chained' if chained else 'unchained'}-fast-path-{'on' if fast else 'off'}")
          for chained in (False, True) for fast in (True, False)]
UNCHAINED = [s for s in SHAPES if not s.values[0][0]]  # scenarios that look at the frames between ids and double
compiled_ack_all = getattr(_emit, "ack_all", None)
ACK_ALL = [pytest.param(None, id="python-ack-all"),  # AckTracker's loop, and the same in C where it was built
           pytest.param(compiled_ack_all, id="compiled-ack-all",
                        marks=pytest.mark.skipif(compiled_ack_all is None, reason="runtime/instance/_emit.c not built"))]


@pytest.mark.parametrize("compiled", ACK_ALL)
def test_a_tree_completes_when_every_edge_is_acked(compiled):
    t = AckTracker(compiled_ack_all=compiled, timeout=30)
    a, b, c = 0x1111, 0x2222, 0x4444
    assert t.start(root=7, tup_id="x", xor=a ^ b, now=0.0)
    assert t.ack_all([7, a ^ c], now=1.0) == ([], 0.0)  # a closed, c (its child) opened
    assert t.ack_all([7, b], now=2.0) == ([], 0.0)
    assert t.ack_all([7, c], now=3.0) == (["x"], 3.0)
    assert len(t) == 0
    assert t.ack_all([7, c], now=4.0) == ([], 0.0), "an unknown root must be ignored"


def test_fail_and_expiry_hand_the_id_back_once_oldest_first():
    t = AckTracker(timeout=10)
    for i, root in enumerate((1, 2, 3)):
        t.start(root, f"id{root}", 0x5 + i, now=float(i))
    assert t.fail(2) == ("id2",) and t.fail(2) == ()
    assert t.expire(now=10.5) == ["id1"]
    assert t.expire(now=12.0) == ["id3"] and len(t) == 0
    assert not t.start(9, "nothing", 0, now=0.0), "a tree without edges is complete at once"


@pytest.mark.parametrize("compiled", ACK_ALL)
def test_a_call_s_tree_stands_for_each_of_its_tuples_pending_acked_failed_and_expired(compiled):
    t = AckTracker(compiled_ack_all=compiled, timeout=10)
    t.start(1, "alone", 0x1, now=0.0)
    t.start(2, CallIds(["a", "b", "c"]), 0x2, now=1.0)
    t.start(3, CallIds(["d", "e"]), 0x3, now=2.0)
    assert len(t) == 6, "pending counts tuples (topology.max.spout.pending), not trees"
    assert t.ack_all([2, 0x2, 1, 0x1], now=4.0) == (["a", "b", "c", "alone"], 3 * 3.0 + 4.0)
    assert len(t) == 2
    assert t.fail(3) == ("d", "e") and len(t) == 0
    t.start(4, CallIds(["f", "g"]), 0x4, now=5.0)
    assert t.expire(now=15.0) == ["f", "g"] and len(t) == 0


@pytest.mark.skipif(compiled_ack_all is None, reason="runtime/instance/_emit.c not built")
def test_the_compiled_ack_all_closes_and_completes_trees_as_the_python_loop_does():
    """Random trees (a tuple's, a call's), random acks (partial, closing, unknown roots, repeated): the
    same tup_ids in the same order, the same float sum of latencies, the same open trees and pending."""
    rng = random.Random(5)
    trackers = [AckTracker(timeout=30), AckTracker(timeout=30, compiled_ack_all=compiled_ack_all)]
    shares: dict = {}  # root -> the values still to ack
    for step in range(300):
        if rng.random() < 0.6:
            root = new_root(3)
            values = [new_value() for _ in range(rng.randint(1, 4))]
            tup_id = CallIds([f"c{step}-{i}" for i in range(rng.randint(2, 5))]) if rng.random() < 0.3 else f"t{step}"
            xor = 0
            for v in values:
                xor ^= v
            for t in trackers:
                t.start(root, tup_id, xor, now=step * 0.37)
            shares[root] = values
        acks: list = []
        for root in rng.sample(sorted(shares), min(len(shares), rng.randint(0, 6))):
            if shares[root]:
                acks += (root, shares[root].pop())
            if rng.random() < 0.1:
                acks += (root, 0x77)  # a value no span had: the tree stays open until it is acked again
                shares[root].append(0x77)
        acks += (new_root(3), 0x1)  # an unknown root
        results = [t.ack_all(list(acks), now=step * 0.37 + 0.5) for t in trackers]
        assert results[0] == results[1]
        assert [t.trees for t in trackers][0] == trackers[1].trees and len(trackers[0]) == len(trackers[1])
    assert len(trackers[0]) > 0 and trackers[0].trees, "some trees stay open, so the comparison covered both"


@pytest.mark.skipif(compiled_ack_all is None, reason="runtime/instance/_emit.c not built")
def test_the_compiled_ack_all_xors_values_past_64_bits_and_negative_ones_as_python_does():
    """Values are 64-bit words, XORed in C words; anything else (past 64 bits, negative) as Python's ``^``."""
    wide, top, negative = (1 << 70) | 3, (1 << 64) - 1, -4
    trackers = [AckTracker(timeout=30), AckTracker(timeout=30, compiled_ack_all=compiled_ack_all)]
    for t in trackers:
        for root, xor in ((11, wide), (12, top), (13, negative), (14, top)):
            t.start(root, f"t{root}", xor, now=1.0)
    acks = [11, 3, 12, top, 13, 4, 14, 1 << 63]
    results = [t.ack_all(list(acks), now=2.0) for t in trackers]
    assert results[0] == results[1] == (["t12"], 1.0)
    assert trackers[0].trees == trackers[1].trees
    assert {root: entry[1] for root, entry in trackers[1].trees.items()} == {11: 1 << 70, 13: -8, 14: (1 << 63) - 1}


def test_roots_name_their_spout_task_and_ids_are_never_zero():
    roots = {new_root(513) for _ in range(1000)}
    assert len(roots) == 1000 and all(root_task(r) == 513 for r in roots)
    assert all(new_value() != 0 for _ in range(1000))


@pytest.fixture(params=SHAPES)
def shape(request):
    """(ids -> double chained, fast emit path on)."""
    return request.param


class Wiring:
    """Instances of rt_reliable (ids: task 2, double: task 1, sink: tasks 3 and 4) and a hand-made stmgr;
    ``chained``: ids and double run as one chain (one process)."""

    def __init__(self, ids, double, sinks, batch_size=1000, shape=(False, True)):
        self.chained, fast_path = shape
        self.topology = load_topology_file(os.path.join(HERE, "topologies", "rt_reliable.py")).plan
        kw = {"batch_size": batch_size, "fast_path": fast_path}
        self.tasks = {2: make_instance(self.topology, "ids", 2, 1, None, component_obj=ids,
                                       chained={"double": 1} if self.chained else None, **kw),
                      1: make_instance(self.topology, "double", 1, 1, None, component_obj=double, **kw),
                      3: make_instance(self.topology, "sink", 3, 1, None, component_obj=sinks[0], **kw),
                      4: make_instance(self.topology, "sink", 4, 1, None, component_obj=sinks[1], **kw)}
        self.processes = dict(self.tasks)  # task -> what its process drives
        if self.chained:
            self.processes[2] = self.processes[1] = Chain([self.tasks[2], self.tasks[1]])
        names = {2: "ids", 1: "double", 3: "sink", 4: "sink"}
        plan = schema.PhysicalPlan(
            topology_name="rt_reliable", packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
            tmaster=schema.TMasterLocation(topology_name="rt_reliable", host="h", control_port=1, pid=1, run_id="r"),
            stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)],
            instances=[schema.InstanceLocation(id=schema.InstanceId(names[t], t, 0), container=1, pid=t)
                       for t in names])
        for process in self.unique_processes():
            process.on_frame(control_frame(physical_plan=plan), 0.0)
        self.lost = set()  # tasks whose input is dropped (a dead process)
        self.held = set()  # tasks whose input waits in ``parked`` until ``release``
        self.parked = []
        self.consumed = 0

    def unique_processes(self):
        return list({id(p): p for p in self.processes.values()}.values())

    @property
    def received_by_double(self):
        """Tuples double gets through the stream manager (none in a chain: they come by call)."""
        return 0 if self.chained else 1

    def pump(self):
        """Move frames until nothing moves."""
        moved = True
        while moved:
            moved = False
            for process in self.unique_processes():
                process.flush_all()
                data, reader = bytes(process.out), FrameReader()
                process.out.clear()
                for f in reader.feed(data):
                    moved = True
                    if f[4] == CONTROL:
                        self.consumed += decode_control(f).consumed
                        continue
                    dest = frame_dest(f)
                    if dest in self.lost:
                        continue
                    assert f[4] in (DATA, ACK)
                    if dest in self.held:
                        self.parked.append(f)
                        continue
                    self.processes[dest].on_frame(f, 0.0)

    def rows(self):
        """task -> its metrics row for the bucket so far (a chain's members: as its process reports them)."""
        return {row.task_id: row for process in self.unique_processes()
                for row in process.metrics_rows(0.0, 1.0, 0, 0.0)}

    def release(self):
        """Deliver what waited for the held tasks, and hold nothing more."""
        self.held = set()
        parked, self.parked = self.parked, []
        for f in parked:
            self.processes[frame_dest(f)].on_frame(f, 0.0)


class Ids(Spout):
    def __init__(self, n):
        self.todo = list(range(n))
        self.acked, self.failed = [], []

    def initialize(self, config, context):
        pass

    def next_tuple(self):
        if self.todo:
            n = self.todo.pop(0)
            self.emit([n], tup_id=n)

    def ack(self, tup_id):
        self.acked.append(tup_id)

    def fail(self, tup_id):
        self.failed.append(tup_id)


class Double(Bolt):
    def initialize(self, config, context):
        pass

    def process(self, tup):
        self.emit([tup["n"], 0])
        self.emit([tup["n"], 1])


class Sink(Bolt):
    def __init__(self, misbehave=None):
        self.seen = []
        self.misbehave = misbehave

    def initialize(self, config, context):
        pass

    def process(self, tup):
        self.seen.append(tuple(tup.values))
        if self.misbehave:
            self.misbehave(self, tup)


def _spout(w):
    return w.tasks[2]


def _emit_all(w):
    """Bursts until the spout has emitted all it has (a burst may end early: on time, on a full batch)."""
    while w.tasks[2].component.todo:
        w.tasks[2].spout_burst()


def test_every_id_is_acked_once_its_whole_tree_is_processed(shape):
    ids, sinks = Ids(25), [Sink(), Sink()]
    w = Wiring(ids, Double(), sinks, shape=shape)
    while ids.todo or len(_spout(w).tracker):
        _spout(w).spout_burst()
        assert len(_spout(w).tracker) <= 10, "topology.max.spout.pending exceeded"
        w.pump()
    assert sorted(ids.acked) == list(range(25)) and ids.failed == []
    assert sorted(sinks[0].seen + sinks[1].seen) == sorted((n, c) for n in range(25) for c in (0, 1))
    assert w.consumed == 25 * w.received_by_double + 50, "bolts report every tuple the stream manager gave them"
    rows = w.rows()
    assert (rows[2].emit_count, rows[2].ack_count, rows[2].fail_count) == (25, 25, 0)
    assert rows[2].complete_latency_ms is not None
    assert (rows[1].execute_count, rows[1].emit_count, rows[1].ack_count, rows[1].fail_count) == (25, 50, 25, 0)
    assert sum(rows[t].execute_count for t in (3, 4)) == sum(rows[t].ack_count for t in (3, 4)) == 50


def test_max_spout_pending_stops_next_tuple_until_acks_come(shape):
    ids = Ids(100)
    w = Wiring(ids, Double(), [Sink(), Sink()], shape=shape)
    for _ in range(5):
        _spout(w).spout_burst()
    assert len(_spout(w).tracker) == 10 and len(ids.todo) == 90  # the cap, whatever the burst size
    w.pump()
    assert len(ids.acked) == 10 and len(_spout(w).tracker) == 0


@pytest.mark.parametrize("how", ["explicit", "raises"])
def test_a_failed_or_raising_bolt_fails_the_tree_at_the_spout(how, shape):
    def misbehave(sink, tup):
        if tup["n"] % 5 == 0 and tup["copy"] == 1:
            if how == "explicit":
                sink.fail(tup)
                sink.ack(tup)  # a second ack or fail of the same tuple is ignored
            else:
                raise RuntimeError("planted")

    ids = Ids(20)
    w = Wiring(ids, Double(), [Sink(misbehave), Sink(misbehave)], shape=shape)
    while ids.todo or len(_spout(w).tracker):
        _spout(w).spout_burst()
        w.pump()
    assert sorted(ids.failed) == [0, 5, 10, 15]
    assert sorted(ids.acked) == [n for n in range(20) if n % 5]
    rows = w.rows()
    assert (rows[2].ack_count, rows[2].fail_count) == (16, 4)
    assert (rows[1].ack_count, rows[1].fail_count) == (20, 0), "double acked every tuple it processed"
    assert [sum(getattr(rows[t], k) for t in (3, 4)) for k in ("ack_count", "fail_count")] == [36, 4]


def test_a_tree_that_touched_a_dead_task_times_out(shape):
    ids = Ids(6)
    w = Wiring(ids, Double(), [Sink(), Sink()], shape=shape)
    w.lost = {3}  # sink task 3 is dead: what goes to it is lost
    _emit_all(w)
    w.pump()
    spout = _spout(w)
    open_ids = {e[0] for e in spout.tracker.trees.values()}
    assert open_ids and set(ids.acked) | open_ids == set(range(6))
    spout.expire(now=spout.tracker.timeout + 1e9)
    assert sorted(ids.failed) == sorted(open_ids) and len(spout.tracker) == 0
    assert spout.metrics_row(0.0, 1.0).user.count('"__timeout-count": %d' % len(open_ids)) == 1


def test_unanchored_emits_and_ids_less_spout_tuples_are_not_tracked(shape):
    class Free(Ids):
        def next_tuple(self):
            if self.todo:
                self.emit([self.todo.pop(0)])  # no id

    class Unanchored(Double):
        auto_anchor = False

    ids = Free(3)
    w = Wiring(ids, Unanchored(), [Sink(), Sink()], shape=shape)
    _emit_all(w)
    w.pump()
    assert len(_spout(w).tracker) == 0 and ids.acked == [] and ids.failed == []


@pytest.mark.parametrize("shape", UNCHAINED)  # auto_ack off: never chained (squall/chaining.py)
def test_a_tuple_anchored_to_several_inputs_completes_every_tree_only_when_acked(shape):
    """A joining bolt: auto_ack off, it holds inputs and emits one tuple anchored to a pair, then acks both."""
    class Pairs(Bolt):
        auto_ack = False

        def initialize(self, config, context):
            self.held = []

        def process(self, tup):
            self.held.append(tup)
            if len(self.held) == 2:
                a, b = self.held
                self.emit([a["n"] * 100 + b["n"], 0], anchors=[a, b])
                self.emit([a["n"] * 100 + b["n"], 1], anchors=[a, b])
                self.ack(a)
                self.ack(b)
                self.held = []

    ids, sinks = Ids(4), [Sink(), Sink()]
    w = Wiring(ids, Pairs(), sinks, shape=shape)
    spout = _spout(w)
    spout.spout_burst(1)
    w.pump()
    assert ids.acked == [] and len(spout.tracker) == 1, "held, not acked: its tree stays open"
    while ids.todo or len(spout.tracker):
        spout.spout_burst()
        w.pump()
    assert sorted(ids.acked) == [0, 1, 2, 3] and ids.failed == []
    assert sorted(sinks[0].seen + sinks[1].seen) == [(1, 0), (1, 1), (203, 0), (203, 1)]


@pytest.mark.parametrize("auto_ack", [False, True])
def test_emits_anchored_to_an_acked_tuple_are_not_in_its_tree(auto_ack, shape):
    """Storm's rule: anchor before you ack. An acked anchor anchors nothing; its tree completes
    without waiting for the late tuple."""
    if shape[0] and not auto_ack:
        pytest.skip("auto_ack off: never chained (squall/chaining.py)")
    class AckFirst(Bolt):
        def initialize(self, config, context):
            pass

        def process(self, tup):
            self.ack(tup)
            self.emit([tup["n"], 0], anchors=[tup])  # explicit anchor, after the ack
            self.emit([tup["n"], 1])  # auto_anchor, after the ack

    AckFirst.auto_ack = auto_ack
    ids, sinks = Ids(3), [Sink(), Sink()]
    w = Wiring(ids, AckFirst(), sinks, shape=shape)
    w.held = {3, 4}  # the late tuples wait: the bolt's acks alone complete the trees
    _emit_all(w)
    w.pump()
    assert sorted(ids.acked) == [0, 1, 2] and w.parked
    w.release()
    w.pump()
    assert sorted(sinks[0].seen + sinks[1].seen) == [(n, c) for n in range(3) for c in (0, 1)]


def _one_hop(w, task):
    """Flush ``task`` and return its DATA and ACK frames."""
    inst = w.tasks[task]
    inst.flush_all()
    frames = FrameReader().feed(bytes(inst.out))
    inst.out.clear()
    return [f for f in frames if f[4] == DATA], [f for f in frames if f[4] == ACK]


class Six(Bolt):
    def initialize(self, config, context):
        pass

    def process(self, tup):
        for copy in range(6):
            self.emit([7, copy])  # field grouping on n: all to one sink task


@pytest.mark.parametrize("shape", UNCHAINED)  # the frames between ids and double
def test_tuples_anchored_to_one_input_share_a_span_and_their_acks_are_one_value(shape):
    import msgpack

    ids = Ids(1)
    w = Wiring(ids, Six(), [Sink(), Sink()], shape=shape)
    spout = _spout(w)
    spout.spout_burst()
    (frame,), _ = _one_hop(w, 2)
    (sent,) = msgpack.unpackb(frame[13:])[1]
    assert len(sent) == 3 and len(sent[2]) == 3, "a spout tuple with an id: one span"
    spout_value = sent[2][2]
    w.tasks[1].on_data(frame, 0.0)
    (data,), acks = _one_hop(w, 1)
    (run,) = msgpack.unpackb(data[13:])[1]
    stream, vals, spans = run
    assert len(vals) == 6 and len(spans) == 3, "six tuples anchored to one input: one span, no per-tuple id"
    assert spans[0] == 0 and root_task(spans[1]) == 2, "in the spout's tree (one root: a bare int)"
    assert acks == [], "the bolt's own ack rides on its child span (not sent yet when it was acked)"
    assert spans[2] == spout_value, "one child span carrying the bolt's ack: its value is the input's"
    sink = frame_dest(data)
    w.tasks[sink].on_data(data, 0.0)
    _, (sink_acks,) = _one_hop(w, sink)
    _src, pairs, fails = msgpack.unpackb(sink_acks[13:])
    assert pairs == [spans[1], spans[2]] and fails == [], "six tuples of one span: one ack entry"
    spout.on_acks(sink_acks)
    assert ids.acked == [0]


def test_a_tuple_anchored_to_several_spans_of_one_tree_stays_in_it():
    """Storm gives such a tuple one edge id, XORed into each anchor's ack: in a tree that two
    anchors share it cancels, so the tuple escapes the tree. Each anchor span gives its own share."""
    from squall.runtime.acking import Span, shared_span

    tracker = AckTracker(timeout=30)
    root, other = new_root(2), new_root(2)
    first, second = Span(root, 0x1111), Span([root, other], 0x2222)
    tracker.start(root, "r", 0x1111 ^ 0x2222, now=0.0)
    tracker.start(other, "o", 0x2222, now=0.0)
    roots, values = shared_span([first, second])
    assert sorted(roots) == sorted([root, other]) and 0 not in values
    assert tracker.ack_all([root, first.rest(), root, second.rest(), other, second.rest()], now=1.0) == ([], 0.0), \
        "the anchors acked, their child is not: both trees stay open"
    done, _ = tracker.ack_all([r for pair in zip(roots, values) for r in pair], now=2.0)
    assert sorted(done) == ["o", "r"]
    one_root, value = shared_span([Span(root, 0x1), Span(root, 0x2)])
    assert one_root == root and value.__class__ is int and value != 0, "one tree: a bare root, one value"


def test_a_tuple_anchored_twice_to_one_input_is_tracked_once(shape):
    class Twice(Double):
        def process(self, tup):
            self.emit([tup["n"], 0], anchors=[tup, tup])

    ids = Ids(3)
    w = Wiring(ids, Twice(), [Sink(), Sink()], shape=shape)
    w.lost = {3, 4}
    _emit_all(w)
    w.pump()
    assert ids.acked == [] and len(_spout(w).tracker) == 3, "the lost children keep their trees open"
    w.lost = set()
    ids.todo = [5]
    _emit_all(w)
    w.pump()
    assert ids.acked == [5]


@pytest.mark.parametrize("shape", UNCHAINED)  # the frames between ids and double
def test_an_ack_whose_carrier_has_left_is_sent_and_a_lost_carrier_fails_the_tree(shape):
    ids = Ids(2)
    # the six children leave in process(): no carrier
    w = Wiring(ids, Six(), [Sink(), Sink()], batch_size=6, shape=shape)
    spout = _spout(w)
    spout.spout_burst(1)
    (frame,), _ = _one_hop(w, 2)
    w.tasks[1].on_data(frame, 0.0)
    (data,), (acks,) = _one_hop(w, 1)
    spout.on_acks(acks)
    assert ids.acked == [] and len(spout.tracker) == 1, "the bolt's ack alone does not complete the tree"
    w.lost = {frame_dest(data)}  # carried or not, children that die keep their tree open
    w.pump()
    assert ids.acked == [] and len(spout.tracker) == 1
    assert spout.expire(now=1e12) is None and ids.failed == [0]


def test_a_root_that_an_open_tree_has_is_drawn_again(monkeypatch):
    """Roots have 48 random bits: a collision must not overwrite (and so lose) an open tree's id."""
    import itertools

    from squall.runtime import acking
    from squall.runtime.instance import emit

    low = 0xABCDEF
    draws = itertools.chain([(1 << 60) | low, (2 << 60) | low], itertools.count(1 << 62))  # same low bits
    monkeypatch.setattr(emit, "random_bits", lambda n: next(draws))
    monkeypatch.setattr(acking, "random_bits", lambda n: 0x123456)
    ids = Ids(2)
    w = Wiring(ids, Double(), [Sink(), Sink()])
    spout = _spout(w)
    spout.spout_burst(2)
    assert sorted(root & acking.ROOT_BITS for root in spout.tracker.trees) == sorted([low, 0x123456])
    w.pump()
    assert sorted(ids.acked) == [0, 1]


@pytest.mark.parametrize("shape", [s for s in SHAPES if s.values[0] != (False, True)])
def test_a_root_that_an_open_tree_has_is_drawn_again_on_every_path(monkeypatch, shape):
    """As above where a root is drawn by ``AckTracker.fresh_root`` (the generic emit path, and a chain's
    head: ``SpoutInstance.open_tree``)."""
    import itertools

    from squall.runtime import acking

    low = 0xABCDEF
    roots = itertools.chain([low, low], itertools.count(low + 1))  # the second draw collides with the first
    values = itertools.count(1)
    monkeypatch.setattr(acking, "random_bits", lambda n: next(roots) if n == acking.TASK_SHIFT else next(values))
    ids = Ids(2)
    w = Wiring(ids, Double(), [Sink(), Sink()], shape=shape)
    w.held = {3, 4}  # the trees stay open
    _spout(w).spout_burst(2)
    w.pump()
    assert sorted(root & acking.ROOT_BITS for root in _spout(w).tracker.trees) == [low, low + 1]
    w.release()
    w.pump()
    assert sorted(ids.acked) == [0, 1]
