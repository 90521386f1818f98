"""Word count with the batch API, rows and columns mixed: the spout emits ten sentences a call,
by turns with ``emit_many`` and ``emit_columns`` (with ids, at least once); split takes them with
``process_batch``, by turns reading ``batch.values`` and emitting each batch's words with one
``emit_many``, and reading ``batch.columns`` and emitting them with one ``emit_columns``; count
takes words with ``process_batch``, by turns as rows and as columns. So every producer meets every
consumer. One task each (wc_batch_wide.py: one sentence, two split and two count tasks).

Config: ``e2e.out.dir`` (count-<task>.json, acked.log), ``e2e.sentences``.
"""
import json
import os
from collections import Counter

from corpus import sentence

from squall import Bolt, Grouping, Spout, TopologyBuilder


class TenAtATime(Spout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        self.i = 0
        self.limit = config["e2e.sentences"]
        self.reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
        self.acked = open(os.path.join(config["e2e.out.dir"], "acked.log"), "a", buffering=1)
        self.pending = {}

    def next_tuple(self):
        if self.i >= self.limit:
            return
        ids = list(range(self.i, min(self.i + 10, self.limit)))
        self.i = ids[-1] + 1
        values = [[sentence(i)] for i in ids]
        if self.reliable:
            self.pending.update(zip(ids, values))
        tup_ids = ids if self.reliable else None
        if ids[0] // 10 % 2:
            self.emit_columns([[sentence(i) for i in ids]], tup_ids=tup_ids)
        else:
            self.emit_many(values, tup_ids=tup_ids)

    def ack(self, tup_id):
        self.pending.pop(tup_id, None)
        self.acked.write(f"{tup_id}\n")

    def fail(self, tup_id):
        self.emit(self.pending[tup_id], tup_id=tup_id)


class SplitBatch(Bolt):
    outputs = ["word"]

    def initialize(self, config, context):
        self.calls = 0

    def process_batch(self, batch):
        self.calls += 1
        if self.calls % 2:
            self.emit_columns([" ".join(batch.columns[0]).split()])
        else:
            self.emit_many([[word] for (s,) in batch.values for word in s.split()])


class CountBatch(Bolt):
    def initialize(self, config, context):
        self.counts = Counter()
        self.path = os.path.join(config["e2e.out.dir"], f"count-{context.get_task_id()}.json")

        self.calls = 0

    def process_batch(self, batch):
        self.calls += 1
        if self.calls % 2:
            self.counts.update(batch.columns[0])
        else:
            self.counts.update(word for (word,) in batch.values)

    def process_tick(self, tup):
        with open(self.path + ".tmp", "w") as f:
            json.dump(self.counts, f)
        os.replace(self.path + ".tmp", self.path)


def build(split: int, count: int):
    """The word count with ``split`` split and ``count`` count tasks."""
    builder = TopologyBuilder("wc_batch")
    s = builder.add_spout("sentences", TenAtATime)
    sp = builder.add_bolt("split", SplitBatch, par=split, inputs={s: Grouping.SHUFFLE})
    builder.add_bolt("count", CountBatch, par=count, inputs={sp: Grouping.fields("word")})
    builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.3, "e2e.sentences": 2000})
    return builder.build()


topology = build(1, 1)
