"""wc_bench.py's word count (1 sentence, 2 split, 2 count tasks, fields grouping) with counts on the wire:
split emits ``[word, 1, t]`` and count adds the ones up, so the count bolt can declare ``combine`` (map-side
combining: each split task sends one partial count per word per batch). Count lines carry ``tuples`` (what
crossed the exchange into that task) besides ``words``.

This file: the tuple API, combining. wc_bench_combine_off.py: the same without ``combine``;
wc_bench_combine_batch.py and wc_bench_combine_batch_off.py: the batch API (``emit_many``,
``process_batch``), with and without.
"""
import json
import time

from squall import Grouping, TopologyBuilder

from wc_bench import TimedCount, TimedSentences, TimedSplit


class OnesSplit(TimedSplit):
    outputs = ["word", "n", "t"]

    def process(self, tup):
        t = tup.values[1]
        for word in tup.values[0].split():
            self.emit([word, 1, t])


class OnesCount(TimedCount):
    def initialize(self, config, context):
        super().initialize(config, context)
        self.tuples = 0

    def process(self, tup):
        word, n, stamp = tup.values
        self.counts[word] = self.counts.get(word, 0) + n
        self.tuples += 1
        if stamp != self.stamp:
            self.stamp = stamp
            now = time.time()
            self.samples.append((now, now - stamp))

    def process_tick(self, tup):
        line = {"at": time.time(), "words": sum(self.counts.values()), "tuples": self.tuples,
                "samples": self.samples}
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")
        self.samples = []


class CombiningCount(OnesCount):
    @staticmethod
    def combine(a, b):
        return [a[0], a[1] + b[1], a[2]]  # the first word's stamp: its latency is the partial's oldest


class BatchOnesSplit(OnesSplit):
    def process_batch(self, batch):
        self.emit_many([[word, 1, t] for sentence, t in batch.values for word in sentence.split()])


class BatchOnesCount(OnesCount):
    def process_batch(self, batch):
        counts = self.counts
        for word, n, stamp in batch.values:
            counts[word] = counts.get(word, 0) + n
            if stamp != self.stamp:
                self.stamp = stamp
                now = time.time()
                self.samples.append((now, now - stamp))
        self.tuples += len(batch.values)


class BatchCombiningCount(BatchOnesCount):
    combine = staticmethod(CombiningCount.combine)


def build(spout, split, count):
    builder = TopologyBuilder("wc_bench")
    s = builder.add_spout("sentence", spout, par=1)
    sp = builder.add_bolt("split", split, par=2, inputs={s: Grouping.SHUFFLE})
    builder.add_bolt("count", count, par=2, inputs={sp: Grouping.fields("word")})
    builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.5})
    return builder.build()


topology = build(TimedSentences, OnesSplit, CombiningCount)
