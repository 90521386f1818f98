"""Every stateless streamlet operator in one topology: clone, map, filter, union, repartition, log, sink; and
a reduction by key of (key, value) pairs, heronpy's way (no key_by)."""
import operator

from streamlet_data import Record

from squall import Builder

builder = Builder("streamlet_ops")
numbers = builder.source(range(500)).named("numbers")
doubled, odd, paired = numbers.clone(3)
doubled = doubled.map(lambda x: x * 2).named("doubled")
odd = odd.filter(lambda x: x % 2 == 1).named("odd")
merged = doubled.union(odd).named("merged").repartition(3).named("spread")
merged.sink(Record("merged")).named("out").parallelism(3)
odd.log().named("logged")
paired.map(lambda x: (x % 3, x)).reduce_by_key(operator.add).named("by_rest").sink(Record("by_rest"))
builder.set_config({"topology.workers": 1})
