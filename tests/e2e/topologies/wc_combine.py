"""Word count with map-side combining, 1/2/2: split emits ``[word, 1]`` and the count bolt declares
``combine``, so each split task sends one partial count per word per batch. Each count task writes
``count-<task>.json`` (its counts) and ``tuples-<task>.json`` (how many tuples it received) to
``e2e.out.dir``; at least once the spout emits each sentence with an id and writes ``acked-<task>.json``
(the ids acked).

Config: ``e2e.out.dir``, ``e2e.sentences``.
"""
import json
import os
from collections import Counter

from corpus import sentence

from squall import Bolt, Grouping, ReliableSpout, TopologyBuilder


def dump(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


class Sentences(ReliableSpout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        tasks = context.get_component_tasks(context.get_component_id())
        self.i = tasks.index(context.get_task_id())
        self.stride = len(tasks)
        self.limit = config["e2e.sentences"]
        self.reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
        self.acked = []
        self.path = os.path.join(config["e2e.out.dir"], f"acked-{context.get_task_id()}.json")

    def next_tuple(self):
        if self.i < self.limit:
            self.emit([sentence(self.i)], tup_id=self.i if self.reliable else None)
            self.i += self.stride

    def on_ack(self, tup_id):
        self.acked.append(tup_id)
        dump(self.path, self.acked)


class SplitOnes(Bolt):
    outputs = ["word", "n"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word, 1])


class CombiningCount(Bolt):
    outputs = ["word", "count"]

    @staticmethod
    def combine(a, b):
        return [a[0], a[1] + b[1]]

    def initialize(self, config, context):
        self.counts = Counter()
        self.tuples = 0
        task = context.get_task_id()
        self.paths = [os.path.join(config["e2e.out.dir"], f"{kind}-{task}.json") for kind in ("tuples", "count")]

    def process(self, tup):
        self.counts[tup["word"]] += tup["n"]
        self.tuples += 1

    def process_tick(self, tup):  # the tuples first: once the counts are whole, so is it
        dump(self.paths[0], self.tuples)
        dump(self.paths[1], self.counts)


def build(name, spouts, splits, counts):
    builder = TopologyBuilder(name)
    s = builder.add_spout("sentences", Sentences, par=spouts)
    sp = builder.add_bolt("split", SplitOnes, par=splits, inputs={s: Grouping.SHUFFLE})
    builder.add_bolt("count", CombiningCount, par=counts, inputs={sp: Grouping.fields("word")})
    builder.set_config({"topology.workers": 2, "topology.tick.tuple.freq.secs": 0.3, "e2e.sentences": 2000})
    return builder.build()


topology = build("wc_combine", 1, 2, 2)
