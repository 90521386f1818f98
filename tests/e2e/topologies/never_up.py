"""A topology whose spout cannot start: submit must give up, clean up and say why."""
from squall import Spout, TopologyBuilder


class BrokenSpout(Spout):
    outputs = ["x"]

    def initialize(self, config, context):
        raise RuntimeError("planted: cannot reach the source system")


builder = TopologyBuilder("never_up")
builder.add_spout("broken", BrokenSpout)
topology = builder.build()
