"""A reliable topology whose spout keeps its position in memory only, for stream-manager faults.

ids (a ReliableSpout, par 2: task k emits k, k + 2, k + 4, ... below ``faults.ids``, paced at
``faults.rate``/s, its position in memory: were it restarted it would start again from the first
id) -> relay (shuffle, par 2) -> sink (fields on the id, par 2). Sinks append every id they
process to ``seen-<task>-<pid>.log`` in ``faults.out.dir``; spouts append acked ids to
``acked-<task>.log``. Two containers, round-robin, so each has a stream manager worth killing.
"""
import os
import time

from squall import Bolt, Grouping, ReliableSpout, TopologyBuilder


class InMemoryIds(ReliableSpout):
    outputs = ["id"]
    max_retries = 1000

    def initialize(self, config, context):
        par = len(context.get_component_tasks(context.get_component_id()))
        index = context.get_task_id() - min(context.get_component_tasks(context.get_component_id()))
        self.todo = list(range(index, config["faults.ids"], par))
        self.acked = open(os.path.join(config["faults.out.dir"], f"acked-{context.get_task_id()}.log"), "a",
                          buffering=1)
        self.interval = 1.0 / config["faults.rate"]
        self.next_at = time.monotonic()

    def next_tuple(self):
        if self.todo and time.monotonic() >= self.next_at:
            i = self.todo.pop(0)
            self.emit([i], tup_id=i)
            self.next_at += self.interval

    def on_ack(self, tup_id):
        self.acked.write(f"{tup_id}\n")

    def on_give_up(self, tup_id, values):
        raise RuntimeError(f"gave up on {tup_id}")


class Relay(Bolt):
    outputs = ["id"]

    def process(self, tup):
        self.emit([tup["id"]])


class Record(Bolt):
    def initialize(self, config, context):
        self.log = open(os.path.join(config["faults.out.dir"], f"seen-{context.get_task_id()}-{os.getpid()}.log"),
                        "a", buffering=1)

    def process(self, tup):
        self.log.write(f"{tup['id']}\n")


builder = TopologyBuilder("in_memory")
ids = builder.add_spout("ids", InMemoryIds, par=2)
relay = builder.add_bolt("relay", Relay, par=2, inputs={ids: Grouping.SHUFFLE})
builder.add_bolt("sink", Record, par=2, inputs={relay: Grouping.fields("id")})
# not chained: the spouts and relays in processes of their own, around the stream manager killed
# (reliable_chain.py is the chained case)
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2, "squall.chaining": "off",
                    "topology.reliability.mode": "ATLEAST_ONCE", "topology.message.timeout.secs": 5,
                    "topology.max.spout.pending": 200, "faults.ids": 6000, "faults.rate": 400})
topology = builder.build()
