"""Word count for the end-to-end benchmark: tuples carry their spout emit time.

Count tasks append a line to ``<bench.out.dir>/count-<task>.jsonl`` every
tick: words counted so far and the end-to-end latencies (emit -> count)
sampled since the last tick, each stamped with when it was taken (appending
only the new samples keeps the measuring cost flat over a run). One latency
sample per spout burst of 100 sentences (~550 words: its first word, which
carries a new stamp); counting words per tuple and sampling by a modulo cost
~670 instructions a word, 6% of the whole pipeline. The count is a dict
(``Counter``'s ``+=`` costs 2.4x more a word).

Config: ``bench.out.dir``; ``bench.rate`` (sentences/s, 0 for as fast as
backpressure allows). At least once (``topology.reliability.mode``) the spout
emits every sentence with an id and, for one sentence in 100, appends its
complete latency (emit -> ack of its whole tree) to
``<bench.out.dir>/complete-<task>.jsonl``.
"""
import json
import os
import time
from squall import Bolt, Grouping, Spout, TopologyBuilder

WORDS = "the quick brown fox jumps over lazy dog stream storm heron squall spark yarn".split()


def sentence(i):
    n = 3 + (i * 7) % 6
    return " ".join(WORDS[(i * 31 + k * 17) % len(WORDS)] for k in range(n))


class TimedSentences(Spout):
    outputs = ["sentence", "t"]

    def initialize(self, config, context):
        self.sentences = [sentence(i) for i in range(1000)]
        self.i = 0
        rate = config.get("bench.rate", 0)  # sentences/s; 0: as fast as backpressure allows
        self.interval = 100 / rate if rate else 0.0
        self.next_at = time.monotonic()
        self.reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
        self.sampled = {}  # id -> emit time, one id per burst of 100
        self.completes = []
        self.complete_path = os.path.join(config["bench.out.dir"], f"complete-{context.get_task_id()}.jsonl")

    def due(self) -> bool:
        """Paced (``bench.rate``): whether the next burst of 100 is due; unpaced, always."""
        if self.interval:
            if time.monotonic() < self.next_at:
                return False
            self.next_at += self.interval
        return True

    def next_tuple(self):
        if not self.due():
            return
        now = time.time()
        if self.reliable:
            self.sampled[self.i] = now
            for _ in range(100):
                self.emit([self.sentences[self.i % 1000], now], tup_id=self.i)
                self.i += 1
            return
        for _ in range(100):
            self.emit([self.sentences[self.i % 1000], now])
            self.i += 1

    def ack(self, tup_id):
        emitted = self.sampled.pop(tup_id, None)
        if emitted is not None:
            now = time.time()
            self.completes.append((now, now - emitted))
            if len(self.completes) >= 50:
                with open(self.complete_path, "a") as f:
                    f.write(json.dumps(self.completes) + "\n")
                self.completes = []

    def fail(self, tup_id):
        self.sampled.pop(tup_id, None)


class TimedSplit(Bolt):
    outputs = ["word", "t"]

    def process(self, tup):
        t = tup.values[1]
        for word in tup.values[0].split():
            self.emit([word, t])


class TimedCount(Bolt):
    def initialize(self, config, context):
        self.counts = {}
        self.stamp = None
        self.samples = []
        self.path = os.path.join(config["bench.out.dir"], f"count-{context.get_task_id()}.jsonl")

    def process(self, tup):
        word, stamp = tup.values
        self.counts[word] = self.counts.get(word, 0) + 1  # a dict: Counter's += is 2.4x slower per word
        if stamp != self.stamp:  # the first word of a spout burst (its 100 sentences share a stamp)
            self.stamp = stamp
            now = time.time()
            self.samples.append((now, now - stamp))

    def process_tick(self, tup):
        line = {"at": time.time(), "words": sum(self.counts.values()), "samples": self.samples}
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")
        self.samples = []


builder = TopologyBuilder("wc_bench")
# The shape of examples/word_count.py: one spout, two split and two count tasks.
# With one split task the pipeline ran ~25% slower on 2 cores: the split is the
# busiest stage, and the kernel's fair share gives one process of four runnable
# ones half a core whenever all want to run.
s = builder.add_spout("sentence", TimedSentences, par=1)
sp = builder.add_bolt("split", TimedSplit, par=2, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", TimedCount, par=2, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.5})
topology = builder.build()
