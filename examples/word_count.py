"""Word count: sentences -> words -> counts, the "hello world" of streaming.

A sentence spout over a deterministic built-in corpus, a split bolt and a
count bolt with fields grouping on ``word`` (so each word is counted by one
task). Config:

- ``word_count.corpus.sentences``: sentences the spout emits in total
  (split across spout tasks); 0 (the default) means loop forever.
"""
from __future__ import annotations

from collections import Counter

from squall import Bolt, Grouping, Spout, TopologyBuilder

WORDS = (
    "the quick brown fox jumps over lazy dog stream storm heron squall spark yarn "
    "tuple bolt spout grouping container packing cluster python"
).split()


def sentence(i: int) -> str:
    """The i-th sentence of the corpus: deterministic, 3 to 8 words."""
    n = 3 + (i * 7) % 6
    return " ".join(WORDS[(i * 31 + k * 17) % len(WORDS)] for k in range(n))


def expected_counts(sentences: int) -> Counter:
    """The word counts a run over ``sentences`` sentences must produce."""
    counts: Counter = Counter()
    for i in range(sentences):
        counts.update(sentence(i).split())
    return counts


class SentenceSpout(Spout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        tasks = context.get_component_tasks(context.get_component_id())
        self.stride = len(tasks)
        self.next = tasks.index(context.get_task_id())
        self.limit = config.get("word_count.corpus.sentences", 0) or None

    def next_tuple(self):
        if self.limit is not None and self.next >= self.limit:
            return
        self.emit([sentence(self.next)], tup_id=self.next)
        self.next += self.stride


class SplitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word], anchors=[tup])
        self.ack(tup)


class CountBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, config, context):
        self.counts = Counter()

    def process(self, tup):
        word = tup["word"]
        self.counts[word] += 1
        self.emit([word, self.counts[word]], anchors=[tup])
        self.ack(tup)


builder = TopologyBuilder("word_count")
sentences = builder.add_spout("sentence", SentenceSpout, par=1)
split = builder.add_bolt("split", SplitBolt, par=2, inputs={sentences: Grouping.SHUFFLE})
builder.add_bolt("count", CountBolt, par=2, inputs={split: Grouping.fields("word")})
builder.set_config({"topology.workers": 2})
topology = builder.build()
