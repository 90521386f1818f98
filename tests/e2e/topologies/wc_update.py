"""Word count with a slow spout, for scaling while it runs.

Count tasks write ``count-<task>_<pid>.json`` on ticks and on close, so counts
of tasks that are scaled away are kept; the spout keeps its position in
``spout-<task>.pos``, so a spout task restarted by an update (a chain split)
goes on where it was. Config: ``e2e.out.dir``, ``e2e.sentences``,
``e2e.sentences.per.sec`` (per spout task; a file ``rate`` in ``e2e.out.dir``,
when there, overrides it while running: ``e2e_harness.pace``, how a test
speeds up the rest of the corpus once what it disturbs mid-run is over).
"""
import json
import os
import time
from collections import Counter

from squall import Bolt, Grouping, Spout, TopologyBuilder

from corpus import Split, sentence

RATE_CHECK_SECS = 0.2  # how often the spout looks for a new rate


class SlowSentences(Spout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        self.position = os.path.join(config["e2e.out.dir"], f"spout-{context.get_task_id()}.pos")
        self.i = int(open(self.position).read()) if os.path.exists(self.position) else 0
        self.limit = config["e2e.sentences"]
        self.interval = 1.0 / config["e2e.sentences.per.sec"]
        self.rate_file = os.path.join(config["e2e.out.dir"], "rate")
        self.next_at = time.monotonic()
        self.follow_rate(self.next_at)

    def follow_rate(self, now):
        self.checked_at = now
        try:
            with open(self.rate_file) as f:
                self.interval = 1.0 / float(f.read())
        except (FileNotFoundError, ValueError):
            pass

    def next_tuple(self):
        now = time.monotonic()
        if now - self.checked_at >= RATE_CHECK_SECS:
            self.follow_rate(now)
        if self.i < self.limit and now >= self.next_at:
            self.emit([sentence(self.i)])
            self.i += 1
            with open(self.position + ".tmp", "w") as f:
                f.write(str(self.i))
            os.replace(self.position + ".tmp", self.position)
            self.next_at += self.interval


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
