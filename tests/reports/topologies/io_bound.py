"""An I/O-bound bolt: it waits ``capacity.wait.ms`` per tuple (a call to a slow
service), using almost no CPU. Fed by a paced spout at ``capacity.rate``."""
import time

from squall import Bolt, Grouping, TopologyBuilder

from paced import PacedSpout


class Waiting(Bolt):
    def initialize(self, config, context):
        self.wait = float(config["capacity.wait.ms"]) / 1000.0

    def process(self, tup):
        time.sleep(self.wait)


builder = TopologyBuilder("io_bound")
spout = builder.add_spout("source", PacedSpout, par=1)
builder.add_bolt("wait", Waiting, par=1, inputs={spout: Grouping.SHUFFLE})
builder.set_config({"topology.workers": 1, "topology.builtin.metrics.bucket.size.secs": 1,
                    "capacity.rate": 1000, "capacity.wait.ms": 2})
topology = builder.build()
