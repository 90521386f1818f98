"""Issue 27's 100-instance topology: 4 components x 25 tasks, at least once, each task asking for 0.5 cores and
256 MiB (what users ask when they do not measure), paced at ``health.rate`` ids/s per spout task (148: ~3,700
tuples/s in all). ids -> relay -> enrich -> sink, shuffled, with no chaining: 100 processes. The spout's
parallelism is pinned (``squall.health.min.parallelism`` and ``max.parallelism`` 25, as a Kafka topic's partitions pin it: a paced task emits its own share, so more tasks would offer more): its ids
are interleaved by task, and a spout task removed takes its unacked ids with it.

The spout is tests/health/topologies/health_paced.py's (numbered ids, their acks kept in ``health.out.dir``).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tests", "health",
                                "topologies"))

from health_paced import PacedIds  # noqa: E402

from squall import Bolt, Grouping, TopologyBuilder  # noqa: E402

TASKS = 25


class Ids(PacedIds):
    """Defined here, so that the instances import this file (which finds health_paced), not health_paced."""


class Relay(Bolt):
    """Passes the id on, anchored (auto_anchor), acked when ``process`` returns."""

    outputs = ["id"]

    def process(self, tup):
        self.emit([tup.values[0]])


class Sink(Bolt):
    def process(self, tup):
        pass


builder = TopologyBuilder("hundred")
ids = builder.add_spout("ids", Ids, par=TASKS, config={"squall.health.min.parallelism": TASKS,
                                                     "squall.health.max.parallelism": TASKS})
relay = builder.add_bolt("relay", Relay, par=TASKS, inputs={ids: Grouping.SHUFFLE})
enrich = builder.add_bolt("enrich", Relay, par=TASKS, inputs={relay: Grouping.SHUFFLE})
builder.add_bolt("sink", Sink, par=TASKS, inputs={enrich: Grouping.SHUFFLE})
builder.set_config({"topology.reliability.mode": "ATLEAST_ONCE", "health.ids": 10 ** 9, "health.rate": 148,
                    "squall.chaining": "off", "squall.component.cpu": 0.5, "squall.component.ram.mb": 256})
topology = builder.build()
