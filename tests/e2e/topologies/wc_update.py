"""Word count with a slow spout, for scaling while it runs.

Count tasks write ``count-<task>_<pid>.json`` on ticks and on close, so counts
of tasks that are scaled away are kept; the spout keeps its position in
``spout-<task>.pos``, so a spout task restarted by an update (a chain split)
goes on where it was. Config: ``e2e.out.dir``, ``e2e.sentences``,
``e2e.sentences.per.sec`` (per spout task; a file ``rate`` in ``e2e.out.dir``,
when there, overrides it while running: ``e2e_harness.pace`` writes it with
``squall.testing.words.set_rate``, how a test speeds up the rest of the corpus
once what it disturbs mid-run is over).
"""
import json
import os
from collections import Counter

from squall import Bolt, Grouping, Spout, TopologyBuilder
from squall.testing.words import Pace

from corpus import Split, sentence


class SlowSentences(Spout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        self.position = os.path.join(config["e2e.out.dir"], f"spout-{context.get_task_id()}.pos")
        self.i = int(open(self.position).read()) if os.path.exists(self.position) else 0
        self.limit = config["e2e.sentences"]
        self.pace = Pace(config["e2e.sentences.per.sec"], os.path.join(config["e2e.out.dir"], "rate"))

    def next_tuple(self):
        if self.i < self.limit and self.pace.due():
            self.emit([sentence(self.i)])
            self.i += 1
            with open(self.position + ".tmp", "w") as f:
                f.write(str(self.i))
            os.replace(self.position + ".tmp", self.position)
            self.pace.emitted()


class DurableCount(Bolt):
    def initialize(self, config, context):
        self.counts = Counter()
        self.path = os.path.join(config["e2e.out.dir"], f"count-{context.get_task_id()}_{os.getpid()}.json")

    def process(self, tup):
        self.counts[tup["word"]] += 1

    def process_tick(self, tup):
        self.flush()

    def close(self):
        self.flush()

    def flush(self):
        with open(self.path + ".tmp", "w") as f:
            json.dump(self.counts, f)
        os.replace(self.path + ".tmp", self.path)


builder = TopologyBuilder("wc_update")
s = builder.add_spout("sentences", SlowSentences, par=1)
sp = builder.add_bolt("split", Split, par=1, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", DurableCount, par=2, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 2, "topology.tick.tuple.freq.secs": 0.3, "e2e.sentences": 1500,
                    "e2e.sentences.per.sec": 100})
topology = builder.build()
