"""The word count of state_wc.py with plain components, for bench/state.py's baselines.

sentences (a plain ``Spout``, par 1: the same table and bursts; at
ATLEAST_ONCE every sentence carries its index as its id, and a failed one is
emitted again) -> split (the same class) -> count (a plain ``Bolt`` counting
in a dict, fields on the word, par 2). Nothing in it is stateful, so below
EFFECTIVELY_ONCE the topology runs no checkpoints. Its count tasks write the
same ``counted-<task>.jsonl`` lines as state_wc.py's (no committed output).
"""
from squall import Bolt, Grouping, Spout, TopologyBuilder

from state_wc import BURST, SENTENCES, Reports, Split, sentences


class PlainSentences(Spout):
    outputs = ["sentence"]

    def initialize(self, config, context):
        self.table = sentences(config.get("bench.words", 10_000))
        self.i = 0
        self.reliable = config["topology.reliability.mode"] == "ATLEAST_ONCE"
        self.failed = []  # indexes to emit again

    def next_tuple(self):
        table, i = self.table, self.i
        if not self.reliable:
            for n in range(i, i + BURST):
                self.emit([table[n % SENTENCES]])
        else:
            again, self.failed = self.failed[:BURST], self.failed[BURST:]
            for n in again:
                self.emit([table[n % SENTENCES]], tup_id=n)
            for n in range(i, i + BURST - len(again)):
                self.emit([table[n % SENTENCES]], tup_id=n)
            i -= len(again)
        self.i = i + BURST

    def fail(self, tup_id):
        self.failed.append(tup_id)


class PlainCount(Bolt):
    def initialize(self, config, context):
        self.reports = Reports(config, context)
        self.counts = {}

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1

    def process_tick(self, tup):
        self.reports.count(sum(self.counts.values()))


builder = TopologyBuilder("state_wc")
s = builder.add_spout("sentences", PlainSentences, par=1)
sp = builder.add_bolt("split", Split, par=2, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", PlainCount, par=2, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.1, "squall.chaining": "off"})
topology = builder.build()
