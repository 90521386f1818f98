"""wc_bench_batch.py's batch-API word count in the shape of wc_bench.py: one sentence, two split
and two count tasks. Counting is keyed (fields grouping), so with ``squall.chaining: auto`` every
word crosses processes to its count task: the keyed exchange ``bench/exchange.py`` measures."""
from squall import Grouping, TopologyBuilder

from wc_bench_batch import BatchCount, BatchSentences, BatchSplit

builder = TopologyBuilder("wc_bench")
s = builder.add_spout("sentence", BatchSentences, par=1)
sp = builder.add_bolt("split", BatchSplit, par=2, inputs={s: Grouping.SHUFFLE})
builder.add_bolt("count", BatchCount, par=2, inputs={sp: Grouping.fields("word")})
builder.set_config({"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.5})
topology = builder.build()
