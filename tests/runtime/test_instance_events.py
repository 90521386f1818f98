"""The instance as a state machine: frames, backpressure and timers in; frames, flags and rows out. No sockets."""
import os

import msgpack

from squall import Bolt, Spout
from squall.idl import replace, schema
from squall.loader import load_topology_file
from squall.logical import with_overrides
from squall.runtime.instance import make_instance
from squall.runtime.protocol import DATA, CONTROL, FrameReader, control_frame, data_frame

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY = load_topology_file(os.path.join(HERE, "topologies", "rt_busy.py")).plan


def plan(*busy_tasks, status=schema.TopologyStatus.RUNNING):
    locations = [schema.InstanceLocation(id=schema.InstanceId("sink", 9, 0), container=1, pid=9)]
    locations += [schema.InstanceLocation(id=schema.InstanceId("busy", t, i), container=1, pid=t)
                  for i, t in enumerate(busy_tasks)]
    return schema.PhysicalPlan(
        topology_name=TOPOLOGY.name, packing_plan_id=f"p{len(busy_tasks)}", status=status,
        tmaster=schema.TMasterLocation(topology_name=TOPOLOGY.name, host="h", control_port=1, pid=1, run_id="r"),
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)], instances=locations)


def plan_frame(*busy_tasks, **kw):
    return control_frame(physical_plan=plan(*busy_tasks, **kw))


class Recorder(Bolt):
    def __init__(self):
        self.seen, self.ticks = [], 0

    def initialize(self, config, context):
        pass

    def process(self, tup):
        self.seen.append((tup.component, tup.task, tup["n"]))

    def process_tick(self, tup):
        self.ticks += 1


class Counter(Spout):
    def __init__(self):
        self.n = 0

    def initialize(self, config, context):
        pass

    def activate(self):
        pass

    def deactivate(self):
        pass

    def next_tuple(self):
        self.n += 1
        self._collector.emit([self.n], "default", None, None, None)


def tuples(src, *ns):
    return data_frame(9, msgpack.packb([src, [["default", [[n] for n in ns]]], 0]), len(ns))


def sent(inst):
    frames = FrameReader().feed(bytes(inst.out))
    inst.out.clear()
    return frames


def test_tuples_before_the_plan_wait_for_it_and_keep_their_order():
    rec = Recorder()
    inst = make_instance(TOPOLOGY, "sink", 9, 1, None, component_obj=rec)
    inst.on_frame(tuples(1, 1, 2), 0.0)
    assert rec.seen == [] and inst.queue_depth(0) == 2
    inst.on_frame(plan_frame(1), 0.0)
    inst.on_frame(tuples(1, 3), 0.0)
    assert rec.seen == [("busy", 1, 1), ("busy", 1, 2), ("busy", 1, 3)] and inst.waiting == []


def test_a_sender_newer_than_the_plan_waits_for_a_plan_that_names_it():
    """A scale-up can reach a new sender before its receiver: its tuples keep their fields."""
    rec = Recorder()
    inst = make_instance(TOPOLOGY, "sink", 9, 1, None, component_obj=rec)
    inst.on_frame(plan_frame(1), 0.0)
    inst.on_frame(tuples(2, 7), 0.0)  # from task 2: not in the plan yet
    assert rec.seen == [] and len(inst.waiting) == 1
    inst.on_frame(plan_frame(1, 2), 0.0)
    assert rec.seen == [("busy", 2, 7)] and inst.waiting == []


def test_a_bolt_reports_what_it_consumed_at_each_flush():
    inst = make_instance(TOPOLOGY, "sink", 9, 1, None, component_obj=Recorder())
    inst.on_frame(plan_frame(1), 0.0)
    inst.on_frame(tuples(1, 1, 2, 3), 0.0)
    inst.flush_all()
    (frame,) = sent(inst)
    assert frame[4] == CONTROL
    from squall.runtime.protocol import decode_control
    assert decode_control(frame).consumed == 3
    inst.flush_all()
    assert sent(inst) == [], "nothing new consumed: nothing to report"


def test_backpressure_stops_a_spout_and_its_time_is_counted_per_bucket():
    spout = make_instance(TOPOLOGY, "busy", 1, 1, None, component_obj=Counter())
    spout.on_frame(plan_frame(1), 0.0)
    bp = lambda on: control_frame(backpressure=schema.Backpressure(1, on))  # noqa: E731
    assert spout.may_emit
    spout.on_frame(bp(True), 10.0)
    assert spout.throttled and not spout.may_emit
    spout.on_frame(bp(True), 10.5)  # told again: the episode goes on from 10.0
    spout.on_frame(bp(False), 11.0)
    assert not spout.throttled and spout.may_emit and spout.backpressure_time == 1.0
    spout.on_frame(bp(True), 12.0)
    row = spout.metrics_row(0.0, 5.0, clock=12.25)  # still throttled: the time so far counts now
    assert row.backpressure_ms == 1250.0
    spout.on_frame(bp(False), 13.0)
    assert spout.metrics_row(0.0, 5.0, clock=14.0).backpressure_ms == 750.0


