"""The word count of wc_bench.py with one task per component: with ``squall.chaining: auto`` and
requests within one core together (bench/chaining.py gives 0.3 cpu each) the three run as one chain,
in one process (every edge has one task to go to)."""
from squall import Grouping, TopologyBuilder

from wc_bench import TimedCount, TimedSentences, TimedSplit

builder = TopologyBuilder("wc_bench")
s = builder.add_spout("sentence", TimedSentences, par=1)
sp = builder.add_bolt("split", TimedSplit, par=1, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", TimedCount, par=1, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.5})
topology = builder.build()
