"""A bolt that crashes on every tuple once its marker file exists: a process past its restart budget.

Config: ``e2e.out.dir`` (where the marker ``crash`` is created by the test).
"""
import os
import time

from squall import Bolt, Spout, TopologyBuilder


class Ticks(Spout):
    outputs = ["n"]

    def initialize(self, config, context):
        self.n = 0
        self.next_at = time.monotonic()

    def next_tuple(self):
        if time.monotonic() >= self.next_at:
            self.emit([self.n])
            self.n += 1
            self.next_at += 0.01


class Fragile(Bolt):
    def initialize(self, config, context):
        self.marker = os.path.join(config["e2e.out.dir"], "crash")

    def process(self, tup):
        if os.path.exists(self.marker):
            raise RuntimeError("planted: the marker file says crash")


builder = TopologyBuilder("fragile")
ticks = builder.add_spout("ticks", Ticks)
builder.add_bolt("fragile", Fragile, inputs=[ticks])
topology = builder.build()
