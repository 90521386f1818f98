"""A finite reliable topology with a windowed bolt, for its SIGKILL test.

ids (a ReliableSpout over ``faults.ids`` ids at ``faults.rate``/s; appends each acked id to
``acked.log`` in ``faults.out.dir``) -> totals (processing-time windows of 1 s every 0.5 s; writes the
ids of each window it processes to ``windows-<pid>.log`` before they are acked).
"""
import json
import os
import time

from squall import ReliableSpout, TopologyBuilder, Window, WindowedBolt


class Ids(ReliableSpout):
    outputs = ["id"]
    max_retries = 1000

    def initialize(self, config, context):
        self.acked = open(os.path.join(config["faults.out.dir"], "acked.log"), "a", buffering=1)
        self.todo = list(range(config["faults.ids"]))
        self.every = 1.0 / config["faults.rate"]
        self.next_at = time.monotonic()

    def next_tuple(self):
        if self.todo and time.monotonic() >= self.next_at:
            i = self.todo.pop(0)
            self.emit([i], tup_id=i)
            self.next_at += self.every

    def on_ack(self, tup_id):
        self.acked.write(f"{tup_id}\n")

    def on_give_up(self, tup_id, values):
        raise RuntimeError(f"gave up on {tup_id}")


class Totals(WindowedBolt):
    window = Window.sliding(duration=1.0, every=0.5)

    def initialize(self, config, context):
        self.log = open(os.path.join(config["faults.out.dir"], f"windows-{os.getpid()}.log"), "a", buffering=1)

    def process_window(self, window):
        self.log.write(json.dumps([t["id"] for t in window.tuples]) + "\n")


builder = TopologyBuilder("windowed_reliable")
ids = builder.add_spout("ids", Ids)
builder.add_bolt("totals", Totals, inputs=[ids])
builder.set_config({"topology.workers": 1, "topology.reliability.mode": "ATLEAST_ONCE",
                    "topology.message.timeout.secs": 3, "faults.ids": 1500, "faults.rate": 300})
topology = builder.build()
