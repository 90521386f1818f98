"""Event-time windows under an idle upstream task and a far-future timestamp.

stamps (par 2): task index 0 emits ``e2e.count`` tuples stamped with the clock at ``e2e.rate`` a second,
the one numbered ``e2e.future_at`` stamped ``FUTURE`` seconds ahead, and logs each ``(id, ts)`` to
``stamps.log``; task index 1 emits nothing (idle). totals: tumbling 0.5 s windows, lag 1 s, late
tuples to sink; both record what they get in ``e2e.out.dir``. The lag (1 s) covers an honest tuple's
trip to the bolt: the far-future one counts for the watermark as its arrival time.
"""
import json
import os
import time

from squall import Bolt, Spout, Stream, TopologyBuilder, Window, WindowedBolt

FUTURE = 1e6


class Stamps(Spout):
    outputs = ["id", "ts"]

    def initialize(self, config, context):
        self.active = context.get_component_tasks("stamps").index(context.get_task_id()) == 0
        self.count = config["e2e.count"]
        self.every = 1.0 / config["e2e.rate"]
        self.future_at = config["e2e.future_at"]
        self.log = open(os.path.join(config["e2e.out.dir"], "stamps.log"), "a", buffering=1)
        self.i = 0
        self.next_at = time.monotonic()

    def next_tuple(self):
        if self.active and self.i < self.count and time.monotonic() >= self.next_at:
            ts = time.time() + (FUTURE if self.i == self.future_at else 0)
            self.log.write(json.dumps([self.i, ts]) + "\n")
            self.emit([self.i, ts])
            self.i += 1
            self.next_at += self.every


class Totals(WindowedBolt):
    outputs = [Stream(["id", "ts"], name="late")]
    window = Window.tumbling(duration=0.5)
    timestamp_field = "ts"
    lag = 1.0
    late_stream = "late"

    def initialize(self, config, context):
        self.out = open(os.path.join(config["e2e.out.dir"], f"windows-{os.getpid()}.jsonl"), "a", buffering=1)

    def process_window(self, window):
        self.out.write(json.dumps([window.start, window.end, [t["id"] for t in window.tuples]]) + "\n")


class Late(Bolt):
    def initialize(self, config, context):
        self.out = open(os.path.join(config["e2e.out.dir"], f"late-{os.getpid()}.log"), "a", buffering=1)

    def process(self, tup):
        self.out.write(f"{tup['id']}\n")


builder = TopologyBuilder("watermarks")
stamps = builder.add_spout("stamps", Stamps, par=2)
totals = builder.add_bolt("totals", Totals, inputs=[stamps])
builder.add_bolt("late", Late, inputs=[totals["late"]])
builder.set_config({"topology.workers": 1, "e2e.count": 450, "e2e.rate": 150, "e2e.future_at": 100,
                    "squall.window.idle.timeout.secs": 1.0})
topology = builder.build()
