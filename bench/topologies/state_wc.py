"""Word count with its state saved at checkpoints, unpaced, for bench/state.py.

sentences (a ``StatefulSpout``, par 1: its position in a table of sentences is
its state, put there at ``pre_save``; it emits 100 sentences a ``next_tuple``,
as fast as backpressure allows) -> split (shuffle, par 2, stateless) -> count
(a ``StatefulBolt``, fields on the word, par 2: one state key a word). One
container, no chaining (a topology that checkpoints is never chained).

The count tasks write two files to ``bench.out.dir``:

- ``counted-<task>.jsonl``: every tick (``topology.tick.tuple.freq.secs``) a
  line ``{"at": wall time, "words": words in its state}``, and at every
  ``init_state`` (the start, and each rollback) the same with ``"restored":
  true``;
- ``committed-<task>.jsonl``: at ``post_save`` (the checkpoint is complete) a
  line ``{"checkpoint": id, "words": words in its state as of that checkpoint,
  "at": wall time}``, the output of a two-phase sink.

Config: ``bench.out.dir``; ``bench.words`` (distinct words, default 10,000:
the state's keys). bench/topologies/state_wc_plain.py is the same count with
plain (non-stateful) components.
"""
import json
import os
import time

from squall import Bolt, Grouping, StatefulBolt, StatefulSpout, TopologyBuilder

SENTENCES = 10_000  # a table of sentences the spout cycles through
BURST = 100  # sentences a next_tuple call


def sentences(words):
    """The table: sentence ``i`` has 3 to 8 of ``words`` distinct words (w0, w1, ...)."""
    return [" ".join(f"w{(i * 7919 + k * 104_729) % words}" for k in range(3 + (i * 7) % 6))
            for i in range(SENTENCES)]


class Sentences(StatefulSpout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        self.table = sentences(config.get("bench.words", 10_000))
        self.i = 0

    def init_state(self, state):
        self.state = state
        self.i = state.get("next", 0)

    def pre_save(self, checkpoint_id):
        self.state.put("next", self.i)

    def next_tuple(self):
        table, i = self.table, self.i
        for n in range(i, i + BURST):
            self.emit([table[n % SENTENCES]])
        self.i = i + BURST


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


class Reports:
    """The count tasks' two files (module docstring)."""

    def __init__(self, config, context):
        out, task = config["bench.out.dir"], context.get_task_id()
        self.counted = os.path.join(out, f"counted-{task}.jsonl")
        self.committed = os.path.join(out, f"committed-{task}.jsonl")

    def count(self, words, restored=False):
        line = {"at": time.time(), "words": words}
        if restored:
            line["restored"] = True
        with open(self.counted, "a") as f:
            f.write(json.dumps(line) + "\n")

    def commit(self, checkpoint_id, words):
        with open(self.committed, "a") as f:
            f.write(json.dumps({"checkpoint": checkpoint_id, "words": words, "at": time.time()}) + "\n")


class Count(StatefulBolt):
    def initialize(self, config, context):
        self.reports = Reports(config, context)
        self.saved = {}  # checkpoint id -> words in the state it saved, until it is complete

    def init_state(self, state):
        self.state = state
        self.saved.clear()
        self.reports.count(self.words(), restored=True)

    def process(self, tup):
        word = tup.values[0]
        self.state.put(word, self.state.get(word, 0) + 1)

    def words(self):
        return sum(count for _, count in self.state.items())

    def process_tick(self, tup):
        self.reports.count(self.words())

    def pre_save(self, checkpoint_id):
        self.saved[checkpoint_id] = self.words()

    def post_save(self, checkpoint_id):
        words = self.saved.pop(checkpoint_id, None)
        for older in [c for c in self.saved if c < checkpoint_id]:
            del self.saved[older]
        if words is not None:
            self.reports.commit(checkpoint_id, words)


builder = TopologyBuilder("state_wc")
s = builder.add_spout("sentences", Sentences, par=1)
sp = builder.add_bolt("split", Split, par=2, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", Count, par=2, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.1, "squall.chaining": "off"})
topology = builder.build()
