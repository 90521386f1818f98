"""Test topology for the runtime: a finite numbered word spout, a split-ish
bolt and a count bolt (fields grouping) that writes what it saw to files in
the directory named by ``rt.out.dir``."""
from __future__ import annotations

import json
import os
from collections import Counter

from squall import Bolt, Grouping, Spout, TopologyBuilder

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]


class NumberSpout(Spout):
    outputs = ["word"]

    def initialize(self, config, context):
        tasks = context.get_component_tasks(context.get_component_id())
        self.stride = len(tasks)
        self.i = tasks.index(context.get_task_id())
        self.limit = config.get("rt.sentences", 1000)

    def next_tuple(self):
        if self.i >= self.limit:
            return
        self.emit([WORDS[self.i % len(WORDS)] + " " + WORDS[(self.i * 3) % len(WORDS)]])
        self.i += self.stride


class SplitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for w in tup["word"].split():
            self.emit([w])


class CountBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, config, context):
        self.counts = Counter()
        self.path = os.path.join(config["rt.out.dir"], f"count-{context.get_task_id()}.json")

    def process(self, tup):
        self.counts[tup["word"]] += 1

    def process_tick(self, tup):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.counts, f)
        os.replace(tmp, self.path)


def expected(limit):
    c = Counter()
    for i in range(limit):
        c[WORDS[i % len(WORDS)]] += 1
        c[WORDS[(i * 3) % len(WORDS)]] += 1
    return c


builder = TopologyBuilder("rt_words")
spout = builder.add_spout("spout", NumberSpout, par=2)
split = builder.add_bolt("split", SplitBolt, par=2, inputs={spout: Grouping.SHUFFLE})
builder.add_bolt("count", CountBolt, par=2, inputs={split: Grouping.fields("word")})
builder.set_config({"topology.tick.tuple.freq.secs": 0.2, "topology.builtin.metrics.bucket.size.secs": 1.0})
topology = builder.build()
