"""A bolt whose first process fails on its first tuple: checks restarts and per-process logs.

Every process of the bolt leaves a ``started-<pid>`` marker in ``e2e.out.dir``;
only the first one raises, so the restarted process keeps running.
"""
import glob
import os

from squall import Bolt, Spout, TopologyBuilder


class Ones(Spout):
    outputs = ["n"]

    def next_tuple(self):
        self.emit([1])


class Boom(Bolt):
    def initialize(self, config, context):
        out = config["e2e.out.dir"]
        self.first = not glob.glob(os.path.join(out, "started-*"))
        open(os.path.join(out, f"started-{os.getpid()}"), "w").close()

    def process(self, tup):
        if self.first:
            raise ZeroDivisionError("planted failure")


builder = TopologyBuilder("crashy")
ones = builder.add_spout("ones", Ones)
builder.add_bolt("boom", Boom, inputs=[ones])
topology = builder.build()
