"""A CPU-bound bolt: ``capacity.work.ms`` of computing per tuple, held to the CPU
its instance is allocated (``squall.component.cpu``).

On a cluster the allocation is enforced by the container (YARN's CGroups);
the local scheduler does not enforce it, so the bolt holds itself to it the
same way a CPU quota does: when its process has used more CPU time than
``allocation × wall time``, it sleeps off the difference; CPU it left unused
carries over for at most one quota period.
"""
import time

from squall import Bolt, Grouping, TopologyBuilder

from paced import PacedSpout

QUOTA_PERIOD_SECS = 0.1


class Computing(Bolt):
    def initialize(self, config, context):
        self.work = float(config["capacity.work.ms"]) / 1000.0
        self.allocation = float(config["squall.component.cpu"])
        self.cpu0 = time.process_time()
        self.wall0 = time.monotonic()

    def process(self, tup):
        end = time.process_time() + self.work
        x = 0
        while time.process_time() < end:
            x += 1
        credit = (time.monotonic() - self.wall0) - (time.process_time() - self.cpu0) / self.allocation
        if credit < 0:
            time.sleep(-credit)
        elif credit > QUOTA_PERIOD_SECS:  # unused CPU does not carry over (a quota is per period)
            self.wall0 += credit - QUOTA_PERIOD_SECS


builder = TopologyBuilder("cpu_bound")
spout = builder.add_spout("source", PacedSpout, par=1)
builder.add_bolt("compute", Computing, par=1, inputs={spout: Grouping.SHUFFLE},
                 config={"squall.component.cpu": 0.2})
builder.set_config({"topology.workers": 1, "topology.builtin.metrics.bucket.size.secs": 1,
                    "capacity.rate": 400, "capacity.work.ms": 1})
topology = builder.build()
