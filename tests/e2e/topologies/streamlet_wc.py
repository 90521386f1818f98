"""Word count as streamlets: the file exposes the builder, not a topology."""
import operator

from streamlet_data import Record, lines

from squall import Builder

builder = Builder("streamlet_wc")
(builder.source(lines).named("lines").parallelism(2)
    .flat_map(str.split).named("words").parallelism(2)
    .key_by(lambda word: word, lambda word: 1).parallelism(2)
    .reduce_by_key(operator.add).named("count").parallelism(2)
    .sink(Record("counts")).parallelism(2))
builder.set_config({"topology.workers": 1})
