"""Components for tests/foundation/test_stateful.py (importable by name)."""
from squall import Bolt, Spout, StatefulBolt, StatefulSpout


class Source(StatefulSpout):
    outputs = ["word"]

    def init_state(self, state):
        self.state = state


class PlainSource(Spout):
    outputs = ["word"]


class Count(StatefulBolt):
    outputs = ["word", "n"]

    def init_state(self, state):
        self.state = state

    def process(self, tup):
        self.state.put(tup["word"], self.state.get(tup["word"], 0) + 1)


class Sink(Bolt):
    pass


class PartitionSource(StatefulSpout):
    """A spout whose state is keyed by the partitions it reads: rescalable."""

    outputs = ["word"]
    rescalable = True

    def init_state(self, state):
        self.state = state
