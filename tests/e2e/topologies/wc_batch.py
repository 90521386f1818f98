"""Word count with the batch API: the spout emits ten sentences a call with ``emit_many`` (with ids,
at least once), split takes them with ``process_batch`` and emits each batch's words with one
``emit_many``, count takes words with ``process_batch``. One task each.

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
            self.emit_many(values, tup_ids=ids)
        else:
            self.emit_many(values)

    def ack(self, tup_id):
        self.pending.pop(tup_id, None)
        self.acked.write(f"{tup_id}\n")

    def fail(self, tup_id):
        self.emit(self.pending[tup_id], tup_id=tup_id)


class SplitBatch(Bolt):
    outputs = ["word"]

    def process_batch(self, batch):
        self.emit_many([[word] for (s,) in batch.values for word in s.split()])


class CountBatch(Bolt):
    def initialize(self, config, context):
        self.counts = Counter()
        self.path = os.path.join(config["e2e.out.dir"], f"count-{context.get_task_id()}.json")

    def process_batch(self, batch):
        self.counts.update(word for (word,) in batch.values)

    def process_tick(self, tup):
        with open(self.path + ".tmp", "w") as f:
            json.dump(self.counts, f)
        os.replace(self.path + ".tmp", self.path)


builder = TopologyBuilder("wc_batch")
s = builder.add_spout("sentences", TenAtATime)
sp = builder.add_bolt("split", SplitBatch, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", CountBatch, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.3, "e2e.sentences": 2000})
topology = builder.build()
