"""A finite word count at EFFECTIVELY_ONCE for the supervisor's fault test: a stateful spout (its position is
its state), a split and ``squall.testing.sinks.CommittedCounts`` (a two-phase sink): after any SIGKILL its
committed counts are exact or they show the difference."""
import time
from collections import Counter

from squall import Bolt, Grouping, StatefulSpout, TopologyBuilder
from squall.testing.sinks import OUT_KEY, CommittedCounts


def sentence(i):
    """Sentence ``i``: one to four of 300 words."""
    return " ".join(f"w{(i * 7 + k * 131) % 300}" for k in range(1 + i % 4))


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
        self.total = config["count.sentences"]
        self.interval = 1.0 / config["count.rate"]
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


def word_count(name, out, sentences, rate):
    """Two containers (sentences and split chained, count behind a fields grouping)."""
    builder = TopologyBuilder(name)
    spout = builder.add_spout("sentences", Sentences, par=2)
    split = builder.add_bolt("split", Split, par=2, inputs={spout: Grouping.SHUFFLE})
    builder.add_bolt("count", CommittedCounts, par=2, inputs={split: Grouping.fields("word")})
    builder.set_config({"squall.packing.algorithm": "roundrobin", "topology.workers": 2,
                        "topology.reliability.mode": "EFFECTIVELY_ONCE",
                        "topology.state.checkpoint.interval.secs": 0.5,
                        OUT_KEY: out, "count.sentences": sentences, "count.rate": rate})
    return builder.build()
