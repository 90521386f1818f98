"""A bolt that fails on its first tuple, to check restarts and per-process logs."""
import os

from squall import Bolt, Spout, TopologyBuilder


class Ones(Spout):
    outputs = ["n"]

    def next_tuple(self):
        self.emit([1])


class Boom(Bolt):
    def initialize(self, config, context):
        open(os.path.join(config["e2e.out.dir"], f"started-{os.getpid()}"), "w").close()

    def process(self, tup):
        raise ZeroDivisionError("planted failure")


builder = TopologyBuilder("crashy")
ones = builder.add_spout("ones", Ones)
builder.add_bolt("boom", Boom, inputs=[ones])
topology = builder.build()
