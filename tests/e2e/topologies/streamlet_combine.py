"""Streamlets with map-side combining: a word count by reduce_by_key(combine=True) and per-second sums
by a processing-time windowed reduction, both fed by the same keyed words (so both get the same partials)."""
import operator

from streamlet_data import Record, lines

from squall import Builder, Window

builder = Builder("streamlet_combine")
words = (builder.source(lines).named("lines")
         .flat_map(str.split).named("words").parallelism(2)
         .key_by(lambda word: word, lambda word: 1).named("ones").parallelism(2))
words.reduce_by_key(operator.add, combine=True).named("count").parallelism(2).sink(Record("counts"))
(words.reduce_by_key_and_window(Window.tumbling(duration=1.0), operator.add).named("per_second").parallelism(2)
    .sink(Record("windows")))
builder.set_config({"topology.workers": 1, "topology.builtin.metrics.bucket.size.secs": 1.0})
