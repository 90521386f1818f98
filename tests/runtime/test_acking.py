"""At-least-once without sockets: the tracker's rules, and instances wired by hand (frames moved by the test)."""
import os

import pytest

from squall import Bolt, Spout
from squall.idl import schema
from squall.loader import load_topology_file
from squall.runtime.acking import AckTracker, new_value, new_root, root_task
from squall.runtime.instance import make_instance
from squall.runtime.protocol import ACK, CONTROL, DATA, FrameReader, decode_control, frame_dest

HERE = os.path.dirname(os.path.abspath(__file__))


def test_a_tree_completes_when_every_edge_is_acked():
    t = AckTracker(timeout=30)
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
    assert t.fail(2) == "id2" and t.fail(2) is None
    assert t.expire(now=10.5) == ["id1"]
    assert t.expire(now=12.0) == ["id3"] and len(t) == 0
    assert not t.start(9, "nothing", 0, now=0.0), "a tree without edges is complete at once"


def test_roots_name_their_spout_task_and_ids_are_never_zero():
    roots = {new_root(513) for _ in range(1000)}
    assert len(roots) == 1000 and all(root_task(r) == 513 for r in roots)
    assert all(new_value() != 0 for _ in range(1000))


class Wiring:
    """Instances of rt_reliable (ids: task 2, double: task 1, sink: tasks 3 and 4) and a hand-made stmgr."""

    def __init__(self, ids, double, sinks, batch_size=1000):
        self.topology = load_topology_file(os.path.join(HERE, "topologies", "rt_reliable.py")).plan
        kw = {"batch_size": batch_size}
        self.tasks = {2: make_instance(self.topology, "ids", 2, 1, None, component_obj=ids, **kw),
                      1: make_instance(self.topology, "double", 1, 1, None, component_obj=double, **kw),
                      3: make_instance(self.topology, "sink", 3, 1, None, component_obj=sinks[0], **kw),
                      4: make_instance(self.topology, "sink", 4, 1, None, component_obj=sinks[1], **kw)}
        names = {2: "ids", 1: "double", 3: "sink", 4: "sink"}
        plan = schema.PhysicalPlan(
            topology_name="rt_reliable", packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
            tmaster=schema.TMasterLocation(topology_name="rt_reliable", host="h", control_port=1, pid=1, run_id="r"),
            stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)],
            instances=[schema.InstanceLocation(id=schema.InstanceId(names[t], t, 0), container=1, pid=t)
                       for t in names])
        for inst in self.tasks.values():
            inst.on_plan(plan)
        self.lost = set()  # tasks whose input is dropped (a dead process)
        self.consumed = 0

    def pump(self):
        """Move frames until nothing moves."""
        moved = True
        while moved:
            moved = False
            for inst in self.tasks.values():
                inst.flush_all()
                data, reader = bytes(inst.out), FrameReader()
                inst.out.clear()
                for f in reader.feed(data):
                    moved = True
                    if f[4] == CONTROL:
                        self.consumed += decode_control(f).consumed
                        continue
                    dest = frame_dest(f)
                    if dest in self.lost:
                        continue
                    if f[4] == DATA:
                        self.tasks[dest].on_data(f, 0.0)
                    else:
                        assert f[4] == ACK
                        self.tasks[dest].on_acks(f)


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


def test_every_id_is_acked_once_its_whole_tree_is_processed():
    ids, sinks = Ids(25), [Sink(), Sink()]
    w = Wiring(ids, Double(), sinks)
    while ids.todo or len(_spout(w).tracker):
        _spout(w).spout_burst()
        assert len(_spout(w).tracker) <= 10, "topology.max.spout.pending exceeded"
        w.pump()
    assert sorted(ids.acked) == list(range(25)) and ids.failed == []
    assert sorted(sinks[0].seen + sinks[1].seen) == sorted((n, c) for n in range(25) for c in (0, 1))
    assert w.consumed == 25 + 50, "bolts report every tuple they processed"
    row = _spout(w).metrics_row(0.0, 1.0)
    assert row.ack_count == 25 and row.complete_latency_ms is not None


def test_max_spout_pending_stops_next_tuple_until_acks_come():
    ids = Ids(100)
    w = Wiring(ids, Double(), [Sink(), Sink()])
    for _ in range(5):
        _spout(w).spout_burst()
    assert len(_spout(w).tracker) == 10 and len(ids.todo) == 90  # the cap, whatever the burst size
    w.pump()
    assert len(ids.acked) == 10 and len(_spout(w).tracker) == 0


