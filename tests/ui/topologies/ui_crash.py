"""A bolt that raises once, uncaught (at most once, no auto_fail): its task exits and its executor restarts it.

``ui.marker`` names a file: the first ``process()`` that finds it missing
creates it and raises, so only one process of one task ever raises.
"""
import os

from squall import Bolt, Grouping, Spout, TopologyBuilder


class Words(Spout):
    outputs = ["word"]

    def next_tuple(self):
        self.emit(["squall"])


class Fragile(Bolt):
    def initialize(self, config, context):
        self.marker = config["ui.marker"]

    def process(self, tup):
        if not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError(f"cannot take {tup['word']!r} the first time")


builder = TopologyBuilder("ui_crash")
w = builder.add_spout("words", Words, par=1)
builder.add_bolt("fragile", Fragile, par=1, inputs={w: Grouping.SHUFFLE})
builder.set_config({"topology.workers": 1, "topology.builtin.metrics.bucket.size.secs": 1,
                    "squall.restart.backoff.secs": 0.2, "ui.marker": "/nonexistent/set-me"})
topology = builder.build()
