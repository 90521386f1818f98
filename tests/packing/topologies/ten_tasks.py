"""A spout of 2 and a bolt of 8 at default sizes: 10 tasks, more than one
default container holds (issue 18: round-robin over one container refused it)."""
from squall import Bolt, Grouping, Spout, TopologyBuilder


class Numbers(Spout):
    outputs = ["n"]

    def next_tuple(self):
        self.emit([1])


class Sink(Bolt):
    def process(self, tup):
        pass


builder = TopologyBuilder("ten_tasks")
numbers = builder.add_spout("numbers", Numbers, par=2)
builder.add_bolt("sink", Sink, par=8, inputs={numbers: Grouping.SHUFFLE})
topology = builder.build()
