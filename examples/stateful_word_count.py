"""Word count at EFFECTIVELY_ONCE: counts that survive crashes and rescales, each word counted once.

The sentence spout is a ``StatefulSpout`` (its position in the corpus is its
state), the count bolt a ``StatefulBolt`` (its counts are a ``KeyValueState``
saved at every checkpoint) and a two-phase sink: at ``pre_save`` it keeps a
copy of its counts, at ``post_save`` (the checkpoint is complete) it logs the
totals it has committed. Kill any process of it, or rescale the count bolt
(``squall update stateful_word_count --component-parallelism count=4``): every
task rolls back to the last complete checkpoint and goes on from there
(docs/state.md). Config:

- ``word_count.corpus.sentences``: sentences the spout emits in total (split
  across spout tasks); 0 (the default) means loop forever.

    squall submit examples/stateful_word_count.py
    squall metrics stateful_word_count      # ends with a line about checkpoints
"""
from __future__ import annotations

import logging

from squall import Bolt, Grouping, StatefulBolt, StatefulSpout, TopologyBuilder
from word_count import sentence

log = logging.getLogger(__name__)


class SentenceSpout(StatefulSpout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        tasks = context.get_component_tasks(context.get_component_id())
        self.stride, self.first = len(tasks), tasks.index(context.get_task_id())
        self.limit = config.get("word_count.corpus.sentences", 0) or None

    def init_state(self, state):
        self.state = state

    def next_tuple(self):
        i = self.state.get("next", self.first)
        if self.limit is not None and i >= self.limit:
            return
        self.emit([sentence(i % 100_000)])
        self.state.put("next", i + self.stride)


class SplitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word])


class CountBolt(StatefulBolt):
    def init_state(self, state):
        self.counts = state
        self.pending: dict = {}

    def process(self, tup):
        word = tup["word"]
        self.counts.put(word, self.counts.get(word, 0) + 1)

    def pre_save(self, checkpoint_id):
        self.pending[checkpoint_id] = sum(n for _, n in self.counts.items())

    def post_save(self, checkpoint_id):
        words = self.pending.pop(checkpoint_id, None)
        for older in [c for c in self.pending if c < checkpoint_id]:
            del self.pending[older]
        if words is not None and checkpoint_id % 10 == 0:
            log.info("checkpoint %d committed: %d words counted by this task", checkpoint_id, words)


builder = TopologyBuilder("stateful_word_count")
sentences = builder.add_spout("sentence", SentenceSpout, par=1)
split = builder.add_bolt("split", SplitBolt, par=2, inputs={sentences: Grouping.SHUFFLE})
builder.add_bolt("count", CountBolt, par=2, inputs={split: Grouping.fields("word")})
builder.set_config({"topology.workers": 2, "topology.reliability.mode": "EFFECTIVELY_ONCE",
                    "topology.state.checkpoint.interval.secs": 1})
topology = builder.build()
