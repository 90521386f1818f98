"""The word count of wc_bench.py with two tasks of each component: with ``squall.chaining: auto``
each sentence task and a split task run as one chain (shuffle, same parallelism); counting is keyed
(fields grouping), so count tasks stay processes of their own."""
from squall import Grouping, TopologyBuilder

from wc_bench import TimedCount, TimedSentences, TimedSplit

builder = TopologyBuilder("wc_bench")
s = builder.add_spout("sentence", TimedSentences, par=2)
sp = builder.add_bolt("split", TimedSplit, par=2, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", TimedCount, par=2, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.5})
topology = builder.build()
