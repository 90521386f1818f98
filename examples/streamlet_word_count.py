"""Word count as streamlets: the same job as examples/word_count.py, written with operators.

The file exposes the builder; ``squall submit`` compiles it into an ordinary
topology (one spout or bolt per operator, chained where the edges allow).
A running count per word (logged at every thousandth occurrence) and the count
of each word in each 10-second window (logged as each window closes).

    squall submit examples/streamlet_word_count.py
"""
from __future__ import annotations

import operator

from squall import Builder, Window

WORDS = (
    "the quick brown fox jumps over lazy dog stream storm heron squall spark yarn "
    "tuple bolt spout grouping container packing cluster python"
).split()


SENTENCES = 200_000


def sentences():
    """The word count example's corpus."""
    for i in range(SENTENCES):
        yield " ".join(WORDS[(i * 31 + k * 17) % len(WORDS)] for k in range(3 + (i * 7) % 6))


builder = Builder("streamlet_word_count")
words = (builder.source(sentences).named("sentence")
         .flat_map(str.split).named("split").parallelism(1)
         .key_by(lambda word: word, lambda word: 1).named("word"))
(words.reduce_by_key(operator.add).named("count").parallelism(2)
    .filter(lambda pair: pair[1] % 1000 == 0).named("every_1000th").log().named("log_counts"))
(words.reduce_by_key_and_window(Window.tumbling(duration=10.0), operator.add).named("per_10s")
    .log().named("log_windows"))
builder.set_config({"topology.workers": 1})
