"""Word count over a finite corpus; each count task writes its counts to a file.

Config: ``e2e.out.dir`` (where count-<task>.json files go), ``e2e.sentences``.
"""
import json
import os
from collections import Counter

from corpus import Split, sentence

from squall import Bolt, Grouping, Spout, TopologyBuilder


class Sentences(Spout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        tasks = context.get_component_tasks(context.get_component_id())
        self.i = tasks.index(context.get_task_id())
        self.stride = len(tasks)
        self.limit = config["e2e.sentences"]

    def next_tuple(self):
        if self.i < self.limit:
            self.emit([sentence(self.i)])
            self.i += self.stride


class Count(Bolt):
    outputs = ["word", "count"]

    def initialize(self, config, context):
        self.counts = Counter()
        self.path = os.path.join(config["e2e.out.dir"], f"count-{context.get_task_id()}.json")
        self.dirty = True

    def process(self, tup):
        self.counts[tup["word"]] += 1
        self.dirty = True

    def process_tick(self, tup):
        if self.dirty:
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.counts, f)
            os.replace(tmp, self.path)
            self.dirty = False


builder = TopologyBuilder("wc_finite")
s = builder.add_spout("sentences", Sentences, par=2)
sp = builder.add_bolt("split", Split, par=2, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", Count, par=2, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 2, "topology.tick.tuple.freq.secs": 0.3, "e2e.sentences": 2000})
topology = builder.build()
