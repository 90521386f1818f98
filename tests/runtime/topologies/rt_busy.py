"""Test topology for the runtime's process metrics: a spout that keeps one core
busy (it spins ~5 ms per ``next_tuple`` and emits one tuple) and a sink bolt."""
from __future__ import annotations

import time

from squall import Bolt, Grouping, Spout, TopologyBuilder


class BusySpout(Spout):
    outputs = ["n"]

    def initialize(self, config, context):
        self.n = 0

    def next_tuple(self):
        until = time.perf_counter() + 0.005
        while time.perf_counter() < until:
            pass
        self.n += 1
        self.emit([self.n])


class Sink(Bolt):
    def process(self, tup):
        pass


builder = TopologyBuilder("rt_busy")
s = builder.add_spout("busy", BusySpout, par=1)
builder.add_bolt("sink", Sink, par=1, inputs={s: Grouping.SHUFFLE})
builder.set_config({"topology.workers": 1, "topology.builtin.metrics.bucket.size.secs": 0.5})
topology = builder.build()
