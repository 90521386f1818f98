"""A windowed bolt in its instance, at least once, without sockets: a spout tuple's tree completes only once
the last window holding it has been processed and what that window emitted (anchored to it) is acked."""
import os

from squall import Bolt, Spout
from squall.idl import schema
from squall.importing import import_object
from squall.loader import load_topology_file
from squall.logical import find_component
from squall.runtime.instance import make_instance
from squall.runtime.protocol import ACK, CONTROL, DATA, FrameReader, frame_dest

HERE = os.path.dirname(os.path.abspath(__file__))
TOPOLOGY = load_topology_file(os.path.join(HERE, "topologies", "rt_windowed.py")).plan
THREES = import_object(find_component(TOPOLOGY, "threes").class_name)  # the windowed bolt, as a process finds it
NAMES = {1: "ids", 2: "sink", 3: "threes"}


class Ids(Spout):
    outputs = ["n"]

    def __init__(self):
        self.todo, self.acked = [], []

    def initialize(self, config, context):
        pass

    def next_tuple(self):
        if self.todo:
            n = self.todo.pop(0)
            self.emit([n], tup_id=n)

    def ack(self, tup_id):
        self.acked.append(tup_id)


class Sink(Bolt):
    def __init__(self):
        self.totals = []

    def initialize(self, config, context):
        pass

    def process(self, tup):
        self.totals.append(tup["total"])


def wired():
    ids, sink = Ids(), Sink()
    tasks = {1: make_instance(TOPOLOGY, "ids", 1, 1, None, component_obj=ids),
             2: make_instance(TOPOLOGY, "sink", 2, 1, None, component_obj=sink),
             3: make_instance(TOPOLOGY, "threes", 3, 1, None, component_obj=THREES())}
    plan = schema.PhysicalPlan(
        topology_name="rt_windowed", packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation(topology_name="rt_windowed", host="h", control_port=1, pid=1, run_id="r"),
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)],
        instances=[schema.InstanceLocation(id=schema.InstanceId(name, t, 0), container=1, pid=t)
                   for t, name in NAMES.items()])
    for inst in tasks.values():
        inst.on_physical_plan(plan)
    return tasks, ids, sink


def pump(tasks, lost=()):
    """Move frames between the instances until nothing moves (frames for ``lost`` tasks are dropped)."""
    moved = True
    while moved:
        moved = False
        for inst in tasks.values():
            inst.flush_all()
            data = bytes(inst.out)
            inst.out.clear()
            for f in FrameReader().feed(data):
                moved = True
                if f[4] == CONTROL or frame_dest(f) in lost:
                    continue
                if f[4] == DATA:
                    tasks[frame_dest(f)].on_data(f, 0.0)
                else:
                    assert f[4] == ACK
                    tasks[frame_dest(f)].on_acks(f)


def emit(tasks, ids, *numbers):
    ids.todo += numbers
    while ids.todo:
        tasks[1].spout_burst()


def test_ids_are_acked_once_their_window_and_its_output_are_processed():
    tasks, ids, sink = wired()
    emit(tasks, ids, 10, 11)
    pump(tasks)
    assert ids.acked == [] and sink.totals == []  # the window of 3 is not complete: held, not acked
    emit(tasks, ids, 12, 13)
    pump(tasks)
    assert sink.totals == [33] and sorted(ids.acked) == [10, 11, 12]
    emit(tasks, ids, 14, 15)
    pump(tasks)
    assert sink.totals == [33, 42] and sorted(ids.acked) == [10, 11, 12, 13, 14, 15]


def test_a_window_whose_output_is_lost_leaves_its_ids_open():
    tasks, ids, sink = wired()
    emit(tasks, ids, 1, 2, 3)
    pump(tasks, lost={2})  # the sink is dead: the window's output, anchored to its tuples, never completes
    assert ids.acked == [] and len(tasks[1].tracker) == 3


def test_a_component_s_own_tick_frequency_is_its_tick_frequency():
    tasks, _, _ = wired()
    assert tasks[2].timers.tick_every == 0.25  # the sink's own config
    assert tasks[3].timers.tick_every == 2  # the topology's
