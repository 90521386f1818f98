"""The chaos run's topology (bench/chaos.py): a word count at EFFECTIVELY_ONCE whose counts are exact or
show the difference after any number of SIGKILLs.

sentences (a StatefulSpout, par 2, paced at ``chaos.rate``/s each; its position is its state) -> split
(shuffle, par 2) -> count (``squall.testing.sinks.CommittedCounts``, fields on the word, par 2): a
two-phase sink, so only output of complete checkpoints is ever seen.
"""
import time
from collections import Counter

from squall import Bolt, Grouping, StatefulSpout, TopologyBuilder
from squall.testing.sinks import OUT_KEY, CommittedCounts


def sentence(i):
    """Sentence ``i``: one to four of 1000 words."""
    return " ".join(f"w{(i * 7 + k * 131) % 1000}" for k in range(1 + i % 4))


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
        self.total = config["chaos.sentences"]
        self.interval = 1.0 / config["chaos.rate"]
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
            self.next_at = max(self.next_at + self.interval, time.monotonic() - 1.0)


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word])


def word_count(out, sentences, rate):
    builder = TopologyBuilder("chaos_count")
    spout = builder.add_spout("sentences", Sentences, par=2)
    split = builder.add_bolt("split", Split, par=2, inputs={spout: Grouping.SHUFFLE})
    builder.add_bolt("count", CommittedCounts, par=2, inputs={split: Grouping.fields("word")})
    builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                        "topology.reliability.mode": "EFFECTIVELY_ONCE",
                        "topology.state.checkpoint.interval.secs": 1.0,
                        "squall.restart.max": 100,
                        OUT_KEY: out, "chaos.sentences": sentences, "chaos.rate": rate})
    return builder.build()
