"""A stateful word count at EFFECTIVELY_ONCE, for kills and rescales mid-run (docs/state.md).

sentences (a StatefulSpout, par 2: task k emits sentences k, k + 2, ... below ``state.sentences``,
paced at ``state.rate``/s; its position is its state) -> split (shuffle, par 2, stateless) -> count
(``squall.testing.sinks.CommittedCounts``, fields on the word, par 2): a two-phase sink that writes the
counts of each complete checkpoint to ``count-<task>.json`` in ``testing.out.dir``, so only output of
complete checkpoints is ever seen (``committed_counts`` reads it).
"""
import time
from collections import Counter

from squall import Bolt, Grouping, StatefulSpout, TopologyBuilder
from squall.testing.sinks import CommittedCounts


def sentence(i):
    """Sentence ``i``: one to five of 500 words."""
    return " ".join(f"w{(i * 7 + k * 131) % 500}" for k in range(1 + i % 5))


def expected(n):
    counts = Counter()
    for i in range(n):
        counts.update(sentence(i).split())
    return counts


class Sentences(StatefulSpout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        tasks = sorted(context.get_component_tasks(context.get_component_id()))
        self.index, self.par = tasks.index(context.get_task_id()), len(tasks)
        self.total = config["state.sentences"]
        self.interval = 1.0 / config["state.rate"]
        self.next_at = time.monotonic()

    def init_state(self, state):
        self.state = state

    def next_tuple(self):
        if time.monotonic() < self.next_at:
            return
        i = self.state.get("next", self.index)
        if i < self.total:
            self.emit([sentence(i)])
            self.state.put("next", i + self.par)
            self.next_at += self.interval


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word])


builder = TopologyBuilder("stateful_count")
sentences = builder.add_spout("sentences", Sentences, par=2)
split = builder.add_bolt("split", Split, par=2, inputs={sentences: Grouping.SHUFFLE})
builder.add_bolt("count", CommittedCounts, par=2, inputs={split: Grouping.fields("word")})
builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                    "topology.reliability.mode": "EFFECTIVELY_ONCE", "topology.state.checkpoint.interval.secs": 0.5,
                    "state.sentences": 6000, "state.rate": 300})
topology = builder.build()
