"""A spout whose next_tuple blocks (a poll of a broker), for flush-on-time and scale-down tests.

ids (par ``e2e.spouts``): each call sleeps ``e2e.sleep`` seconds, then emits ``[id, wall time]``
until it has emitted ``e2e.ids`` ids (task k: k, k + par, ...), appending each id to
``emitted-<task>.log``. sink (fields on the id, par ``e2e.sinks``) appends ``id latency`` (seconds
from emit to process, wall clock) to ``seen-<task>-<pid>.log``. At most once, round-robin on two
containers.
"""
import os
import time

from squall import Bolt, Grouping, Spout, TopologyBuilder


class BlockingIds(Spout):
    outputs = ["id", "at"]

    def initialize(self, config, context):
        tasks = context.get_component_tasks(context.get_component_id())
        self.next_id = context.get_task_id() - min(tasks)
        self.step = len(tasks)
        self.limit = config["e2e.ids"]
        self.sleep = config["e2e.sleep"]
        self.log = open(os.path.join(config["e2e.out.dir"], f"emitted-{context.get_task_id()}.log"), "a",
                        buffering=1)

    def next_tuple(self):
        time.sleep(self.sleep)
        if self.next_id < self.limit:
            self.emit([self.next_id, time.time()])
            self.log.write(f"{self.next_id}\n")
            self.next_id += self.step


class Record(Bolt):
    def initialize(self, config, context):
        self.log = open(os.path.join(config["e2e.out.dir"], f"seen-{context.get_task_id()}-{os.getpid()}.log"), "a",
                        buffering=1)

    def process(self, tup):
        self.log.write(f"{tup['id']} {time.time() - tup['at']:.4f}\n")


builder = TopologyBuilder("slow_spout")
ids = builder.add_spout("ids", BlockingIds, par=1)
builder.add_bolt("sink", Record, par=1, inputs={ids: Grouping.fields("id")})
# the spout and its sink in processes of their own (not chained), with frames between them through
# the stream managers: what these tests look at
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2, "squall.chaining": "off",
                    "e2e.ids": 6, "e2e.sleep": 0.5})
topology = builder.build()
