"""wc_bench_batch.py's word count written with columns (``emit_columns``, ``batch.columns``): the spout
emits its 100 sentences as two columns (sentences, stamps), split emits each batch's words as one
column (``[words]``), count counts it with ``Counter.update`` (no latency samples: words carry no
stamp). No list a tuple anywhere, in a chain or across
processes. One task each: chained (``squall.chaining: auto``, 0.3 cpu each) the whole word count
runs in one process, columns handed on a call."""
import time
from collections import Counter

from squall import Bolt, Grouping, TopologyBuilder

from wc_bench import TimedCount, TimedSentences


class ColumnSentences(TimedSentences):
    def next_tuple(self):
        if not self.due():
            return
        now = time.time()
        start = self.i % 1000
        sentences = self.sentences[start:start + 100]  # 1000 is a multiple of 100: never cut
        if self.reliable:
            self.sampled[self.i] = now
            self.emit_columns([sentences, [now] * 100], tup_ids=list(range(self.i, self.i + 100)))
        else:
            self.emit_columns([sentences, [now] * 100])
        self.i += 100


class ColumnSplit(Bolt):
    outputs = ["word"]

    def process_batch(self, batch):
        self.emit_columns([" ".join(batch.columns[0]).split()])


class ColumnCount(TimedCount):
    """Counts words with ``Counter.update`` of their column. Words carry no stamp (the user's word count
    has none, and a column of stamps costs about a third of the exchange): no latency samples."""

    def initialize(self, config, context):
        super().initialize(config, context)
        self.counts = Counter()

    def process_batch(self, batch):
        self.counts.update(batch.columns[0])


def build(split: int, count: int):
    """The columnar word count with ``split`` split and ``count`` count tasks."""
    builder = TopologyBuilder("wc_bench")
    s = builder.add_spout("sentence", ColumnSentences, par=1)
    sp = builder.add_bolt("split", ColumnSplit, par=split, inputs={s: Grouping.SHUFFLE})
    builder.add_bolt("count", ColumnCount, par=count, inputs={sp: Grouping.fields("word")})
    builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.5})
    return builder.build()


topology = build(1, 1)
