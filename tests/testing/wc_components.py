"""A user's word count, as a user's test module would import it (tests/testing/test_harness.py)."""
from squall import Bolt, Grouping, Spout, Stream, TopologyBuilder


class Sentences(Spout):
    outputs = ["sentence"]

    def next_tuple(self):
        self.emit(["never mocked: this must not run"])


class Split(Bolt):
    outputs = [Stream(["word"]), Stream(["length"], name="lengths")]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word])
            self.emit([len(word)], stream="lengths")


class Count(Bolt):
    outputs = ["word", "count"]

    def initialize(self, config, context):
        self.counts = {}

    def process(self, tup):
        word = tup["word"]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.emit([word, self.counts[word]])


def word_count(split_par=2, count_par=2):
    builder = TopologyBuilder("harness_wc")
    sentences = builder.add_spout("sentences", Sentences, par=2)
    split = builder.add_bolt("split", Split, par=split_par, inputs={sentences: Grouping.SHUFFLE})
    builder.add_bolt("count", Count, par=count_par, inputs={split: Grouping.fields("word")})
    return builder.build()
