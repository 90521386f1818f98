"""Words for the UI tests: a steady spout, a splitter and a counter that raises on one word.

At least once with ``auto_fail``: the counter's ``process()`` raises on every
``"boom"`` (one sentence in ``ui.boom.every``), so the tuple fails and is
replayed, the topology stays up, and each raise is an error in user code the
UI shows. Config: ``ui.sentences.per.sec``.
"""
import time

from squall import Bolt, Grouping, ReliableSpout, TopologyBuilder

WORDS = ["storm", "heron", "squall", "yarn", "spark", "stream", "tuple", "bolt"]


class Sentences(ReliableSpout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        super().initialize(config, context)
        self.i = 0
        self.every = config["ui.boom.every"]
        self.interval = 1.0 / config["ui.sentences.per.sec"]
        self.next_at = time.monotonic()

    def next_tuple(self):
        if time.monotonic() >= self.next_at:
            words = [WORDS[(self.i + k) % len(WORDS)] for k in range(4)]
            if self.every and self.i % self.every == self.every - 1:
                words.append("boom")
            self.emit([" ".join(words)], tup_id=self.i)
            self.i += 1
            self.next_at += self.interval


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word])


class Count(Bolt):
    outputs = ["word", "count"]

    def initialize(self, config, context):
        self.counts = {}

    def process(self, tup):
        word = tup["word"]
        if word == "boom":
            raise ValueError(f"cannot count {word!r}")
        self.counts[word] = self.counts.get(word, 0) + 1


builder = TopologyBuilder("ui_words")
s = builder.add_spout("sentences", Sentences, par=1)
sp = builder.add_bolt("split", Split, par=2, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", Count, par=2, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 2, "topology.reliability.mode": "ATLEAST_ONCE",
                    "topology.builtin.metrics.bucket.size.secs": 1, "ui.sentences.per.sec": 200,
                    "ui.boom.every": 50, "topology.message.timeout.secs": 5})
topology = builder.build()