def test_queue_depth_counts_unread_bytes_in_tuples_of_the_buckets_size():
    inst = make_instance(TOPOLOGY, "sink", 9, 1, None, component_obj=Recorder())
    inst.on_frame(plan_frame(1), 0.0)
    frame = tuples(1, *range(100))
    inst.on_frame(frame, 0.0)
    assert inst.queue_depth(len(frame) * 3) == 300
    assert inst.queue_depth(len(frame)) == 0, "no tuple read this bucket: no size to count unread bytes in"
    inst.on_frame(tuples(7, 1, 2), 0.0)  # a sender no plan names: waits, counted
    assert inst.metrics_row(0.0, 1.0).queue_depth == 2


def test_timers_flush_tick_and_end_buckets_when_due():
    rec = Recorder()
    config = {**_config(), "topology.tick.tuple.freq.secs": 2, "topology.builtin.metrics.bucket.size.secs": 5,
              "squall.instance.flush.interval.ms": 10}
    bolt = make_instance(TOPOLOGY, "sink", 9, 1, config, component_obj=rec)
    bolt.on_frame(plan_frame(1), 0.0)
    bolt.timers.start(100.0)
    bolt.on_frame(tuples(1, 1), 0.0)
    assert not bolt.on_timers(100.005) and bolt.out == bytearray()
    assert not bolt.on_timers(100.01)
    assert [f[4] for f in sent(bolt)] == [CONTROL]  # the consumed count, flushed
    assert rec.ticks == 0
    assert not bolt.on_timers(102.0) and rec.ticks == 1
    assert not bolt.on_timers(103.0) and rec.ticks == 1
    assert bolt.on_timers(105.0) and rec.ticks == 2, "the bucket ends at 105"
    assert not bolt.on_timers(106.0)
    assert bolt.timers.next_expire == float("inf"), "a bolt has no trees to expire"
    spout = make_instance(TOPOLOGY, "busy", 1, 1, None, component_obj=Counter())
    assert spout.timers.next_tick == float("inf"), "spouts get no tick tuples"


def test_a_spout_emits_once_initialized_and_only_while_active():
    spout = make_instance(TOPOLOGY, "busy", 1, 1, None, component_obj=Counter())
    assert not spout.may_emit, "no plan yet: not initialized"
    spout.on_frame(plan_frame(1, status=schema.TopologyStatus.PAUSED), 0.0)
    assert spout.initialized and not spout.may_emit, "deactivated"
    spout.on_frame(plan_frame(1), 0.0)
    assert spout.may_emit
    bolt = make_instance(TOPOLOGY, "sink", 9, 1, None, component_obj=Recorder())
    bolt.on_frame(plan_frame(1), 0.0)
    assert not bolt.may_emit, "bolts emit from process(), not on their own"


def test_a_spout_flushes_partial_batches_on_the_flush_timer():
    spout = make_instance(TOPOLOGY, "busy", 1, 1, None, component_obj=Counter())
    spout.on_frame(plan_frame(1), 0.0)
    spout.timers.start(0.0)
    assert spout.spout_burst(5) and spout.out == bytearray()  # 5 tuples: no batch is full
    spout.on_timers(spout.timers.flush_every)
    (frame,) = sent(spout)
    assert frame[4] == DATA and msgpack.unpackb(frame[13:])[1] == [["default", [[1], [2], [3], [4], [5]]]]


def _config():
    from squall.logical import topology_config

    return dict(topology_config(TOPOLOGY))


def test_a_problem_a_component_reports_is_its_tasks_error_in_the_next_metrics_row():
    """``Component.report_error``: a problem handled (a broker gone) shows as the task's error, as an
    exception raised in its code would, and nothing stops."""
    rec = Recorder()
    inst = make_instance(TOPOLOGY, "sink", 9, 1, None, component_obj=rec)
    rec.report_error("brokers 127.0.0.1:1 do not answer", where="Kafka client")
    rec.report_error("still nothing")
    user: dict = {}
    inst.errors.report(user)
    assert user["__error-count"] == 2
    assert [(e["where"], e["error"], e["traceback"]) for e in user["__errors"]] == [
        ("Kafka client", "brokers 127.0.0.1:1 do not answer", ""), (type(rec).__name__, "still nothing", "")]


class ReliableCounter(Counter):
    def next_tuple(self):
        self.n += 1
        self._collector.emit([self.n], "default", self.n, None, None)


def test_max_spout_pending_set_while_running_comes_with_the_physical_plan_and_caps_the_trees():
    reliable = with_overrides(TOPOLOGY, {"topology.reliability.mode": "ATLEAST_ONCE", "topology.max.spout.pending": 50})
    spout = make_instance(reliable, "busy", 1, 1, None, component_obj=ReliableCounter())
    spout.on_frame(plan_frame(1), 0.0)
    assert spout.max_pending == 50
    spout.on_frame(control_frame(physical_plan=replace(plan(1), max_spout_pending=3)), 0.0)
    spout.timers.start(0.0)
    spout.spout_burst(64)
    assert (spout.max_pending, len(spout.tracker.trees)) == (3, 3)
    spout.on_frame(plan_frame(1), 0.0)  # a plan without one (an older topology master): the last one holds
    assert spout.max_pending == 3
