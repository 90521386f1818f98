"""Test topology for at-least-once without sockets: ids -> double (two anchored tuples each) -> sink.

The components are plain: tests hand the runtime objects of their own to
record and misbehave.
"""
from squall import Bolt, Grouping, Spout, TopologyBuilder


class Ids(Spout):
    outputs = ["n"]


class Double(Bolt):
    outputs = ["n", "copy"]

    def process(self, tup):
        self.emit([tup["n"], 0])
        self.emit([tup["n"], 1])


class Sink(Bolt):
    def process(self, tup):
        pass


builder = TopologyBuilder("rt_reliable")
ids = builder.add_spout("ids", Ids)
double = builder.add_bolt("double", Double, inputs={ids: Grouping.SHUFFLE})
builder.add_bolt("sink", Sink, par=2, inputs={double: Grouping.fields("n")})
builder.set_config({"topology.reliability.mode": "ATLEAST_ONCE", "topology.message.timeout.secs": 5,
                    "topology.max.spout.pending": 10})
topology = builder.build()
