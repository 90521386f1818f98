"""squall.testing.words' stateful word count at EFFECTIVELY_ONCE with map-side combining: split emits
``[key, 1]`` (``key(word)``: one of 20 keys, so batches repeat keys) and the count sink adds the ones up
and declares ``combine``. The sink's folder is given at submit (``testing.out.dir``)."""
from squall import Bolt, Grouping, TopologyBuilder
from squall.testing.sinks import CommittedCounts
from squall.testing.words import RATE_KEY, SENTENCES_KEY, Sentences

KEYS = 20


def key(word):
    return f"k{int(word[1:]) % KEYS}"


class SplitOnes(Bolt):
    outputs = ["key", "n"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([key(word), 1])


class CombinedCounts(CommittedCounts):
    @staticmethod
    def combine(a, b):
        return [a[0], a[1] + b[1]]

    def process(self, tup):
        self.state.put(tup[0], self.state.get(tup[0], 0) + tup[1])


builder = TopologyBuilder("stateful_combine")
spout = builder.add_spout("sentences", Sentences, par=2)
split = builder.add_bolt("split", SplitOnes, par=2, inputs={spout: Grouping.SHUFFLE})
builder.add_bolt("count", CombinedCounts, par=2, inputs={split: Grouping.fields("key")})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "EFFECTIVELY_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "topology.builtin.metrics.bucket.size.secs": 1.0, SENTENCES_KEY: 6000, RATE_KEY: 1000})
topology = builder.build()
