"""Every stateless streamlet operator in one topology: clone, map, filter, union, repartition, log, sink."""
from streamlet_data import Record

from squall import Builder

builder = Builder("streamlet_ops")
numbers = builder.source(range(500)).named("numbers")
doubled, odd = numbers.clone(2)
doubled = doubled.map(lambda x: x * 2).named("doubled")
odd = odd.filter(lambda x: x % 2 == 1).named("odd")
merged = doubled.union(odd).named("merged").repartition(3).named("spread")
merged.sink(Record("merged")).named("out").parallelism(3)
odd.log().named("logged")
builder.set_config({"topology.workers": 1})
