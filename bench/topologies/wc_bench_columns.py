"""wc_bench_batch.py's word count written with columns (``emit_columns``, ``batch.columns``): the spout
emits its 100 sentences as two columns (sentences, stamps), split emits each batch's words as one
column, count counts it with ``Counter.update``. No list a tuple anywhere, in a chain or across
processes. One task each: chained (``squall.chaining: auto``, 0.3 cpu each) the whole word count
runs in one process, columns handed on a call."""
import time
from collections import Counter

from squall import Bolt, Grouping, Stream, TopologyBuilder

from wc_bench import TimedCount, TimedSentences


class ColumnSentences(TimedSentences):
    def next_tuple(self):
        if self.interval:
            if time.monotonic() < self.next_at:
                return
            self.next_at += self.interval
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
    """Emits a batch's words as one column, and its last sentence's stamp once on ``stamps`` (to every
    count task): the latency sample of the words emitted with it, without a stamp a word."""

    outputs = [Stream(["word"]), Stream(["t"], name="stamps")]

    def process_batch(self, batch):
        sentences, stamps = batch.columns
        self.emit_columns([" ".join(sentences).split()])
        self.emit([stamps[-1]], stream="stamps")


class ColumnCount(TimedCount):
    def initialize(self, config, context):
        super().initialize(config, context)
        self.counts = Counter()

    def process_batch(self, batch):
        if batch.stream == "stamps":
            now = time.time()
            self.samples.append((now, now - batch.columns[0][-1]))
        else:
            self.counts.update(batch.columns[0])


def build(split: int, count: int):
    """The columnar word count with ``split`` split and ``count`` count tasks."""
    builder = TopologyBuilder("wc_bench")
    s = builder.add_spout("sentence", ColumnSentences, par=1)
    sp = builder.add_bolt("split", ColumnSplit, par=split, inputs={s: Grouping.SHUFFLE})
    builder.add_bolt("count", ColumnCount, par=count, inputs={sp: Grouping.fields("word"),
                                                              sp["stamps"]: Grouping.ALL})
    builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.5})
    return builder.build()


topology = build(1, 1)
