"""A spout rolled back while its socket has taken only the start of a frame (runtime/instance/loop.py).

A spout sends without blocking, so under backpressure the stream manager can hold the start of a frame
whose end is still in the spout's ``out``. A rollback drops what the spout framed and did not send; the
end of that frame must stay, or the stream manager reads the next frame (the spout's RESTORED) as its
rest: the coordinator never hears the spout restored, and the topology stops.
"""
import socket

from squall import Grouping, StatefulBolt, StatefulSpout, TopologyBuilder
from squall.idl import schema
from squall.runtime.instance import make_instance
from squall.runtime.instance.loop import _Loop
from squall.runtime.instance.sampling import EventsLog
from squall.runtime.protocol import CONTROL, FrameReader, control_frame, decode_control

Step = schema.CheckpointStep


class Lines(StatefulSpout):
    outputs = ["line"]

    def next_tuple(self):
        for _ in range(100):
            self.emit(["x" * 100])  # frames of ~100 KB: a full socket takes part of one


class Sink(StatefulBolt):
    def process(self, tup):
        pass


def topology():
    builder = TopologyBuilder("rollback")
    lines = builder.add_spout("lines", Lines)
    builder.add_bolt("sink", Sink, inputs={lines: Grouping.SHUFFLE})
    builder.set_config({"topology.reliability.mode": "EFFECTIVELY_ONCE"})
    return builder.build().plan


def physical_plan(plan):
    instances = [schema.InstanceLocation(id=schema.InstanceId(c.name, task, 0), container=1, pid=task)
                 for task, c in enumerate(plan.components, 1)]
    return schema.PhysicalPlan(
        topology_name=plan.name, packing_plan_id="p", status=schema.TopologyStatus.RUNNING,
        tmaster=schema.TMasterLocation(topology_name=plan.name, host="h", control_port=1, pid=1, run_id="r"),
        stmgrs=[schema.StMgrLocation(container=1, host="h", data_port=2, pid=1)], instances=instances)


def step(what, epoch):
    return control_frame(checkpoint=schema.CheckpointMessage(step=what, checkpoint_id=0, epoch=epoch))


class Connection:
    """What the loop uses of a ``BlockingConnection``."""

    def __init__(self, sock):
        self.sock, self.reader = sock, FrameReader()


def test_a_rollback_keeps_the_end_of_a_frame_the_socket_took_the_start_of():
    logical = topology()
    plan = physical_plan(logical)
    task = next(i.id.task_id for i in plan.instances if i.id.component == "lines")
    inst = make_instance(logical, "lines", task, 1)
    spout_end, stmgr_end = socket.socketpair()
    spout_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
    stmgr_end.setblocking(False)
    loop = _Loop(inst, Connection(spout_end), metrics=None, drain_max=1.0, gc_threshold=0, events=EventsLog(""))
    for f in (control_frame(physical_plan=plan), step(Step.RESTORE, 1), step(Step.RESUME, 1)):
        inst.on_frame(f, 0.0)
    while True:  # the stream manager reads nothing: the spout emits until its socket is full
        inst.spout_burst()
        if not loop.send_some():
            break
    peek = FrameReader()
    peek.feed(stmgr_end.recv(1 << 22, socket.MSG_PEEK))
    assert peek.pending, "the socket took whole frames only: the test needs a frame partly sent"

    inst.on_frame(step(Step.RESTORE, 2), 0.0)

    reader, steps = FrameReader(), []
    while True:
        loop.send_some()
        try:
            data = stmgr_end.recv(1 << 20)
        except BlockingIOError:
            break
        steps += [(m.step, m.epoch) for f in reader.feed(data) if f[4] == CONTROL
                  for m in [decode_control(f).checkpoint] if m is not None]
    assert (Step.RESTORED, 2) in steps and reader.pending == 0, (steps, reader.pending)
    spout_end.close()
    stmgr_end.close()