@pytest.mark.parametrize("how", ["explicit", "raises"])
def test_a_failed_or_raising_bolt_fails_the_tree_at_the_spout(how):
    def misbehave(sink, tup):
        if tup["n"] % 5 == 0 and tup["copy"] == 1:
            if how == "explicit":
                sink.fail(tup)
                sink.ack(tup)  # a second ack or fail of the same tuple is ignored
            else:
                raise RuntimeError("planted")

    ids = Ids(20)
    w = Wiring(ids, Double(), [Sink(misbehave), Sink(misbehave)])
    while ids.todo or len(_spout(w).tracker):
        _spout(w).spout_burst()
        w.pump()
    assert sorted(ids.failed) == [0, 5, 10, 15]
    assert sorted(ids.acked) == [n for n in range(20) if n % 5]


def test_a_tree_that_touched_a_dead_task_times_out():
    ids = Ids(6)
    w = Wiring(ids, Double(), [Sink(), Sink()])
    w.lost = {3}  # sink task 3 is dead: what goes to it is lost
    _spout(w).spout_burst()
    w.pump()
    spout = _spout(w)
    open_ids = {e[0] for e in spout.tracker.trees.values()}
    assert open_ids and set(ids.acked) | open_ids == set(range(6))
    spout.expire(now=spout.tracker.timeout + 1e9)
    assert sorted(ids.failed) == sorted(open_ids) and len(spout.tracker) == 0
    assert spout.metrics_row(0.0, 1.0).user.count('"__timeout-count": %d' % len(open_ids)) == 1


def test_unanchored_emits_and_ids_less_spout_tuples_are_not_tracked():
    class Free(Ids):
        def next_tuple(self):
            if self.todo:
                self.emit([self.todo.pop(0)])  # no id

    class Unanchored(Double):
        auto_anchor = False

    ids = Free(3)
    w = Wiring(ids, Unanchored(), [Sink(), Sink()])
    _spout(w).spout_burst()
    w.pump()
    assert len(_spout(w).tracker) == 0 and ids.acked == [] and ids.failed == []


def test_a_tuple_anchored_to_several_inputs_completes_every_tree_only_when_acked():
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
    w = Wiring(ids, Pairs(), sinks)
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
def test_emits_anchored_to_an_acked_tuple_are_not_in_its_tree(auto_ack):
    """Storm's rule: anchor before you ack. An acked anchor anchors nothing; its tree completes
    without waiting for the late tuple."""
    class AckFirst(Bolt):
        def initialize(self, config, context):
            pass

        def process(self, tup):
            self.ack(tup)
            self.emit([tup["n"], 0], anchors=[tup])  # explicit anchor, after the ack
            self.emit([tup["n"], 1])  # auto_anchor, after the ack

    AckFirst.auto_ack = auto_ack
    ids, sinks = Ids(3), [Sink(), Sink()]
    w = Wiring(ids, AckFirst(), sinks)
    spout = _spout(w)
    spout.spout_burst()
    spout.flush_all()
    w.tasks[1].on_data(next(f for f in FrameReader().feed(bytes(spout.out)) if f[4] == DATA), 0.0)
    spout.out.clear()
    w.tasks[1].flush_all()
    for f in FrameReader().feed(bytes(w.tasks[1].out)):
        if f[4] == ACK:
            spout.on_acks(f)  # the bolt's acks alone complete the trees: the late tuples are not in them
    assert sorted(ids.acked) == [0, 1, 2]
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


def test_tuples_anchored_to_one_input_share_a_span_and_their_acks_are_one_value():
    import msgpack

    ids = Ids(1)
    w = Wiring(ids, Six(), [Sink(), Sink()])
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


def test_a_tuple_anchored_twice_to_one_input_is_tracked_once():
    class Twice(Double):
        def process(self, tup):
            self.emit([tup["n"], 0], anchors=[tup, tup])

    ids = Ids(3)
    w = Wiring(ids, Twice(), [Sink(), Sink()])
    w.lost = {3, 4}
    _spout(w).spout_burst()
    w.pump()
    assert ids.acked == [] and len(_spout(w).tracker) == 3, "the lost children keep their trees open"
    w.lost = set()
    ids.todo = [5]
    _spout(w).spout_burst()
    w.pump()
    assert ids.acked == [5]


def test_an_ack_whose_carrier_has_left_is_sent_and_a_lost_carrier_fails_the_tree():
    ids = Ids(2)
    w = Wiring(ids, Six(), [Sink(), Sink()], batch_size=6)  # the six children leave in process(): no carrier
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
