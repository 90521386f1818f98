"""A bolt that raises on its first tuple once, then records that it came back."""
import os
import time

from squall import Bolt, Grouping, Spout, TopologyBuilder


class TickSpout(Spout):
    outputs = ["n"]

    def initialize(self, config, context):
        self.n = 0

    def next_tuple(self):
        time.sleep(0.001)
        self.emit([self.n])
        self.n += 1


class BoomBolt(Bolt):
    def initialize(self, config, context):
        self.out = config["rt.out.dir"]

    def process(self, tup):
        flag = os.path.join(self.out, "crashed")
        if not os.path.exists(flag):
            open(flag, "w").close()
            raise RuntimeError("boom on purpose")
        open(os.path.join(self.out, "recovered"), "w").close()


builder = TopologyBuilder("rt_crash")
s = builder.add_spout("spout", TickSpout)
builder.add_bolt("boom", BoomBolt, inputs={s: Grouping.SHUFFLE})
topology = builder.build()
