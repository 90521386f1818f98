"""Test topology for draining at SIGTERM: a spout that emits nothing (the test
sends the tuples itself) and a slow bolt that marks ``started-<task>`` in
``rt.out.dir`` when it takes its first tuple and writes the tuples it processed
there when it is closed."""
from __future__ import annotations

import json
import os
import time

from squall import Bolt, Grouping, Spout, TopologyBuilder


class Quiet(Spout):
    outputs = ["n"]

    def next_tuple(self):
        pass


class SlowSink(Bolt):
    def initialize(self, config, context):
        self.seen = []
        self.delay = config.get("rt.delay.secs", 0.05)
        self.path = os.path.join(config["rt.out.dir"], f"sink-{context.get_task_id()}.json")
        self.started = os.path.join(config["rt.out.dir"], f"started-{context.get_task_id()}")

    def process(self, tup):
        if not self.seen:
            open(self.started, "w").close()
        time.sleep(self.delay)
        self.seen.append(tup["n"])

    def close(self):
        with open(self.path, "w") as f:
            json.dump(self.seen, f)


builder = TopologyBuilder("rt_drain")
s = builder.add_spout("quiet", Quiet, par=1)
builder.add_bolt("sink", SlowSink, par=1, inputs={s: Grouping.SHUFFLE})
builder.set_config({"topology.workers": 1})
topology = builder.build()
