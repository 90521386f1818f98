"""Module-level streamlet builders for the foundation tests (operator classes are reached through them)."""
import operator

from squall import Bolt, Builder, Spout, Window


class Pairs(Spout):
    outputs = ["a", "b"]


class Store(Bolt):
    """A sink bolt, as a connector's."""


connected = Builder("connected")
(connected.source(Pairs, config={"pairs.topic": "in"}).map(lambda pair: pair[1])
    .sink(Store, config={"store.path": "/data/out"}))

word_count = Builder("wc")
(word_count.source(["a b", "b c"]).flat_map(str.split).key_by(lambda w: w, lambda w: 1)
    .reduce_by_key(operator.add).named("count").parallelism(3).sink(print))

windows = Builder()
keyed = windows.source(Pairs).key_by(lambda pair: pair[0])
keyed.reduce_by_key_and_window(Window.sliding(duration=4, every=2), operator.add).named("sums").log()
keyed.join(windows.source(range(3)).key_by(str), Window.tumbling(count=5), lambda a, b: (a, b),).log()

slow = Builder()
slow.source(range(3)).key_by(str).reduce_by_key_and_window(Window.tumbling(duration=40), operator.add)
slow.set_config({"topology.reliability.mode": "ATLEAST_ONCE"})
