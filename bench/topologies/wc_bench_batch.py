"""wc_bench.py's word count written with the batch API: the spout emits its 100 sentences with one
``emit_many``, split takes its input with ``process_batch`` and emits all its words with one
``emit_many``, count takes them with ``process_batch``. One task each: chained
(``squall.chaining: auto``, 0.3 cpu each) the whole word count runs in one process, a batch handed on a call."""
import time

from squall import Grouping, TopologyBuilder

from wc_bench import TimedCount, TimedSentences, TimedSplit


class BatchSentences(TimedSentences):
    def next_tuple(self):
        if not self.due():
            return
        now = time.time()
        values = [[self.sentences[(self.i + k) % 1000], now] for k in range(100)]
        if self.reliable:
            self.sampled[self.i] = now
            self.emit_many(values, tup_ids=list(range(self.i, self.i + 100)))
        else:
            self.emit_many(values)
        self.i += 100


class BatchSplit(TimedSplit):
    def process_batch(self, batch):
        self.emit_many([[word, t] for sentence, t in batch.values for word in sentence.split()])


class BatchCount(TimedCount):
    def process_batch(self, batch):
        counts = self.counts
        for word, stamp in batch.values:
            counts[word] = counts.get(word, 0) + 1
            if stamp != self.stamp:
                self.stamp = stamp
                now = time.time()
                self.samples.append((now, now - stamp))


builder = TopologyBuilder("wc_bench")
s = builder.add_spout("sentence", BatchSentences, par=1)
sp = builder.add_bolt("split", BatchSplit, par=1, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", BatchCount, par=1, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.5})
topology = builder.build()
