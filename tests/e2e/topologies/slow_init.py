"""Bolts whose ``initialize`` takes ``e2e.init.secs`` (loading a model, warming a cache) before each
writes ``initialized-<task>`` in ``e2e.out.dir``: submit returns once every one of them has."""
import os
import time

from squall import Bolt, Grouping, Spout, TopologyBuilder


class Idle(Spout):
    outputs = ["x"]

    def next_tuple(self):
        pass


class SlowToStart(Bolt):
    def initialize(self, config, context):
        time.sleep(float(config["e2e.init.secs"]))  # the user's slow start, not a wait of the test's
        open(os.path.join(config["e2e.out.dir"], f"initialized-{context.get_task_id()}"), "w").close()

    def process(self, tup):
        pass


builder = TopologyBuilder("slow_init")
idle = builder.add_spout("idle", Idle)
builder.add_bolt("slow", SlowToStart, par=2, inputs={idle: Grouping.SHUFFLE})
builder.set_config({"topology.workers": 2, "e2e.init.secs": 3})
topology = builder.build()
